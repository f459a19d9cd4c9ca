/**
 * `resd restore`: unpacks a `resd backup` archive into a site directory. Everything is extracted
 * into a temporary folder beside DIR and checked (manifest, database integrity) before anything in
 * DIR changes, so a damaged archive leaves DIR as it was.
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { runningServers } from "../pidfile";
import { AppError } from "../errors";
import { checkDatabase } from "../store/snapshot";
import { FORMAT, MANIFEST } from "./create";
import { readTar } from "./tar";

/** What a backup may contain; anything else in an archive is refused rather than written. */
const ALLOWED = /^(resd-backup\.json|\.env|data\/resd\.db|data\/files\/.+|resources\/.+|ext\/.+)$/;
/** The parts of a site a restore replaces (with --force). */
const PARTS = ["data", "resources", "ext"];

export type RestoreStats = { files: number; secrets: boolean; created: string; resd: string };

function safePath(path: string): string {
  const p = path.replace(/^\.\//, "");
  if (!ALLOWED.test(p) || p.split("/").some((s) => s === ".." || s === "." || s === "") || p.includes("\0")) {
    throw new AppError(400, "INVALID_DATA", `the archive holds an unexpected entry ${JSON.stringify(path)}; not a resd backup`);
  }
  return p;
}

const isEmptyDir = (dir: string) => !existsSync(dir) || readdirSync(dir).length === 0;

/** The archive's bytes, gunzipped when they start with the gzip magic number. */
async function* archiveBytes(source: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = source.getReader();
  const first = await reader.read();
  if (first.done) throw new AppError(400, "INVALID_DATA", "the backup file is empty");
  const head = first.value;
  const rest = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
    },
    async pull(c) {
      const r = await reader.read();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
  });
  const gz = head[0] === 0x1f && head[1] === 0x8b;
  const bytes = gz ? rest.pipeThrough(new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>) : rest;
  yield* bytes as unknown as AsyncIterable<Uint8Array>;
}

async function extract(source: ReadableStream<Uint8Array>, into: string): Promise<RestoreStats> {
  let manifest: { format?: string; secrets?: boolean; created?: string; resd?: string } | null = null;
  let files = 0;
  let secrets = false;
  for await (const entry of readTar(archiveBytes(source))) {
    const path = safePath(entry.path);
    if (!manifest && path !== MANIFEST) throw new AppError(400, "INVALID_DATA", "not a resd backup (the archive does not start with resd-backup.json)");
    const target = join(into, path);
    // data/ holds password hashes and uploads, .env the secrets: the owner's only from the first byte.
    const owners = path === ".env" || path.startsWith("data/");
    mkdirSync(dirname(target), { recursive: true, mode: owners ? 0o700 : 0o755 });
    if (owners) closeSync(openSync(target, "w", 0o600));
    const sink = Bun.file(target).writer({ highWaterMark: 1024 * 1024 });
    for await (const chunk of entry.body) sink.write(chunk);
    await sink.end();
    if (path === MANIFEST) {
      manifest = await Bun.file(target).json().catch(() => null);
      if (manifest?.format !== FORMAT) throw new AppError(400, "INVALID_DATA", "not a resd backup (unknown manifest)");
    } else if (path === ".env") {
      secrets = true;
    } else if (path !== "data/resd.db") files++;
  }
  if (!manifest) throw new AppError(400, "INVALID_DATA", "not a resd backup (no manifest)");
  const db = join(into, "data", "resd.db");
  if (!existsSync(db)) throw new AppError(400, "INVALID_DATA", "the backup holds no database");
  const check = checkDatabase(db);
  if (check !== "ok") throw new AppError(400, "INVALID_DATA", `the backup's database is damaged: ${check}`);
  rmSync(join(into, MANIFEST));
  return { files, secrets, created: manifest.created ?? "", resd: manifest.resd ?? "" };
}

/**
 * Restores `source` into `dir`. A non-empty `dir` is refused unless `force`; then its data/,
 * resources/ and ext/ are replaced, and its .env only when the backup carries one (so a restore
 * over the same site keeps the signing key it has).
 */
export async function restoreBackup(source: ReadableStream<Uint8Array>, dir: string, opts: { force: boolean }): Promise<RestoreStats> {
  const target = resolve(dir);
  const servers = runningServers(target);
  if (servers.length) {
    throw new AppError(409, "RESOURCE_EXISTS", `a resd server (PID ${servers.join(", ")}) is using ${target}; stop it first — it keeps the old database open and would lose every write it accepts after the restore`);
  }
  if (!opts.force && !isEmptyDir(target)) {
    throw new AppError(409, "RESOURCE_EXISTS", `${target} is not empty; restore into an empty directory, or pass --force to replace its site`);
  }
  mkdirSync(dirname(target), { recursive: true });
  const tmp = mkdtempSync(join(dirname(target), `.${basename(target)}.restore-`));
  try {
    const stats = await extract(source, tmp);
    mkdirSync(target, { recursive: true });
    for (const part of [...PARTS, ...(stats.secrets ? [".env"] : [])]) rmSync(join(target, part), { recursive: true, force: true });
    for (const name of readdirSync(tmp)) renameSync(join(tmp, name), join(target, name));
    return stats;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
