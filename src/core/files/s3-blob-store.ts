/**
 * Blobs in an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO…) through Bun's own S3 client.
 * `RESD_FILES_URL=s3://bucket/prefix`; endpoint, region and keys come from the S3_* / AWS_*
 * variables, which Bun's client reads itself.
 *
 * An object becomes visible only when its upload completes, so a writer stages the content in a local
 * file and uploads it on commit (multipart for large files, done by the client): a failed or aborted
 * upload never leaves a partial object under a key, and the content key (its MD5) is known before
 * anything reaches the bucket.
 */
import { S3Client } from "bun";
import { AppError } from "../errors";
import { checkKey, CONTENT_KEY, stagedWriter, type BlobInfo, type BlobStore, type BlobWriter } from "./blob-store";

/** Parts of a multipart upload; S3 needs at least 5 MiB per part but the last. */
const PART_SIZE = 8 * 1024 * 1024;

const storageFailure = (what: string, cause: unknown) => {
  console.error(`blob store (S3): ${what} failed:`, cause);
  return new AppError(500, "RESOURCE_CREATE_FAILED", "the file could not be stored");
};

/** The bucket and key prefix of `s3://bucket/prefix` (already checked by the settings). */
export function parseFilesUrl(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!m) throw new Error(`not an s3:// URL: ${url}`);
  const prefix = m[2]!.replace(/^\/+|\/+$/g, "");
  return { bucket: m[1]!, prefix: prefix ? `${prefix}/` : "" };
}

/** The client's error for a missing object (anything else, e.g. ConnectionRefused, is a failure). */
const isMissing = (e: unknown) => (e as { code?: string } | null)?.code === "NoSuchKey";

export class S3BlobStore implements BlobStore {
  readonly remote = true;
  private readonly client: S3Client;
  private readonly prefix: string;

  /** `staging` is a local folder for uploads being written (DIR/data/files/.tmp). */
  constructor(private readonly url: string, private readonly staging: string, client?: S3Client) {
    const { bucket, prefix } = parseFilesUrl(url);
    this.client = client ?? new S3Client({ bucket });
    this.prefix = prefix;
  }

  private key(key: string): string {
    return this.prefix + checkKey(key);
  }

  private prefixOf(prefix: string): string {
    return this.prefix + checkKey(prefix, true).replace(/\/?$/, "/");
  }

  localPath(): null {
    return null;
  }

  async check(): Promise<void> {
    try {
      await this.client.list({ prefix: this.prefix, maxKeys: 1 });
    } catch (e) {
      const err = e as { code?: string; message?: string };
      throw new AppError(503, "SERVICE_UNAVAILABLE", `the bucket of ${this.url} cannot be used (${err.code ?? "error"}: ${err.message ?? String(e)}); check S3_ENDPOINT, S3_REGION and the keys (or their AWS_* names)`);
    }
  }

  async writer(): Promise<BlobWriter> {
    return stagedWriter(this.staging, { sync: false, mode: 0o600, fail: storageFailure }, async (tmpFile, key) => {
      await this.client.write(this.key(key), Bun.file(tmpFile), { partSize: PART_SIZE });
    });
  }

  async put(key: string, body: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    if (body instanceof Uint8Array) {
      try {
        await this.client.write(this.key(key), body);
      } catch (e) {
        throw storageFailure("uploading", e);
      }
      return;
    }
    const w = await this.writer();
    try {
      for await (const chunk of body) await w.write(chunk);
    } catch (e) {
      await w.abort();
      throw e;
    }
    await w.commit(key);
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Blob | null> {
    const file = this.client.file(this.key(key));
    if (!(await file.exists())) return null;
    // An S3 file is read lazily: a slice becomes a ranged GET when the answer streams it.
    return range ? file.slice(range.start, range.end + 1) : file;
  }

  async stat(key: string): Promise<BlobInfo | null> {
    try {
      const s = await this.client.file(this.key(key)).stat();
      return { size: s.size, mtimeMs: s.lastModified.getTime() };
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  }

  async exists(key: string): Promise<boolean> {
    return this.client.file(this.key(key)).exists();
  }

  async delete(key: string): Promise<void> {
    // Deleting an absent object succeeds in S3: nothing to tell apart.
    await this.client.delete(this.key(key));
  }

  /** Every key under a prefix, page by page (1,000 per answer). */
  private async *keysUnder(prefix: string): AsyncGenerator<string> {
    let continuationToken: string | undefined;
    do {
      const page = await this.client.list({ prefix, continuationToken });
      for (const o of page.contents ?? []) yield o.key;
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (continuationToken);
  }

  async *contentKeys(): AsyncIterable<string> {
    for await (const full of this.keysUnder(this.prefix)) {
      const key = full.slice(this.prefix.length);
      if (CONTENT_KEY.test(key)) yield key;
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    const keys: string[] = [];
    for await (const k of this.keysUnder(this.prefixOf(prefix))) keys.push(k);
    for (const k of keys) await this.client.delete(k);
  }

  async countPrefix(prefix: string): Promise<number> {
    let n = 0;
    for await (const _ of this.keysUnder(this.prefixOf(prefix))) n++;
    return n;
  }
}
