/**
 * `/api/v1/.files` and `/api/v1/.files/{uuid}`: the media library. Uploads are read as a stream
 * (never `request.formData()`, which holds the whole body in memory) and counted as they arrive.
 */
import { Elysia } from "elysia";
import { badRequest, methodNotAllowed } from "../core/errors";
import { deleteFile, listFiles, metaDef, readFile, updateFile } from "../core/files/library";
import { multipartBoundary, readMultipart } from "../core/files/multipart";
import { checkUpload, commitUpload, stageUpload, type Staged } from "../core/files/upload";
import { FRAMING_ALLOWANCE, limitedBody } from "./upload-body";
import type { Site } from "../core/site";
import { lastModifiedHeader, notModified, notModifiedResponse } from "./conditional";
import { handle, type Ctx } from "./context";
import { records, streamedRecords } from "./envelope";

const KEY = "files";
/** Bound of a `title` or `alt` text part, read before its value is checked. */
const MAX_TEXT_PART_BYTES = 16 * 1024;

async function partText(body: AsyncIterable<Uint8Array>, max: number): Promise<string> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > max) throw badRequest(`a text part may hold at most ${max} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString("utf8");
}

async function upload(c: Ctx): Promise<Response> {
  const p = await c.principal();
  checkUpload(p);
  const boundary = multipartBoundary(c.request.headers.get("content-type"));
  if (!boundary) throw badRequest("send the file as multipart/form-data in a part named `file`");
  const max = c.site.config.maxUpload;
  let staged: Staged | null = null;
  let fields: { name: string | null; claimedType: string | null; title: string | null; alt: string | null } = { name: null, claimedType: null, title: null, alt: null };
  try {
    for await (const part of readMultipart(limitedBody(c.request, max + FRAMING_ALLOWANCE, max), boundary)) {
      if (part.name === "file" && !staged) {
        staged = await stageUpload(c.site, part.body);
        fields = { ...fields, name: part.filename, claimedType: part.contentType };
      } else if (part.name === "title" || part.name === "alt") {
        fields[part.name] = await partText(part.body, MAX_TEXT_PART_BYTES);
      }
      // Any other part is skipped by the reader.
    }
    if (!staged) throw badRequest("the multipart part `file` is missing");
    const { row, created } = await commitUpload(c.site, p, staged, fields);
    staged = null;
    return records(metaDef(c.site), [row], { status: 201, message: "RESOURCE_CREATED", extra: created ? {} : { duplicate: true } }, c.t0, KEY);
  } finally {
    await staged?.writer.abort();
  }
}

async function collection(c: Ctx): Promise<Response> {
  switch (c.request.method) {
    case "GET":
    case "HEAD": {
      const q = c.url().searchParams;
      const r = await listFiles(c.site, await c.principal(), {
        limit: q.get("limit") ?? undefined, offset: q.get("offset") ?? undefined, sort: q.get("sort") ?? undefined,
        filter: q.get("filter") ?? undefined, search: q.get("search") ?? undefined,
      });
      const lm = lastModifiedHeader(r.lastChange, c.site.store.changeLead?.());
      if (notModified(c.request, r.lastChange)) return notModifiedResponse(lm);
      const o = { status: 200, total: r.total, headers: { "last-modified": lm } };
      return Array.isArray(r.rows) ? records(r.def, r.rows, o, c.t0, KEY) : streamedRecords(r.def, r.rows, o, c.t0, KEY);
    }
    case "POST":
      return upload(c);
    default:
      throw methodNotAllowed("GET, POST");
  }
}

async function single(c: Ctx, uuid: string): Promise<Response> {
  const p = await c.principal();
  const def = metaDef(c.site);
  switch (c.request.method) {
    case "GET":
    case "HEAD": {
      const row = await readFile(c.site, p, uuid);
      const ms = row._modified * 1000;
      const lm = lastModifiedHeader(ms);
      if (notModified(c.request, ms)) return notModifiedResponse(lm);
      return records(def, [row], { status: 200, headers: { "last-modified": lm } }, c.t0, KEY);
    }
    case "PUT":
    case "PATCH": {
      const row = await updateFile(c.site, p, uuid, await c.json());
      return records(def, [row], { status: 200, message: "RESOURCE_UPDATED" }, c.t0, KEY);
    }
    case "DELETE": {
      const row = await deleteFile(c.site, p, uuid);
      return records(def, [row], { status: 200, message: "RESOURCE_DELETED" }, c.t0, KEY);
    }
    default:
      throw methodNotAllowed("GET, PUT, PATCH, DELETE");
  }
}

export const fileRoutes = (site: Site) =>
  new Elysia({ name: "files" })
    .all("/api/v1/.files", ({ request }) => handle(site, request, (c) => collection(c)), { parse: "none" })
    .all("/api/v1/.files/:uuid", ({ request, params }) => handle(site, request, (c) => single(c, params.uuid)), { parse: "none" });
