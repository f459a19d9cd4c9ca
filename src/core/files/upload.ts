/**
 * Upload in two steps. `stageUpload` streams the content to a temporary blob while computing its
 * MD5 and counting its size (413 as soon as the limit is passed); `commitUpload` then makes it
 * visible under its MD5 and writes the `.files_meta` record. Until commit nothing is visible;
 * on any failure the temporary content is removed.
 */
import { authorize, type Principal } from "../access/permissions";
import { AppError } from "../errors";
import { prepareValues } from "../records/prepare";
import { actor, writers } from "../records/service";
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import type { BlobWriter } from "./blob-store";
import { contentKey, FILES, filesOf, META } from "./context";
import { imageInfo } from "./image-info";
import { checkAltLength, metaDef } from "./library";
import { cleanFileName } from "./names";
import { detectType, SNIFF_BYTES } from "./sniff";

export type Staged = {
  /** MD5 of the content, lower-case hex: the file's UUID. */
  md5: string;
  size: number;
  /** The first bytes, for type detection. */
  head: Uint8Array;
  writer: BlobWriter;
};

export const tooLarge = (max: number) => new AppError(413, "UPLOAD_TOO_LARGE", `the upload exceeds the maximum of ${max} bytes`, { max });

/** Throws 403 unless the caller may upload; checked before a single body byte is read. */
export function checkUpload(p: Principal): void {
  authorize(p, FILES, "create");
}

/** Streams content into a temporary blob. Throws 413 past `site.config.maxUpload` bytes. */
export async function stageUpload(site: Site, chunks: AsyncIterable<Uint8Array>): Promise<Staged> {
  const max = site.config.maxUpload;
  const writer = await filesOf(site).blobs.writer();
  const hasher = new Bun.CryptoHasher("md5");
  const head: Uint8Array[] = [];
  let headSize = 0;
  let size = 0;
  try {
    for await (const chunk of chunks) {
      size += chunk.length;
      if (size > max) throw tooLarge(max);
      hasher.update(chunk);
      if (headSize < SNIFF_BYTES) {
        const take = chunk.subarray(0, SNIFF_BYTES - headSize);
        head.push(take.slice());
        headSize += take.length;
      }
      await writer.write(chunk);
    }
  } catch (e) {
    await writer.abort();
    throw e;
  }
  return { md5: hasher.digest("hex"), size, head: Buffer.concat(head), writer };
}

export type UploadFields = { name?: string | null; claimedType?: string | null; title?: string | null; alt?: string | null };

/**
 * Publishes staged content. Identical content already stored keeps its record and its blob:
 * the answer is that record, `created` false, and nothing new is written.
 */
export async function commitUpload(site: Site, p: Principal, staged: Staged, fields: UploadFields): Promise<{ row: StoredRecord; created: boolean }> {
  checkUpload(p);
  const files = filesOf(site);
  const def = metaDef(site);
  const uuid = staged.md5;
  const key = contentKey(uuid);
  return files.lock(uuid, async () => {
    try {
      const existing = await site.store.get(META, uuid);
      if (existing) {
        await staged.writer.abort();
        return { row: existing, created: false };
      }
      const name = cleanFileName(fields.name);
      const type = detectType(staged.head, fields.claimedType, name);
      checkAltLength(fields.alt);
      const values = await prepareValues(site.store, def, { name, title: fields.title ?? "", alt: fields.alt ?? "", type, size: staged.size }, "create", uuid, { passwordMinLength: site.config.passwordMinLength });
      await staged.writer.commit(key);
      try {
        const info = await imageInfo(files.blobs.localPath(key) ?? (await (await files.blobs.get(key))!.bytes()), type);
        if (info) Object.assign(values, info);
        const row = await site.store.transaction(async (tx) => {
          const raced = await tx.get(META, uuid);
          if (raced) return { row: raced, created: false };
          return { row: await writers.insertPrepared(site, tx, def, uuid, values, actor(p, "create")), created: true };
        });
        return row;
      } catch (e) {
        // The record was not written: the content must not stay behind without it.
        if (!(await site.store.get(META, uuid))) await files.blobs.delete(key).catch(() => {});
        throw e instanceof AppError ? e : storageFailed(e);
      }
    } finally {
      await staged.writer.abort();
    }
  });
}

function storageFailed(e: unknown): AppError {
  console.error("upload: writing the file record failed:", e);
  return new AppError(500, "RESOURCE_CREATE_FAILED", "the file could not be stored");
}
