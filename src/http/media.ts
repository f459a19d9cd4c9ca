/**
 * `/download/{uuid}` (the file as uploaded) and `/img/{uuid}/{spec}` (a resized WebP). Both are
 * public unless RESD_PUBLIC_MEDIA is off, in which case they need `view-.files`.
 */
import { Elysia } from "elysia";
import { authorize } from "../core/access/permissions";
import { AppError, methodNotAllowed } from "../core/errors";
import { answerBody } from "../core/files/blob-store";
import { contentKey, FILES, filesOf } from "../core/files/context";
import { cachedVariant, parseSpec, renderVariant, variantEtag } from "../core/files/images";
import { findFile } from "../core/files/library";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

/** Types a browser shows without running anything of ours' origin; all else is an attachment. */
const INLINE = /^(image\/(jpeg|png|gif|webp|avif|bmp|x-icon|tiff)|video\/[\w.+-]+|audio\/[\w.+-]+|text\/plain|application\/pdf)$/;

const onlyGet = (c: Ctx) => {
  if (c.request.method !== "GET" && c.request.method !== "HEAD") {
    throw methodNotAllowed("GET, HEAD");
  }
};

async function checkAccess(c: Ctx, uuid: string): Promise<void> {
  if (!c.site.config.publicMedia) authorize(await c.principal(), FILES, "view", uuid);
}

/** If-None-Match against one strong ETag (weak comparison, as RFC 9110 asks for GET). */
function matches(request: Request, etag: string): boolean {
  const inm = request.headers.get("if-none-match");
  if (!inm) return false;
  if (inm.trim() === "*") return true;
  return inm.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

/** RFC 6266: an ASCII fallback plus the exact name as RFC 8187 UTF-8. */
export function contentDisposition(kind: "inline" | "attachment", name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\%]/g, "_");
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

type Range = { start: number; end: number };

/**
 * One `bytes=` range, "unsatisfiable", or null to send the whole file (no header, a syntax we
 * do not serve such as several ranges: RFC 9110 lets a server ignore Range).
 */
export function parseRange(header: string | null, size: number): Range | "unsatisfiable" | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? Infinity : Number(m[2]);
  if (end < start) return null;
  if (start >= size) return "unsatisfiable";
  return { start, end: Math.min(end, size - 1) };
}

async function download(c: Ctx, uuid: string): Promise<Response> {
  onlyGet(c);
  await checkAccess(c, uuid);
  const row = await findFile(c.site, uuid);
  const meta = JSON.parse(row.data) as { name?: string; type?: string; size?: number };
  const blobs = filesOf(c.site).blobs;
  const info = await blobs.stat(contentKey(uuid));
  if (!info) throw new AppError(500, "INTERNAL_ERROR", `the content of file ${uuid} is missing`);
  const type = meta.type || "application/octet-stream";
  const inline = INLINE.test(type);
  const etag = `"${uuid}"`;
  const headers: Record<string, string> = {
    etag,
    "cache-control": c.site.config.publicMedia ? "public, max-age=86400" : "private, no-cache",
    "x-content-type-options": "nosniff",
    "accept-ranges": "bytes",
  };
  // Markup (SVG, HTML, XML…) is never rendered in our origin: attachment and a sandbox with no scripts.
  if (type !== "application/pdf") headers["content-security-policy"] = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'";
  if (matches(c.request, etag)) return new Response(null, { status: 304, headers });
  headers["content-type"] = type;
  headers["content-disposition"] = contentDisposition(inline ? "inline" : "attachment", meta.name || uuid);
  const ifRange = c.request.headers.get("if-range");
  const range = ifRange && ifRange.trim() !== etag ? null : parseRange(c.request.headers.get("range"), info.size);
  if (range === "unsatisfiable") {
    return json(416, { message: "INVALID_DATA", details: `the file has ${info.size} bytes` }, c.t0, { "content-range": `bytes */${info.size}` });
  }
  const body = await blobs.get(contentKey(uuid), range ?? undefined);
  if (!body) throw new AppError(500, "INTERNAL_ERROR", `the content of file ${uuid} is missing`);
  if (!range) return new Response(answerBody(blobs, body), { status: 200, headers });
  headers["content-range"] = `bytes ${range.start}-${range.end}/${info.size}`;
  return new Response(answerBody(blobs, body), { status: 206, headers });
}

async function image(c: Ctx, uuid: string, rawSpec: string): Promise<Response> {
  onlyGet(c);
  const spec = parseSpec(rawSpec, c.site.config.imgMaxEdge);
  await checkAccess(c, uuid);
  const etag = variantEtag(uuid, spec);
  const headers: Record<string, string> = {
    "content-type": "image/webp",
    etag,
    "cache-control": `${c.site.config.publicMedia ? "public" : "private"}, max-age=31536000, immutable`,
    "x-content-type-options": "nosniff",
  };
  const cached = await cachedVariant(c.site, uuid, spec);
  if (cached) return matches(c.request, etag) ? new Response(null, { status: 304, headers }) : new Response(answerBody(filesOf(c.site).blobs, cached), { headers });
  const bytes = await renderVariant(c.site, uuid, spec);
  if (matches(c.request, etag)) return new Response(null, { status: 304, headers });
  return new Response(bytes, { headers });
}

export const mediaRoutes = (site: Site) =>
  new Elysia({ name: "media" })
    .all("/download/:uuid", ({ request, params }) => handle(site, request, (c) => download(c, params.uuid)), { parse: "none" })
    .all("/img/:uuid/:spec", ({ request, params }) => handle(site, request, (c) => image(c, params.uuid, params.spec)), { parse: "none" });
