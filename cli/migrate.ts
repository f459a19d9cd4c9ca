import type { Command } from "commander";
import { join } from "node:path";
import { AppError } from "../src/core/errors";
import { maskUrl } from "../src/core/config";
import { LocalBlobStore, type BlobStore } from "../src/core/files/blob-store";
import { filesOf } from "../src/core/files/context";
import { moveFiles } from "../src/core/files/move";
import { S3BlobStore } from "../src/core/files/s3-blob-store";
import { runningServers } from "../src/core/pidfile";
import { openStore } from "../src/core/open-site";
import type { Site } from "../src/core/site";
import { moveStore } from "../src/core/store/move";
import { postgresTargetContents, sqliteTargetContents } from "../src/core/store/target";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean; filesTo?: string; to?: string; rollback?: boolean };

export function registerMigrate(program: Command) {
  program
    .command("migrate")
    .description("bring the database schema and indexes up to date with the definitions; --to copies the site's database to PostgreSQL (or back), --files-to its uploaded files to a bucket (or back)")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the changes as JSON")
    .option("--to <database>", "copy records (users and roles too), history and queued jobs into an empty postgres://user:password@host:port/database, or back into `sqlite` (DIR/data/resd.db); read back and compared; all or nothing")
    .option("--rollback", "make this folder's definitions the stored schema even where the database holds a newer version (PostgreSQL sites with several instances)")
    .option("--files-to <target>", "copy every uploaded file to s3://bucket/prefix, or back to `local` (DIR/data/files), each checked by its MD5; all or nothing")
    .action(action(async (opts: Opts) => {
      if (opts.to !== undefined || opts.filesTo !== undefined) {
        return withSite(opts, async (site) => {
          await refuseWhileServed(site);
          // Files first: a copy into a bucket nobody uses yet is harmless if the database copy then fails.
          const files = opts.filesTo !== undefined ? await moveFilesTo(site, opts.filesTo, opts) : undefined;
          const database = opts.to !== undefined ? await moveDatabaseTo(site, opts.to, opts) : undefined;
          // --files-to alone keeps the answer it always had.
          if (opts.json) console.log(JSON.stringify(database ? { ok: true, database, ...(files ? { files } : {}) } : { ok: true, ...files }));
        });
      }
      // Opening a site syncs tables and indexes with the definitions; report what that changed.
      const changes = await withSite(opts, async (site) => site.schemaChanges, {}, { rollback: Boolean(opts.rollback) });
      const refused = changes.filter((c) => c.action === "refused");
      if (opts.json) console.log(JSON.stringify({ ok: refused.length === 0, changes }));
      else console.log(changes.length ? changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("\n") : "schema up to date");
      if (refused.length) {
        throw new AppError(409, "RESOURCE_EXISTS", `${refused.map((c) => c.resource).join(", ")}: the database holds a newer schema than this folder's definitions; update them, or make them the newest version with resd migrate --rollback`);
      }
    }));
}

/** Writes accepted meanwhile would be missed: a copy is of a site at rest (on every instance). */
async function refuseWhileServed(site: Site) {
  const servers = runningServers(site.config.dir);
  if (servers.length) throw new AppError(409, "RESOURCE_EXISTS", `a resd server (PID ${servers.join(", ")}) is using ${site.config.dir}; stop it first`);
  const others = await site.store.otherProcesses();
  if (others.length) throw new AppError(409, "RESOURCE_EXISTS", `other resd processes are using this site's database (${others.slice(0, 3).join(", ")}${others.length > 3 ? ", …" : ""}: host/PID); stop them first`);
}

const progressLine = (text: string) => process.stderr.write(`\r\x1b[K${text}`);

async function moveDatabaseTo(site: Site, target: string, opts: Opts) {
  const toPostgres = /^postgres(ql)?:\/\/./.test(target);
  if (!toPostgres && target !== "sqlite") throw new AppError(400, "INVALID_DATA", `--to takes postgres://user:password@host:port/database or sqlite, not ${maskUrl(target)}`);
  const here = site.config.databaseUrl || "sqlite";
  if (target === here) throw new AppError(400, "INVALID_DATA", `the site is already in ${toPostgres ? maskUrl(target) : "DIR/data/resd.db"}`);
  const file = join(site.config.dir, "data", "resd.db");
  const shown = toPostgres ? maskUrl(target) : file;
  // Looked at before anything is made there: a target that holds something is left as it is.
  const held = toPostgres ? await postgresTargetContents(target).catch((e) => Promise.reject(new Error(`cannot use the database at ${shown}: ${(e as Error).message}`)))
    : await sqliteTargetContents(file);
  if (held) {
    throw new AppError(409, "RESOURCE_EXISTS", `${shown} is not empty: ${held}. resd migrate --to copies into an empty database only${toPostgres ? "" : "; move that file aside first"}`);
  }
  const to = await openStore({ ...site.config, databaseUrl: toPostgres ? target : "", readWorkers: 0 });
  const tty = process.stderr.isTTY;
  try {
    const show = (p: { resource: string; done: number; total: number }) =>
      progressLine(p.resource === "comparing" ? "reading the copy back and comparing…" : `${p.resource} ${p.done.toLocaleString("en")}/${p.total.toLocaleString("en")}`);
    const stats = await moveStore(site.store, to, site.defs.values(), tty ? show : undefined);
    if (tty) process.stderr.write("\r\x1b[K");
    const next = toPostgres ? `start resd with RESD_DATABASE_URL=${shown} (or --database-url)` : "start resd without RESD_DATABASE_URL";
    if (!opts.json) {
      for (const r of stats.resources) console.error(`  ${r.name}: ${r.records} records`);
      console.log(`copied ${stats.records} records of ${stats.resources.length} resources, ${stats.history} history entries and ${stats.jobs} queued jobs to ${shown}, ` +
        `each read back and compared; now ${next}. The source was left as it was.${stats.deadJobsLeft ? ` ${stats.deadJobsLeft} dead jobs were not copied (resd jobs list --state dead).` : ""}`);
    }
    return { from: here === "sqlite" ? "sqlite" : maskUrl(here), to: toPostgres ? shown : "sqlite", ...stats };
  } finally {
    await to.close();
  }
}

async function moveFilesTo(site: Site, target: string, opts: Opts) {
  const from = filesOf(site).blobs;
  const here = site.config.filesUrl || "local";
  if (target !== "local" && !/^s3:\/\//.test(target)) throw new AppError(400, "INVALID_DATA", `--files-to takes s3://bucket/prefix or local, not ${target}`);
  if (target === here) throw new AppError(400, "INVALID_DATA", `the files are already in ${here === "local" ? "DIR/data/files" : here}`);
  const to: BlobStore = target === "local"
    ? new LocalBlobStore(join(site.config.dir, "data", "files"))
    : new S3BlobStore(target, join(site.config.dir, "data", "files", ".tmp"));
  await from.check();
  await to.check();
  const tty = process.stderr.isTTY;
  const stats = await moveFiles(from, to, tty ? (p) => progressLine(`files ${p.done}/${p.total}`) : undefined);
  if (tty) process.stderr.write("\r\x1b[K");
  const next = target === "local" ? "start resd without RESD_FILES_URL" : `start resd with RESD_FILES_URL=${target} (or --files-url ${target})`;
  if (!opts.json) console.log(`copied ${stats.copied} files to ${target} (${stats.present} were there already; ${stats.files} files, ${stats.bytes} bytes, each checked by its MD5); now ${next}. The source was left as it was.`);
  return { from: here, to: target, ...stats };
}
