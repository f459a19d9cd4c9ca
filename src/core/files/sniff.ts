/**
 * The stored type of an upload comes from its own first bytes. The client's claim is used only
 * for content no signature here recognises, and never when it names a type we can recognise
 * (a "PNG" that does not start like one is not a PNG), so a script cannot pass as an image.
 */

/** How many leading bytes the sniffer looks at. */
export const SNIFF_BYTES = 4096;

const ascii = (b: Uint8Array, at: number, s: string) => {
  if (b.length < at + s.length) return false;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s.charCodeAt(i)) return false;
  return true;
};
const bytes = (b: Uint8Array, at: number, sig: number[]) => b.length >= at + sig.length && sig.every((x, i) => b[at + i] === x);

/** ISO-BMFF brands (bytes 8–11 after "ftyp"). */
const FTYP: Record<string, string> = {
  avif: "image/avif", avis: "image/avif", heic: "image/heic", heix: "image/heic", mif1: "image/heif", msf1: "image/heif",
  isom: "video/mp4", iso2: "video/mp4", mp41: "video/mp4", mp42: "video/mp4", avc1: "video/mp4", dash: "video/mp4",
  "M4V ": "video/mp4", "M4A ": "audio/mp4", "qt  ": "video/quicktime", "3gp4": "video/3gpp", "3gp5": "video/3gpp",
};

function binary(b: Uint8Array): string | null {
  if (bytes(b, 0, [0xff, 0xd8, 0xff])) return "image/jpeg";
  if (bytes(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return "image/gif";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return "image/webp";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WAVE")) return "audio/wav";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "AVI ")) return "video/x-msvideo";
  if (ascii(b, 4, "ftyp") && b.length >= 12) return FTYP[String.fromCharCode(...b.subarray(8, 12))] ?? null;
  if (bytes(b, 0, [0x49, 0x49, 0x2a, 0x00]) || bytes(b, 0, [0x4d, 0x4d, 0x00, 0x2a])) return "image/tiff";
  if (ascii(b, 0, "BM") && b.length >= 14) return "image/bmp";
  if (bytes(b, 0, [0x00, 0x00, 0x01, 0x00])) return "image/x-icon";
  if (ascii(b, 0, "%PDF-")) return "application/pdf";
  if (ascii(b, 0, "PK\x03\x04") || ascii(b, 0, "PK\x05\x06")) return "application/zip";
  if (bytes(b, 0, [0x1f, 0x8b])) return "application/gzip";
  if (bytes(b, 0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return "application/x-7z-compressed";
  if (ascii(b, 0, "Rar!\x1a\x07")) return "application/vnd.rar";
  if (ascii(b, 0, "ID3") || bytes(b, 0, [0xff, 0xfb]) || bytes(b, 0, [0xff, 0xf3]) || bytes(b, 0, [0xff, 0xf2])) return "audio/mpeg";
  if (ascii(b, 0, "OggS")) return "audio/ogg";
  if (ascii(b, 0, "fLaC")) return "audio/flac";
  if (bytes(b, 0, [0x1a, 0x45, 0xdf, 0xa3])) return "video/webm";
  if (ascii(b, 0, "wOFF")) return "font/woff";
  if (ascii(b, 0, "wOF2")) return "font/woff2";
  return null;
}

/** Text that is valid UTF-8 without NUL bytes (the tail may cut a character in half). */
function isText(b: Uint8Array): boolean {
  if (b.includes(0)) return false;
  for (let cut = 0; cut < 4 && cut <= b.length; cut++) {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(b.subarray(0, b.length - cut));
      return true;
    } catch {
      // a multi-byte character may be split at the end of the sniffed window; try a shorter cut
    }
  }
  return false;
}

const SVG = /^(?:\s|<\?xml[^>]*>|<!--[\s\S]*?-->|<!doctype\s+svg[^>]*>)*<svg[\s>/]/i;
const HTML = /^(?:\s|<!--[\s\S]*?-->)*<(?:!doctype\s+html|html|head|body|script|iframe|meta|title|style|div|p|a|img|table|h1)[\s>/]/i;
const XML = /^\s*<\?xml[\s?]/;

function text(b: Uint8Array): string | null {
  const s = new TextDecoder().decode(b).replace(/^\uFEFF/, "");
  if (SVG.test(s)) return "image/svg+xml";
  if (HTML.test(s)) return "text/html";
  if (XML.test(s)) return "application/xml";
  return null;
}

/**
 * Types whose claim must be proven by the bytes: those a browser or a reader treats specially
 * (images, markup, PDF, archives). Audio and video claims are believed when no signature matched.
 */
const PROVABLE = new Set([
  "image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/heic", "image/heif", "image/tiff", "image/bmp",
  "image/x-icon", "image/svg+xml", "text/html", "application/xhtml+xml", "application/xml", "text/xml", "application/pdf",
  "application/zip", "application/gzip",
]);

/** Formats stored as ZIP: a ZIP may keep its more precise claimed or extension-derived type. */
const ZIP_FAMILY = new Set([
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
  "application/vnd.oasis.opendocument.presentation", "application/epub+zip", "application/java-archive",
]);

/** For a missing or generic claim: types by extension, only for formats without a signature here. */
const BY_EXTENSION: Record<string, string> = {
  txt: "text/plain", csv: "text/csv", tsv: "text/tab-separated-values", md: "text/markdown", json: "application/json",
  css: "text/css", js: "text/javascript", ics: "text/calendar", vtt: "text/vtt", srt: "application/x-subrip",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text", ods: "application/vnd.oasis.opendocument.spreadsheet",
  odp: "application/vnd.oasis.opendocument.presentation", epub: "application/epub+zip", jar: "application/java-archive",
};

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

function normaliseClaim(claim: string | null | undefined): string | null {
  const t = (claim ?? "").split(";")[0].trim().toLowerCase();
  return MIME.test(t) && t !== "application/octet-stream" ? t : null;
}

/**
 * The type to store for content starting with `head`, given the client's claimed type and the
 * file name. Signature first; then the claim (or the extension) for formats without one.
 */
export function detectType(head: Uint8Array, claimed: string | null | undefined, name: string): string {
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(name)?.[1].toLowerCase() ?? "";
  const claim = normaliseClaim(claimed) ?? BY_EXTENSION[ext] ?? null;
  const sniffed = binary(head) ?? (isText(head) ? text(head) : null);
  if (sniffed === "application/zip" && claim && ZIP_FAMILY.has(claim)) return claim;
  if (sniffed) return sniffed;
  const textual = head.length > 0 && isText(head);
  // A claim the bytes could have proven but did not (an "image" that is not one) is not believed.
  if (!claim || PROVABLE.has(claim) || claim.startsWith("image/") || ZIP_FAMILY.has(claim)) return textual ? "text/plain" : "application/octet-stream";
  // Text formats are sniffed as text: a binary file cannot claim to be text, nor text to be binary audio/video.
  if (claim.startsWith("text/") && !textual) return "application/octet-stream";
  return claim;
}

/** Raster formats that sharp decodes for /img (SVG is never rasterised: see docs/media.md). */
export const RASTER_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/tiff"]);
