/** `/api/v1/{resource}` and `/api/v1/{resource}/{uuid}`: the generic record interface. */
import { Elysia } from "elysia";
import { AppError, methodNotAllowed } from "../core/errors";
import { historyAuthors } from "../core/records/authors";
import {
  bulkUpdate, createRecord, deleteAllRecords, deleteRecord, listRecords, readRecord, readRecordNow, recordHistory, restoreRecord, updateRecord, type Expect,
} from "../core/records/service";
import type { ResourceDef } from "../core/definitions/types";
import type { StoredRecord } from "../core/store/types";
import type { Site } from "../core/site";
import { isNotModified, lastModifiedHeader, notModifiedResponse, rowsDigest, weakEtag, writePrecondition } from "./conditional";
import { handle, requestIdOf, withRequestId, type Ctx } from "./context";
import { knownPrincipal } from "./auth";
import { errorResponse } from "./errors";
import { cacheHeaders, withCachePolicy } from "./cache-control";
import { json, records, streamedRecords } from "./envelope";
import { callerKey } from "./caller";

async function collection(c: Ctx, resource: string): Promise<Response> {
  const p = await c.principal();
  switch (c.request.method) {
    case "HEAD":
    case "GET": {
      const q = c.url().searchParams;
      const r = await listRecords(c.site, p, resource, {
        limit: q.get("limit") ?? undefined, offset: q.get("offset") ?? undefined, sort: q.get("sort") ?? undefined,
        filter: q.get("filter") ?? undefined, search: q.get("search") ?? undefined,
      }, callerKey(c.site, c.request, p));
      const lm = lastModifiedHeader(r.lastChange, c.site.store.changeLead?.());
      // lastChange moves with every commit of the resource; what the page and its total hold names
      // this answer among those of the same mark (see rowsDigest). Streamed rows are read after the mark.
      const etag = weakEtag(c.site, resource, r.lastChange, c.url().search, p.uuid ?? p.kind, r.total ?? "", Array.isArray(r.rows) ? rowsDigest(r.rows) : "");
      if (isNotModified(c.request, etag, r.lastChange)) return notModifiedResponse(lm, etag);
      const o = { status: 200, total: r.total, headers: { "last-modified": lm, etag } };
      return Array.isArray(r.rows) ? records(r.def, r.rows, o, c.t0) : streamedRecords(r.def, r.rows, o, c.t0);
    }
    case "POST": {
      const { def, row } = await createRecord(c.site, p, resource, await c.json());
      return records(def, [row], { status: 201, message: "RESOURCE_CREATED" }, c.t0);
    }
    case "PUT":
    case "PATCH": {
      const { def, rows } = await bulkUpdate(c.site, p, resource, await c.json());
      return records(def, rows, { status: 200, message: "RESOURCE_UPDATED" }, c.t0);
    }
    case "DELETE": {
      const n = await deleteAllRecords(c.site, p, resource);
      return json(200, { count: n, message: "RESOURCE_DELETED" }, c.t0);
    }
    default:
      throw methodNotAllowed("GET, POST, PUT, PATCH, DELETE");
  }
}

async function single(c: Ctx, resource: string, uuid: string): Promise<Response> {
  const p = await c.principal();
  switch (c.request.method) {
    case "HEAD":
    case "GET": {
      const { def, row } = await readRecord(c.site, p, resource, uuid);
      return recordAnswer(c.site, c.request, def, row, c.t0);
    }
    case "POST": {
      const { def, row } = await createRecord(c.site, p, resource, await c.json(), uuid);
      return records(def, [row], { status: 201, message: "RESOURCE_CREATED" }, c.t0);
    }
    case "PUT":
    case "PATCH": {
      const body = await c.json();
      return conditionalWrite(c, async (expect) => {
        const { def, row, created } = await updateRecord(c.site, p, resource, uuid, body, expect);
        // The new version's validators: a client chains its next write with If-Match.
        const headers = { etag: recordEtag(c.site, row), "last-modified": lastModifiedHeader(row._modified * 1000) };
        return records(def, [row], created ? { status: 201, message: "RESOURCE_CREATED", headers } : { status: 200, message: "RESOURCE_UPDATED", headers }, c.t0);
      });
    }
    case "DELETE":
      return conditionalWrite(c, async (expect) => {
        const { def, row } = await deleteRecord(c.site, p, resource, uuid, expect);
        return records(def, [row], { status: 200, message: "RESOURCE_DELETED" }, c.t0);
      });
    default:
      throw methodNotAllowed("GET, POST, PUT, PATCH, DELETE");
  }
}

/**
 * Rows are shared and never changed (the record cache hands the same object to every read), so a
 * row's tag is worked out once.
 */
const rowTags = new WeakMap<StoredRecord, string>();
function recordEtag(site: Site, row: StoredRecord): string {
  let tag = rowTags.get(row);
  if (tag === undefined) rowTags.set(row, (tag = weakEtag(site, row.uuid, row.data, row._modified, row._modified_by ?? "")));
  return tag;
}

