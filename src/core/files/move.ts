/**
 * Copies a site's uploaded files from one blob store to another (local disk ↔ an S3-compatible
 * bucket), for `resd migrate --files-to`. Every copy is read back and its MD5 checked against its
 * key (content keys are the MD5 of their content); a file already in the target counts once it
 * checks out. All or nothing: on any failure, what this run copied is deleted again and the error
 * is thrown. Resized copies are not moved: they are made again on demand.
 */
import { AppError } from "../errors";
import type { BlobStore } from "./blob-store";

export type MoveStats = { files: number; bytes: number; copied: number; present: number };
export type MoveProgress = { done: number; total: number };

/** The MD5 of a blob, read as a stream. */
async function md5Of(blob: Blob): Promise<string> {
  const h = new Bun.CryptoHasher("md5");
  for await (const chunk of blob.stream()) h.update(chunk);
  return h.digest("hex");
}

const md5OfKey = (key: string) => key.slice(key.lastIndexOf("/") + 1);

/** True when `store` holds `key` with the content its name promises. */
async function holds(store: BlobStore, key: string): Promise<boolean> {
  const blob = await store.get(key);
  return blob !== null && (await md5Of(blob)) === md5OfKey(key);
}

export async function moveFiles(from: BlobStore, to: BlobStore, onProgress?: (p: MoveProgress) => void): Promise<MoveStats> {
  const keys: string[] = [];
  for await (const key of from.contentKeys()) keys.push(key);
  const stats: MoveStats = { files: keys.length, bytes: 0, copied: 0, present: 0 };
  const copied: string[] = [];
  try {
    for (const [i, key] of keys.entries()) {
      const source = await from.get(key);
      if (!source) throw new AppError(500, "INTERNAL_ERROR", `file ${key} disappeared from the source while it was copied`);
      if (await holds(to, key)) {
        stats.present++;
      } else {
        if ((await md5Of(source)) !== md5OfKey(key)) throw new AppError(500, "INTERNAL_ERROR", `file ${key} in the source does not match its checksum; nothing was moved`);
        await to.put(key, source.stream());
        copied.push(key);
        if (!(await holds(to, key))) throw new AppError(500, "INTERNAL_ERROR", `file ${key} did not arrive whole in the target`);
        stats.copied++;
      }
      stats.bytes += (await from.stat(key))?.size ?? 0;
      onProgress?.({ done: i + 1, total: keys.length });
    }
  } catch (e) {
    // All or nothing: the target is left as it was found.
    for (const key of copied) await to.delete(key).catch(() => undefined);
    throw e;
  }
  return stats;
}
