/**
 * The blob-store seam (DESIGN.md "Seams"): file content and resized copies go through this
 * interface, never straight to the filesystem, so an object store can replace local disk later.
 * Keys are relative paths of safe segments ("ab/ab12…", "cache/ab12…/800w.webp").
 */
import { mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../errors";

/** A blob being written whose key is only known at the end (content addressing). */
export interface BlobWriter {
  write(chunk: Uint8Array): Promise<void>;
  /** Makes the content visible under `key` atomically (all or nothing). */
  commit(key: string): Promise<void>;
  /** Drops what was written; safe to call twice or after commit. */
  abort(): Promise<void>;
}

export type BlobInfo = { size: number; mtimeMs: number };

export interface BlobStore {
  /** Starts a write; the content stays invisible until `commit`. */
  writer(): Promise<BlobWriter>;
  /** Writes a whole value (or stream) under a key atomically. */
  put(key: string, body: Uint8Array | AsyncIterable<Uint8Array>): Promise<void>;
  /** The content, or the byte range [start, end] inclusive; null when absent. A Blob streams lazily. */
  get(key: string, range?: { start: number; end: number }): Promise<Blob | null>;
  stat(key: string): Promise<BlobInfo | null>;
  exists(key: string): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** Removes every key under a prefix ending in "/". */
  deletePrefix(prefix: string): Promise<void>;
  /** How many keys sit directly under a prefix ending in "/". */
  countPrefix(prefix: string): Promise<number>;
  /** A local file path for readers that want one (sharp); null for remote stores. */
  localPath(key: string): string | null;
  /**
   * Blobs of a remote store are streamed through an answer, not handed to Response as they are
   * (Bun answers an S3 file with a redirect to a presigned URL, past our permission checks).
   */
  readonly remote: boolean;
  /** Throws a clear error when the store cannot be used (checked when a server starts). */
  check(): Promise<void>;
  /** Every content key ("ab/ab12…"): not the resized copies, nor anything being written. */
  contentKeys(): AsyncIterable<string>;
}

/** Content keys are the MD5 of their content in hex, under a folder of its first two digits. */
export const CONTENT_KEY = /^([0-9a-f]{2})\/(\1[0-9a-f]{30})$/;

/** A blob of `store` as a Response body: a local file is sent as it is (sendfile), a remote one streamed through. */
export const answerBody = (store: BlobStore, blob: Blob): Blob | ReadableStream<Uint8Array> => (store.remote ? blob.stream() : blob);

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkKey(key: string, prefix = false): string {
  const parts = (prefix ? key.replace(/\/$/, "") : key).split("/");
  if (!parts.every((p) => SEGMENT.test(p) && p !== "." && p !== "..")) throw new Error(`invalid blob key ${JSON.stringify(key)}`);
  return key;
}

/**
 * A writer into a temporary file of `dir`: once the content is complete and closed, `publish` makes
 * it visible under its key (a rename on disk, an upload to a bucket). The temporary file is removed
 * whatever happens; `abort` is safe twice and after commit.
 */
export async function stagedWriter(
  dir: string,
  o: { sync: boolean; mode: number; fail: (what: string, cause: unknown) => Error },
  publish: (tmpFile: string, key: string) => Promise<void>,
): Promise<BlobWriter> {
  const tmpFile = join(dir, `${crypto.randomUUID()}.part`);
  let fh;
  try {
    await mkdir(dir, { recursive: true });
    fh = await open(tmpFile, "wx", o.mode);
  } catch (e) {
    throw o.fail("opening a temporary file", e);
  }
  const handle = fh;
  let state: "open" | "closed" | "done" = "open";
  const close = async () => {
    if (state === "open") {
      state = "closed";
      await handle.close();
    }
  };
  const abort = async () => {
    if (state === "done") return;
    await close().catch(() => {});
    state = "done";
    await unlink(tmpFile).catch(() => {});
  };
  return {
    write: async (chunk) => {
      try {
        // A short write is possible in principle; loop until the chunk is on disk.
        for (let off = 0; off < chunk.length; ) off += (await handle.write(chunk, off, chunk.length - off)).bytesWritten;
      } catch (e) {
        await abort();
        throw o.fail("writing", e);
      }
    },
    commit: async (key) => {
      try {
        if (o.sync) await handle.sync();
        await close();
        await publish(tmpFile, key);
      } catch (e) {
        await abort();
        throw o.fail("committing", e);
      }
      state = "done";
      // Gone already after a rename; an upload leaves it behind.
      await unlink(tmpFile).catch(() => {});
    },
    abort,
  };
}

const storageFailure = (what: string, cause: unknown) => {
  console.error(`blob store: ${what} failed:`, cause);
  return new AppError(500, "RESOURCE_CREATE_FAILED", "the file could not be stored");
};

/** Local disk under one root. Writes go to `<root>/.tmp`, are fsynced, then renamed into place. */
export class LocalBlobStore implements BlobStore {
  readonly remote = false;
  private readonly tmp: string;
  constructor(readonly root: string) {
    this.tmp = join(root, ".tmp");
  }

  private path(key: string): string {
    return join(this.root, checkKey(key));
  }

  localPath(key: string): string {
    return this.path(key);
  }

  async check(): Promise<void> {
    try {
      await mkdir(this.tmp, { recursive: true });
    } catch (e) {
      throw new AppError(503, "SERVICE_UNAVAILABLE", `the file store ${this.root} cannot be written: ${(e as Error).message}`);
    }
  }

  async writer(): Promise<BlobWriter> {
    // Content reaches the disk before its name does: a crash never leaves a half file under a key.
    return stagedWriter(this.tmp, { sync: true, mode: 0o644, fail: storageFailure }, async (tmpFile, key) => {
      const target = this.path(key);
      await mkdir(dirname(target), { recursive: true });
      await rename(tmpFile, target);
    });
  }

  async *contentKeys(): AsyncIterable<string> {
    const shards = await readdir(this.root).catch(() => [] as string[]);
    for (const shard of shards.sort()) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of (await readdir(join(this.root, shard))).sort()) {
        if (CONTENT_KEY.test(`${shard}/${name}`)) yield `${shard}/${name}`;
      }
    }
  }

  async put(key: string, body: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    const w = await this.writer();
    try {
      if (body instanceof Uint8Array) await w.write(body);
      else for await (const chunk of body) await w.write(chunk);
    } catch (e) {
      await w.abort();
      throw e;
    }
    await w.commit(key);
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Blob | null> {
    const file = Bun.file(this.path(key));
    if (!(await file.exists())) return null;
    // A BunFile slice is still a file reference: Bun sends it with sendfile, nothing is buffered.
    return range ? file.slice(range.start, range.end + 1) : file;
  }

  async stat(key: string): Promise<BlobInfo | null> {
    try {
      const s = await stat(this.path(key));
      return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : null;
    } catch {
      return null;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<void> {
    await rm(join(this.root, checkKey(prefix, true)), { recursive: true, force: true });
  }

  async countPrefix(prefix: string): Promise<number> {
    try {
      return (await readdir(join(this.root, checkKey(prefix, true)))).length;
    } catch {
      return 0;
    }
  }
}
