import type { Command } from "commander";
import { join } from "node:path";
import { AppError } from "../src/core/errors";
import { LocalBlobStore, type BlobStore } from "../src/core/files/blob-store";
import { filesOf } from "../src/core/files/context";
import { moveFiles } from "../src/core/files/move";
import { S3BlobStore } from "../src/core/files/s3-blob-store";
import { runningServers } from "../src/core/pidfile";
import type { Site } from "../src/core/site";
import { action, withSite } from "./common";

type Opts = { dir?: string; json?: boolean; filesTo?: string };

export function registerMigrate(program: Command) {
  program
    .command("migrate")
    .description("bring the database schema and indexes up to date with the definitions; --files-to copies the uploaded files to another store")
    .option("--dir <dir>", "site directory")
    .option("--json", "print the changes as JSON")
    .option("--files-to <target>", "copy every uploaded file to s3://bucket/prefix, or back to `local` (DIR/data/files), each checked by its MD5; all or nothing")
    .action(action(async (opts: Opts) => {
      if (opts.filesTo !== undefined) return withSite(opts, (site) => moveTo(site, opts.filesTo!, opts));
      // Opening a site syncs tables and indexes with the definitions; report what that changed.
      const changes = await withSite(opts, async (site) => site.schemaChanges);
      if (opts.json) console.log(JSON.stringify({ ok: true, changes }));
      else console.log(changes.length ? changes.map((c) => `${c.resource}: ${c.action} ${c.detail}`).join("\n") : "schema up to date");
    }));
}

async function moveTo(site: Site, target: string, opts: Opts): Promise<void> {
  const from = filesOf(site).blobs;
  const here = site.config.filesUrl || "local";
  if (target !== "local" && !/^s3:\/\//.test(target)) throw new AppError(400, "INVALID_DATA", `--files-to takes s3://bucket/prefix or local, not ${target}`);
  if (target === here) throw new AppError(400, "INVALID_DATA", `the files are already in ${here === "local" ? "DIR/data/files" : here}`);
  const servers = runningServers(site.config.dir);
  // Uploads accepted meanwhile would be missed: the copy is of a site at rest.
  if (servers.length) throw new AppError(409, "RESOURCE_EXISTS", `a resd server (PID ${servers.join(", ")}) is using ${site.config.dir}; stop it first`);
  const to: BlobStore = target === "local"
    ? new LocalBlobStore(join(site.config.dir, "data", "files"))
    : new S3BlobStore(target, join(site.config.dir, "data", "files", ".tmp"));
  await from.check();
  await to.check();
  const tty = process.stderr.isTTY;
  const stats = await moveFiles(from, to, tty ? (p) => process.stderr.write(`\rfiles ${p.done}/${p.total}`) : undefined);
  if (tty) process.stderr.write("\n");
  const next = target === "local" ? "start resd without RESD_FILES_URL" : `start resd with RESD_FILES_URL=${target} (or --files-url ${target})`;
  if (opts.json) console.log(JSON.stringify({ ok: true, from: here, to: target, ...stats }));
  else console.log(`copied ${stats.copied} files to ${target} (${stats.present} were there already; ${stats.files} files, ${stats.bytes} bytes, each checked by its MD5); now ${next}. The source was left as it was.`);
}
