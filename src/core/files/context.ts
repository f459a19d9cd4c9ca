/**
 * Per-site file machinery, made once per opened site: the blob store (DIR/data/files/, or the
 * bucket of RESD_FILES_URL),
 * the resize limiter and per-file locks. Kept beside the site rather than in it so that the
 * Site type stays free of media concerns.
 */
import { join } from "node:path";
import type { Site } from "../site";
import { LocalBlobStore, type BlobStore } from "./blob-store";
import { S3BlobStore } from "./s3-blob-store";
import { Limiter } from "./limiter";

export const META = ".files_meta";
/** The permission resource of the file endpoints (`view-.files`, `create-.files`, …). */
export const FILES = ".files";

export type Files = {
  blobs: BlobStore;
  resizes: Limiter;
  /** Serialises upload commits and deletes of one file, so a delete cannot race a re-upload. */
  lock<T>(uuid: string, fn: () => Promise<T>): Promise<T>;
  /** Resizes under way by variant key: simultaneous requests for one variant share one resize. */
  inflight: Map<string, Promise<Uint8Array>>;
};

const bySite = new WeakMap<Site, Files>();

export function filesOf(site: Site): Files {
  let f = bySite.get(site);
  if (!f) {
    const tails = new Map<string, Promise<unknown>>();
    f = {
      blobs: site.config.filesUrl
        ? new S3BlobStore(site.config.filesUrl, join(site.config.dir, "data", "files", ".tmp"))
        : new LocalBlobStore(join(site.config.dir, "data", "files")),
      resizes: new Limiter(site.config.imgConcurrency, site.config.imgConcurrency * 16),
      inflight: new Map(),
      async lock(uuid, fn) {
        const prev = tails.get(uuid) ?? Promise.resolve();
        const run = prev.then(fn, fn);
        const tail = run.catch(() => {});
        tails.set(uuid, tail);
        try {
          return await run;
        } finally {
          if (tails.get(uuid) === tail) tails.delete(uuid);
        }
      },
    };
    bySite.set(site, f);
  }
  return f;
}

/** Content key of a file: sharded by the first two hex digits so no directory grows huge. */
export const contentKey = (uuid: string) => `${uuid.slice(0, 2)}/${uuid}`;
/** Folder of a file's resized copies. */
export const variantPrefix = (uuid: string) => `cache/${uuid}/`;
export const variantKey = (uuid: string, spec: string) => `cache/${uuid}/${spec}.webp`;

export const MD5_RE = /^[0-9a-f]{32}$/;
