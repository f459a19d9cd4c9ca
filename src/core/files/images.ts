/**
 * Resized WebP copies for /img/{uuid}/{spec}. A variant is made once by sharp, under the resize
 * limiter, and kept on disk; later requests are served from the blob store without sharp.
 */
import sharp, { type ResizeOptions } from "sharp";
import { AppError, badRequest } from "../errors";
import type { Site } from "../site";
import { contentKey, filesOf, MD5_RE, variantKey, variantPrefix } from "./context";
import { findFile } from "./library";
import { RASTER_TYPES } from "./sniff";

export type ImageSpec =
  | { kind: "w"; width: number; text: string }
  | { kind: "h"; height: number; text: string }
  | { kind: "f" | "c"; width: number; height: number; text: string };

/** WebP quality of every variant (sharp's default). */
export const WEBP_QUALITY = 80;

const BOX = /^([1-9][0-9]{0,5})x([1-9][0-9]{0,5})([fc])$/;
const EDGE = /^([1-9][0-9]{0,5})([wh])$/;

/**
 * Parses `{W}x{H}f`, `{W}x{H}c`, `{W}w` or `{H}h`. Sizes are whole numbers from 1 to the maximum
 * edge without leading zeros, so each variant has exactly one spelling (and one cache entry).
 */
export function parseSpec(raw: string, maxEdge: number): ImageSpec {
  const box = BOX.exec(raw);
  const edge = box ? null : EDGE.exec(raw);
  if (!box && !edge) throw badRequest(`image spec "${raw}" is not {W}x{H}f, {W}x{H}c, {W}w or {H}h`);
  const sizes = box ? [Number(box[1]), Number(box[2])] : [Number(edge![1])];
  if (sizes.some((n) => n > maxEdge)) throw badRequest(`image sizes may be at most ${maxEdge} pixels`);
  if (box) return { kind: box[3] as "f" | "c", width: sizes[0], height: sizes[1], text: raw };
  return edge![2] === "w" ? { kind: "w", width: sizes[0], text: raw } : { kind: "h", height: sizes[0], text: raw };
}

/** The strong validator of a variant: the source is content-addressed and the spec is canonical. */
export const variantEtag = (uuid: string, spec: ImageSpec) => `"${uuid}-${spec.text}"`;

/** A variant already on disk, or null. No database read: this is the hot path. */
export async function cachedVariant(site: Site, uuid: string, spec: ImageSpec): Promise<Blob | null> {
  if (!MD5_RE.test(uuid)) return null;
  return filesOf(site).blobs.get(variantKey(uuid, spec.text));
}

const unsupported = (details: string) => new AppError(415, "UNSUPPORTED_MEDIA_TYPE", details);

/** sharp resize options for a spec; `src` is the displayed size of the source. Never enlarges. */
export function resizeOptions(spec: ImageSpec, src: { width: number; height: number }): ResizeOptions {
  switch (spec.kind) {
    case "w":
      return { width: spec.width, withoutEnlargement: true };
    case "h":
      return { height: spec.height, withoutEnlargement: true };
    case "f":
      return { width: spec.width, height: spec.height, fit: "inside", withoutEnlargement: true };
    case "c": {
      // A crop box larger than the source shrinks, ratio kept, until it fits: the answer has the
      // requested proportions at the largest size reachable without upscaling.
      const scale = Math.max(spec.width / src.width, spec.height / src.height, 1);
      const width = Math.max(1, Math.round(spec.width / scale));
      const height = Math.max(1, Math.round(spec.height / scale));
      return { width, height, fit: "cover", position: "centre" };
    }
  }
}

/** Makes (or joins the making of) a variant, keeps it on disk when allowed, and returns its bytes. */
export async function renderVariant(site: Site, uuid: string, spec: ImageSpec): Promise<Uint8Array> {
  const row = await findFile(site, uuid);
  const meta = JSON.parse(row.data) as { type?: string; width?: number; height?: number };
  if (!meta.type || !RASTER_TYPES.has(meta.type)) throw unsupported(`file ${uuid} (${meta.type ?? "unknown type"}) is not an image that can be resized`);
  const maxPixels = site.config.imgMaxPixels;
  if (meta.width && meta.height && meta.width * meta.height > maxPixels) throw unsupported(`the image is larger than ${maxPixels} pixels`);
  const files = filesOf(site);
  const key = variantKey(uuid, spec.text);
  let job = files.inflight.get(key);
  if (!job) {
    job = files.resizes.run(() => resize(site, uuid, spec, meta)).finally(() => files.inflight.delete(key));
    files.inflight.set(key, job);
  }
  return job;
}

async function resize(site: Site, uuid: string, spec: ImageSpec, meta: { width?: number; height?: number }): Promise<Uint8Array> {
  const { blobs } = filesOf(site);
  const source = contentKey(uuid);
  const input = blobs.localPath(source) ?? (await (await blobs.get(source))?.bytes());
  if (!input) throw new AppError(500, "INTERNAL_ERROR", `the content of file ${uuid} is missing`);
  let out: Uint8Array;
  try {
    // limitInputPixels is the hard stop for decompression bombs whose record has no dimensions.
    const img = sharp(input, { limitInputPixels: site.config.imgMaxPixels }).rotate();
    const src = meta.width && meta.height ? { width: meta.width, height: meta.height } : await displayedSize(input);
    out = await img.resize(resizeOptions(spec, src)).webp({ quality: WEBP_QUALITY }).toBuffer();
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw unsupported(`the image cannot be resized: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    await keep(site, uuid, spec, out);
  } catch (e) {
    // The caller still gets its image; the next request simply resizes again.
    console.error(`img: keeping variant ${uuid}/${spec.text} failed:`, e);
  }
  return out;
}

async function displayedSize(input: string | Uint8Array): Promise<{ width: number; height: number }> {
  const m = await sharp(input).metadata();
  return { width: m.autoOrient?.width ?? m.width, height: m.autoOrient?.height ?? m.height };
}

/** Stores a variant unless the image already has its quota of variants or was deleted meanwhile. */
async function keep(site: Site, uuid: string, spec: ImageSpec, out: Uint8Array): Promise<void> {
  const { blobs } = filesOf(site);
  if ((await blobs.countPrefix(variantPrefix(uuid))) >= site.config.imgMaxVariants) return;
  await blobs.put(variantKey(uuid, spec.text), out);
  // A delete that ran during the resize must not leave this copy behind.
  if (!(await site.store.get(".files_meta", uuid))) await blobs.deletePrefix(variantPrefix(uuid));
}
