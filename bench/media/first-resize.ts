/**
 * First resize of a 12-megapixel JPEG to 800w WebP: resd's cache-miss path (renderVariant: record
 * read, limiter, sharp, WebP written to the variant cache) against the bare sharp call of
 * /work/shared/bench/ref/image-resize.ts, in the same process, interleaved.
 *   bun bench/media/first-resize.ts [ROUNDS=9]
 * Each round deletes the variant cache, so every resd call is a real first resize.
 */
import sharp from "sharp";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { SYSTEM } from "../../src/core/access/permissions";
import { loadConfig } from "../../src/core/config";
import { filesOf, variantPrefix } from "../../src/core/files/context";
import { parseSpec, renderVariant } from "../../src/core/files/images";
import { commitUpload, stageUpload } from "../../src/core/files/upload";
import { openSite } from "../../src/core/open-site";

const ROUNDS = Number(process.argv[2] ?? 9);
const src = process.env.PHOTO ?? "/tmp/bench-data/photo-12mp.jpg";
if (!existsSync(src)) {
  // The same picture ref/image-resize.ts makes (same generator and seed).
  mkdirSync("/tmp/bench-data", { recursive: true });
  const W = 4000, H = 3000;
  const raw = Buffer.alloc(W * H * 3);
  let seed = 1;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
    const o = (y * W + x) * 3;
    raw[o] = 128 + 100 * Math.sin(x / 97) + 20 * rnd();
    raw[o + 1] = 128 + 100 * Math.cos(y / 61) + 20 * rnd();
    raw[o + 2] = 128 + 90 * Math.sin((x + y) / 143) + 20 * rnd();
  }
  await sharp(raw, { raw: { width: W, height: H, channels: 3 } }).jpeg({ quality: 85 }).toFile(src);
}

const dir = mkdtempSync(join(tmpdir(), "resd-bench-media-"));
const site = await openSite(loadConfig({ dir }));
const staged = await stageUpload(site, Bun.file(src).stream());
const { row } = await commitUpload(site, SYSTEM, staged, { name: "photo-12mp.jpg", claimedType: "image/jpeg" });
const uuid = row.uuid;
const spec = parseSpec("800w", site.config.imgMaxEdge);
const blobs = filesOf(site).blobs;

const opts = { limitInputPixels: 50_000_000 };
const bare = () => sharp(src, opts).rotate().resize({ width: 800, withoutEnlargement: true }).webp().toBuffer();
const resd = async () => {
  await blobs.deletePrefix(variantPrefix(uuid));
  const t0 = performance.now();
  const out = await renderVariant(site, uuid, spec);
  return { ms: performance.now() - t0, out };
};
const timeBare = async () => {
  const t0 = performance.now();
  const out = await bare();
  return { ms: performance.now() - t0, out };
};

// The very first call of each in this process (libvips start-up is paid by whichever runs first).
const firstBare = await timeBare();
const firstResd = await resd();
const tb: number[] = [], tr: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  if (i % 2) { tb.push((await timeBare()).ms); tr.push((await resd()).ms); }
  else { tr.push((await resd()).ms); tb.push((await timeBare()).ms); }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = median(tb), mr = median(tr);
const meta = await sharp(firstResd.out).metadata();
console.log(`source ${src}, sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, ${ROUNDS} interleaved rounds`);
console.log(`bare sharp 12MP -> 800w WebP      first ${firstBare.ms.toFixed(0)} ms, median ${mb.toFixed(1)} ms, ${(firstBare.out.length / 1024).toFixed(0)} KiB`);
console.log(`resd first resize (cache miss)    first ${firstResd.ms.toFixed(0)} ms, median ${mr.toFixed(1)} ms, ${(firstResd.out.length / 1024).toFixed(0)} KiB, ${meta.width}x${meta.height}`);
console.log(`resd / bare (median): ${(mr / mb).toFixed(3)}  (target <= 1.15)`);
await site.close();
rmSync(dir, { recursive: true, force: true });
