/**
 * Runtime half of the sharp embedding done by `src/build/sharp-embed-plugin.ts`.
 *
 * This module is only ever bundled into a `bun build --compile` executable: the
 * plugin replaces sharp's binding loader (`sharp/dist/sharp.{mjs,cjs}`) with a
 * small generated module that imports the native files with
 * `with { type: "file" }` (so they are stored inside the executable under
 * `/$bunfs/...`) and calls {@link loadEmbeddedNative}. When the app runs from
 * source (`bun cli/main.ts`) nothing imports this file and sharp loads its
 * binding from node_modules as usual.
 *
 * What it does, synchronously (sharp loads its binding synchronously):
 *  1. picks a cache folder: `$RESD_NATIVE_CACHE_DIR/<key>`, else
 *     `$XDG_CACHE_HOME/resd/<key>`, else `~/.cache/resd/<key>`, else
 *     `<os.tmpdir()>/resd-<uid>/<key>`, else a fresh `mkdtemp` folder;
 *  2. writes each embedded file there under its original relative layout
 *     (`sharp-linux-x64/lib/sharp-linux-x64-<v>.node` and
 *     `sharp-libvips-linux-x64/lib/libvips-cpp.so.<v>`, so the binding's
 *     RPATH `$ORIGIN/../../sharp-libvips-linux-x64/lib` finds libvips) unless a
 *     file with the same size and SHA-256 is already there; writes go to a
 *     temp file in the same folder followed by `rename`, so concurrent first
 *     runs and crashes never leave a half-written library behind;
 *  3. `process.dlopen`s the binding and returns its exports.
 * If extraction or loading fails in one folder (read-only home, `noexec`
 * mount, ...) the next candidate is tried.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";

export interface EmbeddedNativeFile {
  /** Path returned by `import x from "..." with { type: "file" }` (a `/$bunfs/...` path when compiled). */
  embedded: string;
  /** Path relative to the cache folder, e.g. `sharp-linux-x64/lib/sharp-linux-x64-0.35.5.node`. */
  rel: string;
  /** Hex SHA-256 of the file, computed at build time. */
  sha256: string;
  /** Size in bytes, computed at build time (cheap first check before hashing). */
  size: number;
}

export interface EmbeddedNativeSpec {
  /** Human name used in error messages, e.g. `sharp`. */
  name: string;
  /** Cache sub-folder name; changes whenever any embedded file changes. */
  key: string;
  /** `${process.platform}-${process.arch}` the files were built for, e.g. `linux-x64`. */
  platform: string;
  /** Relative path (one of `files[].rel`) of the `.node` file to load. */
  binding: string;
  files: EmbeddedNativeFile[];
}

export interface LoadResult<T = unknown> {
  exports: T;
  /** Folder the files were extracted to. */
  dir: string;
  /** Relative paths of files written during this call (empty when the cache was already valid). */
  written: string[];
}

const CACHE_APP = "resd";

/** Candidate cache roots, most preferred first; each gets `<key>` appended. */
function candidateRoots(): string[] {
  const roots: string[] = [];
  const override = process.env.RESD_NATIVE_CACHE_DIR;
  if (override && isAbsolute(override)) roots.push(override);
  const xdg = process.env.XDG_CACHE_HOME;
  // The XDG spec says relative values must be ignored.
  if (xdg && isAbsolute(xdg)) roots.push(join(xdg, CACHE_APP));
  let home = "";
  try {
    home = process.env.HOME || homedir();
  } catch {
    // no home directory known
  }
  if (home && isAbsolute(home)) roots.push(join(home, ".cache", CACHE_APP));
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  roots.push(join(tmpdir(), uid === undefined ? CACHE_APP : `${CACHE_APP}-${uid}`));
  return [...new Set(roots)];
}

/**
 * A shared folder such as /tmp could be pre-created by another user; refuse to
 * load code from a folder we do not own or that others can write to.
 */
function assertPrivateDir(dir: string): void {
  if (typeof process.getuid !== "function") return;
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (st.uid !== process.getuid()) throw new Error(`${dir} is owned by another user`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} is writable by other users`);
}

function sha256OfFile(path: string): string {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      hash.update(n === buf.length ? buf : buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

function isValid(path: string, file: EmbeddedNativeFile): boolean {
  try {
    const st = statSync(path);
    if (!st.isFile() || st.size !== file.size) return false;
    return sha256OfFile(path) === file.sha256;
  } catch {
    return false;
  }
}

/** Write `data` to `path` atomically: temp file in the same folder, then rename. */
function writeAtomic(path: string, data: Uint8Array): void {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const fd = openSync(tmp, "wx", 0o755);
    try {
      writeFileSync(fd, data);
      if (fstatSync(fd).size !== data.byteLength) throw new Error(`short write to ${tmp}`);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Make sure every file of `spec` exists in `dir` with the right hash; returns the files (re)written. */
export function extractEmbeddedFiles(spec: EmbeddedNativeSpec, dir: string): string[] {
  const written: string[] = [];
  for (const file of spec.files) {
    const target = join(dir, file.rel);
    if (isValid(target, file)) continue;
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    const data = readFileSync(file.embedded);
    const got = createHash("sha256").update(data).digest("hex");
    if (got !== file.sha256) {
      throw new Error(`embedded ${file.rel} is corrupt (sha256 ${got}, expected ${file.sha256})`);
    }
    writeAtomic(target, data);
    written.push(file.rel);
  }
  return written;
}

function dlopen<T>(path: string): T {
  const mod = { exports: {} as T };
  process.dlopen(mod, path);
  return mod.exports;
}

/** Extract (if needed) and load the embedded native binding described by `spec`. */
export function loadEmbeddedNative<T = unknown>(spec: EmbeddedNativeSpec): LoadResult<T> {
  const runtime = `${process.platform}-${process.arch}`;
  if (runtime !== spec.platform.replace("linuxmusl-", "linux-")) {
    throw new Error(
      `This executable embeds ${spec.name} for ${spec.platform} but is running on ${runtime}; ` +
        `build it with the matching target.`,
    );
  }

  const errors: string[] = [];
  const tryDir = (dir: string, checkPrivate: boolean): LoadResult<T> | undefined => {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (checkPrivate) assertPrivateDir(dirname(dir));
      const written = extractEmbeddedFiles(spec, dir);
      const exports = dlopen<T>(join(dir, spec.binding));
      return { exports, dir, written };
    } catch (err) {
      errors.push(`${dir}: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };

  const roots = candidateRoots();
  for (const [i, root] of roots.entries()) {
    // The last candidate lives in the shared temp folder: check ownership/permissions.
    const res = tryDir(join(root, spec.key), i === roots.length - 1);
    if (res) return res;
  }
  // Last resort: a private, uncached folder.
  try {
    const fresh = mkdtempSync(join(tmpdir(), `${CACHE_APP}-${spec.key}-`));
    const res = tryDir(fresh, false);
    if (res) return res;
  } catch (err) {
    errors.push(`mkdtemp: ${err instanceof Error ? err.message : String(err)}`);
  }
  throw new Error(
    `Could not load the embedded "${spec.name}" native module (${spec.platform}).\n` +
      errors.map((e) => `- ${e}`).join("\n") +
      `\nSet RESD_NATIVE_CACHE_DIR to a writable folder on a filesystem that allows executing code.`,
  );
}
