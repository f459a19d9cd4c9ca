/**
 * A .docx is a zip archive, and a small one can inflate to gigabytes (1.9 MB became 10.5 GB in
 * mammoth). Before any library reads it, the central directory is walked and every entry is
 * inflated here with a hard output bound, so neither many entries nor sizes that lie in the
 * headers get past: the bound holds for what the data really inflates to.
 */
import { inflateRawSync } from "node:zlib";
import { AppError } from "../errors";

export type ZipBounds = { maxUncompressed: number; maxEntries: number };

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

const unreadable = (why: string) => new AppError(422, "INVALID_DATA", `the .docx document cannot be read: ${why}`);
const tooLarge = (max: number) =>
  new AppError(413, "UPLOAD_TOO_LARGE", `the .docx document inflates to more than ${max} bytes uncompressed (RESD_DOCUMENT_MAX_UNZIPPED)`);

/** Throws 413 when the archive holds too many entries or inflates past the bound, 422 when it is not a zip. */
export function checkZipBounds(bytes: Uint8Array, bounds: ZipBounds): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The end-of-central-directory record sits in the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (view.getUint32(i, true) === EOCD) { eocd = i; break; }
  }
  if (eocd < 0) throw unreadable("no zip directory");
  const entries = view.getUint16(eocd + 10, true);
  if (entries > bounds.maxEntries) throw new AppError(413, "UPLOAD_TOO_LARGE", `the .docx document holds ${entries} entries; at most ${bounds.maxEntries} are read`);
  let at = view.getUint32(eocd + 16, true);
  let budget = bounds.maxUncompressed;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== CENTRAL) throw unreadable("a broken zip directory");
    const method = view.getUint16(at + 10, true);
    const compressed = view.getUint32(at + 20, true);
    const declared = view.getUint32(at + 24, true);
    const nameLen = view.getUint16(at + 28, true);
    const extraLen = view.getUint16(at + 30, true);
    const commentLen = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    at += 46 + nameLen + extraLen + commentLen;
    if (declared > budget) throw tooLarge(bounds.maxUncompressed);
    if (local + 30 > bytes.length || view.getUint32(local, true) !== LOCAL) throw unreadable("a broken zip entry");
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    const data = bytes.subarray(start, start + compressed);
    if (method === 0) budget -= data.length;
    else if (method === 8) {
      try {
        budget -= inflateRawSync(data, { maxOutputLength: Math.max(1, budget) }).length;
      } catch (e) {
        if ((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError) throw tooLarge(bounds.maxUncompressed);
        throw unreadable("a damaged compressed entry");
      }
    } else throw unreadable(`compression method ${method} is not supported`);
    if (budget < 0) throw tooLarge(bounds.maxUncompressed);
  }
}
