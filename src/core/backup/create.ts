/**
 * `resd backup`: one archive holding a consistent snapshot of a live site. Layout inside the tar:
 *
 *   resd-backup.json    manifest (format, resd version, time, whether secrets are included)
 *   data/resd.db        the database as of the snapshot (VACUUM INTO; the server keeps writing)
 *   .env                only with `secrets: true` (token signing key, AI key)
 *   resources/…  ext/…  definitions and extension files
 *   data/files/…        uploaded file content (not the resized-image cache: it is made again)
 *
 * The database is copied first and the file store after it: every file a backed-up record refers to
 * was stored before that record committed, so it is in the archive too.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, openSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { version } from "../../build/version";
import { snapshotDatabase } from "../store/snapshot";
import { writeTar, type TarEntry } from "./tar";

export const MANIFEST = "resd-backup.json";
export const FORMAT = "resd-backup";

export type BackupStats = { files: number; bytes: number; databaseBytes: number; secrets: boolean };

function fileEntry(abs: string, path: string, mode?: number): TarEntry {
  const st = statSync(abs);
  return {
    path,
    size: st.size,
    mtime: st.mtimeMs / 1000,
    mode: mode ?? st.mode,
    body: () => Bun.file(abs).stream() as unknown as AsyncIterable<Uint8Array>,
  };
}

/** Regular files below `root`, relative paths with `/`; symlinks and sockets are not site content. */
function* walk(root: string, rel = ""): Generator<string> {
  const here = join(root, rel);
  if (!existsSync(here)) return;
  for (const d of readdirSync(here, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const child = rel ? `${rel}/${d.name}` : d.name;
    if (d.isDirectory()) yield* walk(root, child);
    else if (d.isFile()) yield child;
  }
}

/** Streams the archive of site `dir` into `write` (gzip-compressed when asked). */
export async function writeBackup(
  dir: string,
  write: (chunk: Uint8Array) => Promise<void> | void,
  opts: { secrets: boolean; gzip: boolean },
): Promise<BackupStats> {
  const db = join(dir, "data", "resd.db");
  // Next to the database: same file system, and writable wherever the server can write.
  const snap = join(dir, "data", `.backup-${randomBytes(6).toString("hex")}.db`);
  const stats: BackupStats = { files: 0, bytes: 0, databaseBytes: 0, secrets: opts.secrets };
  try {
    snapshotDatabase(db, snap);
    stats.databaseBytes = statSync(snap).size;
    const manifest = JSON.stringify({ format: FORMAT, version: 1, resd: version, created: new Date().toISOString(), secrets: opts.secrets }, null, 2);
    const entries = function* (): Generator<TarEntry> {
      const m = new TextEncoder().encode(`${manifest}\n`);
      yield { path: MANIFEST, size: m.length, mtime: Date.now() / 1000, mode: 0o644, body: async function* () { yield m; } };
      yield fileEntry(snap, "data/resd.db", 0o600);
      if (opts.secrets && existsSync(join(dir, ".env"))) yield fileEntry(join(dir, ".env"), ".env", 0o600);
      for (const top of ["resources", "ext", "data/files"]) {
        for (const rel of walk(join(dir, top))) {
          // Resized images are made again on demand, and .tmp holds writes in progress.
          if (top === "data/files" && /^(cache|\.tmp)\//.test(rel)) continue;
          stats.files++;
          yield fileEntry(join(dir, top, rel), `${top}/${rel}`);
        }
      }
    };
    let out: AsyncIterable<Uint8Array> = writeTar(entries());
    if (opts.gzip) out = toStream(out).pipeThrough(new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>) as unknown as AsyncIterable<Uint8Array>;
    for await (const chunk of out) {
      stats.bytes += chunk.length;
      await write(chunk);
    }
    return stats;
  } finally {
    rmSync(snap, { force: true });
  }
}

function toStream(it: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const src = it[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const r = await src.next();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    async cancel() {
      await src.return?.();
    },
  });
}

/** Writes the archive to `file` through a temporary name, so a failed backup never looks finished. */
export async function writeBackupFile(dir: string, file: string, opts: { secrets: boolean }): Promise<BackupStats> {
  const partial = `${file}.partial`;
  // The archive holds password hashes (and with --with-secrets the signing key): owner only, from the first byte.
  closeSync(openSync(partial, "w", 0o600));
  chmodSync(partial, 0o600);
  const sink = Bun.file(partial).writer({ highWaterMark: 1024 * 1024 });
  try {
    const stats = await writeBackup(dir, (c) => void sink.write(c), { ...opts, gzip: /\.(t?gz)$/i.test(file) });
    await sink.end();
    renameSync(partial, file);
    return stats;
  } catch (e) {
    await sink.end();
    rmSync(partial, { force: true });
    throw e;
  }
}