/**
 * A write to one record under the request's If-Match / If-Unmodified-Since (docs/records.md,
 * "Conditional writes"). Core judges the test on the row its transaction read, the tag worked out
 * as GET does; a 412 names that row's tag in `etag` (its `_modified` and `_modified_by` are in the body).
 */
async function conditionalWrite(c: Ctx, write: (expect?: Expect) => Promise<Response>): Promise<Response> {
  const test = writePrecondition(c.request);
  if (!test) return write();
  let failed: StoredRecord | null = null;
  try {
    return await write((row) => {
      const ok = test(() => recordEtag(c.site, row), row._modified);
      failed = ok ? null : row;
      return ok;
    });
  } catch (e) {
    if (!(e instanceof AppError && e.code === "PRECONDITION_FAILED" && failed)) throw e;
    const res = errorResponse(e, c.t0, c.requestId);
    res.headers.set("etag", recordEtag(c.site, failed));
    return res;
  }
}

/** A record the caller may view, or 304 when the caller holds its current version; `id` adds the request id header. */
function recordAnswer(site: Site, request: Request, def: ResourceDef, row: StoredRecord, t0: number, id?: string): Response {
  const ms = row._modified * 1000;
  const lm = lastModifiedHeader(ms);
  const etag = recordEtag(site, row);
  if (isNotModified(request, etag, ms)) return id === undefined ? notModifiedResponse(lm, etag) : withCachePolicy(withRequestId(notModifiedResponse(lm, etag), id), request);
  // Through handle() (no id here) the cache headers are added on the way out; in place, at once.
  const headers: Record<string, string> = id === undefined ? { "last-modified": lm, etag } : { "last-modified": lm, etag, "x-request-id": id, ...cacheHeaders(request, 200) };
  return records(def, [row], { status: 200, headers }, t0);
}

async function history(c: Ctx, resource: string, uuid: string): Promise<Response> {
  if (c.request.method !== "GET") throw methodNotAllowed("GET");
  const p = await c.principal();
  const entries = await recordHistory(c.site, p, resource, uuid);
  const users = await historyAuthors(c.site, p, entries.map((e) => e.user));
  return json(200, { count: entries.length, history: entries, users }, c.t0);
}

async function restore(c: Ctx, resource: string, uuid: string): Promise<Response> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  const body = (await c.json()) as { entry?: unknown };
  // An integer, or absent: null, true, "", "0x1" or [0] are no entry (Number() would make them 0 or 1).
  const raw = body && typeof body === "object" && !Array.isArray(body) ? body.entry : undefined;
  if (raw !== undefined && !(typeof raw === "number" && Number.isSafeInteger(raw))) throw new AppError(400, "INVALID_DATA", "entry must be a history entry id (an integer), or absent");
  const entry = raw as number | undefined;
  const { def, row } = await restoreRecord(c.site, await c.principal(), resource, uuid, entry);
  return records(def, [row], { status: 200, message: "RESOURCE_UPDATED" }, c.t0);
}

/** GET/HEAD of one record, also reached without the router (see server.ts, the hot path). */
export const readOneRoute = (site: Site, request: Request, resource: string, uuid: string) => handle(site, request, (c) => single(c, resource, uuid));

/** An answer given in place, with what the request log needs of it. */
export type AnswerNow = { response: Response; user: string; id: string };

/**
 * The same answered without waiting when everything it needs is at hand (a known caller, a store
 * that reads in place): no promise, no await between the request and its answer. Null otherwise,
 * and for every answer but a record, a 304 or an error of the read (readOneRoute answers those).
 * The request's URL is never read: Bun builds it anew at each access (~1.5 µs), and the router's
 * params already name the record.
 */
export function readOneNow(site: Site, request: Request, resource: string, uuid: string, t0 = performance.now()): AnswerNow | null {
  const id = requestIdOf(request);
  let user = "anonymous";
  try {
    const p = knownPrincipal(site, request);
    if (!p) return null;
    user = p.email ?? p.kind;
    const found = readRecordNow(site, p, resource, uuid);
    return found ? { response: recordAnswer(site, request, found.def, found.row, t0, id), user, id } : null;
  } catch (e) {
    // As handle() answers: the error envelope under this request's id.
    return { response: withCachePolicy(withRequestId(errorResponse(e, t0, id), id), request), user, id };
  }
}

export const recordRoutes = (site: Site) =>
  new Elysia({ name: "records" })
    .all("/api/v1/:resource", ({ request, params }) => handle(site, request, (c) => collection(c, params.resource)), { parse: "none" })
    .all("/api/v1/:resource/:uuid", ({ request, params }) => handle(site, request, (c) => single(c, params.resource, params.uuid)), { parse: "none" })
    .all("/api/v1/:resource/:uuid/history", ({ request, params }) => handle(site, request, (c) => history(c, params.resource, params.uuid)), { parse: "none" })
    .all("/api/v1/:resource/:uuid/restore", ({ request, params }) => handle(site, request, (c) => restore(c, params.resource, params.uuid)), { parse: "none" });
