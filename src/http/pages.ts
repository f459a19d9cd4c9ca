/**
 * `/api/v1/.pages`: the site's pages for the editing tools (docs/editing.md "Pages"). Data key
 * `pages`: entries keyed by id (md5 of the URL path), in URL order.
 */
import { Elysia } from "elysia";
import { AppError, methodNotAllowed } from "../core/errors";
import { historyAuthors } from "../core/records/authors";
import { listPages, readPage } from "../core/pages/service";
import { createPage, deletePage, pageHistory, replacePage, restorePage } from "../core/pages/write";
import type { Site } from "../core/site";
import { handle, type Ctx } from "./context";
import { json } from "./envelope";

const NO_STORE = { "cache-control": "no-store" };

const keyed = (pages: Record<string, unknown>[]) => Object.fromEntries(pages.map((p) => [p.id as string, p]));

async function collection(c: Ctx): Promise<Response> {
  const p = await c.principal();
  switch (c.request.method) {
    case "HEAD":
    case "GET": {
      const q = c.url().searchParams;
      const get = (k: string) => q.get(k) ?? undefined;
      const r = await listPages(c.site, p, { kind: get("kind"), resource: get("resource"), search: get("search"), limit: get("limit"), offset: get("offset") });
      return json(200, { count: r.pages.length, total: r.total, pages: keyed(r.pages) }, c.t0, NO_STORE);
    }
    case "POST": {
      const page = await createPage(c.site, p, await c.json());
      return json(201, { count: 1, message: "RESOURCE_CREATED", pages: keyed([page]) }, c.t0, NO_STORE);
    }
    default:
      throw methodNotAllowed("GET, POST");
  }
}

async function single(c: Ctx, id: string): Promise<Response> {
  const p = await c.principal();
  switch (c.request.method) {
    case "HEAD":
    case "GET":
      return json(200, { count: 1, pages: keyed([await readPage(c.site, p, id)]) }, c.t0, NO_STORE);
    case "PUT": {
      const page = await replacePage(c.site, p, id, await c.json());
      return json(200, { count: 1, message: "RESOURCE_UPDATED", pages: keyed([page]) }, c.t0, NO_STORE);
    }
    case "DELETE": {
      const page = await deletePage(c.site, p, id);
      return json(200, { count: 1, message: "RESOURCE_DELETED", pages: keyed([page]) }, c.t0, NO_STORE);
    }
    default:
      throw methodNotAllowed("GET, PUT, DELETE");
  }
}

async function history(c: Ctx, id: string): Promise<Response> {
  if (c.request.method !== "GET" && c.request.method !== "HEAD") throw methodNotAllowed("GET");
  const p = await c.principal();
  const entries = await pageHistory(c.site, p, id);
  const users = await historyAuthors(c.site, p, entries.map((e) => e.user));
  return json(200, { count: entries.length, history: entries, users }, c.t0, NO_STORE);
}

async function restore(c: Ctx, id: string): Promise<Response> {
  if (c.request.method !== "POST") throw methodNotAllowed("POST");
  const body = (await c.json()) as { entry?: unknown };
  // An integer, or absent: null, true, "", "0x1" or [0] are no entry (Number() would make them 0 or 1).
  const raw = body && typeof body === "object" && !Array.isArray(body) ? body.entry : undefined;
  if (raw !== undefined && !(typeof raw === "number" && Number.isSafeInteger(raw))) throw new AppError(400, "INVALID_DATA", "entry must be a history entry id (an integer), or absent");
  const entry = raw as number | undefined;
  const page = await restorePage(c.site, await c.principal(), id, entry);
  return json(200, { count: 1, message: "RESOURCE_UPDATED", pages: keyed([page]) }, c.t0, NO_STORE);
}

export const pageRoutes = (site: Site) =>
  new Elysia({ name: "pages" })
    .all("/api/v1/.pages", ({ request }) => handle(site, request, collection), { parse: "none" })
    .all("/api/v1/.pages/:id", ({ request, params }) => handle(site, request, (c) => single(c, params.id)), { parse: "none" })
    .all("/api/v1/.pages/:id/history", ({ request, params }) => handle(site, request, (c) => history(c, params.id)), { parse: "none" })
    .all("/api/v1/.pages/:id/restore", ({ request, params }) => handle(site, request, (c) => restore(c, params.id)), { parse: "none" });
