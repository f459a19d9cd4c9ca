/**
 * `.pages`: the site's pages keyed by URL path, for the editing tools. Who sees what:
 * - route files and endpoints: `view-.pages` or `manage-.pages` (or `(all)`);
 * - record pages: `view-<resource>` of their resource (a legacy per-record grant shows that record);
 * - writing route files (they can open anonymous writes): `manage-.pages` or `(all)` only.
 * Anonymous visitors never hold the `.pages` feature, whatever an allow tag says. A resource
 * that happens to be called `pages` has nothing to do with any of this.
 */
import { can, hasPermission, type Principal } from "../access/permissions";
import { badRequest, denied, notFound } from "../errors";
import type { Site } from "../site";
import { sitemapDefs } from "../sitemap/build";
import { isPageId, pageId } from "./paths";
import { readRoute } from "./routes";
import { pagesIndex } from "./site-index";
import { searchTerm, type PageEntry, type PageKind } from "./sorted";

export const VIEW_PAGES = "view-.pages";
export const MANAGE_PAGES = "manage-.pages";
const KINDS: PageKind[] = ["route", "endpoint", "record"];
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** May the caller see route files and endpoints? */
export const mayViewPageFiles = (p: Principal) => p.kind !== "anonymous" && hasPermission(p, VIEW_PAGES, MANAGE_PAGES);
/** May the caller write route files? */
export const mayManagePages = (p: Principal) => p.kind !== "anonymous" && hasPermission(p, MANAGE_PAGES);

export function requireManagePages(p: Principal): void {
  if (!mayManagePages(p)) throw denied([MANAGE_PAGES], "writing route files needs manage-.pages (they can open anonymous writes)");
}

type Viewer = true | ((uuid: string) => boolean);

/** Per resource with record pages: whether the caller sees all of them, or which. */
function recordViewers(site: Site, p: Principal): Map<string, Viewer> {
  const out = new Map<string, Viewer>();
  for (const def of sitemapDefs(site)) {
    if (can(p, def.name, "view")) out.set(def.name, true);
    else if ([...p.permissions].some((x) => x.startsWith(`api_get_${def.name}_`))) out.set(def.name, (uuid) => can(p, def.name, "view", uuid));
  }
  return out;
}

/** Does the caller see anything of `.pages`? (The OpenAPI document lists it only then.) */
export const mayListPages = (site: Site, p: Principal) => mayViewPageFiles(p) || recordViewers(site, p).size > 0;

function visibility(site: Site, p: Principal): (e: PageEntry) => boolean {
  const files = mayViewPageFiles(p);
  const viewers = recordViewers(site, p);
  if (!files && viewers.size === 0) {
    throw denied([VIEW_PAGES, MANAGE_PAGES, ...[...sitemapDefs(site)].map((d) => `view-${d.name}`)], "the pages need view-.pages, or view-<resource> of a resource with record pages");
  }
  return (e) => {
    if (e.kind !== "record") return files;
    const v = viewers.get(e.resource!);
    return v === true || (v !== undefined && v(e.view.uuid as string));
  };
}

export type PageQuery = { kind?: string; resource?: string; search?: string; limit?: string; offset?: string };

function count(name: string, raw: string | undefined, dflt: number, max: number): number {
  if (raw === undefined || raw === "") return dflt;
  if (!/^\d+$/.test(raw)) throw badRequest(`${name} must be a whole number`);
  const n = Number(raw);
  if (n > max) throw badRequest(`${name} may be at most ${max}`);
  return n;
}

/**
 * One entry per URL path the caller may see, in URL order (where a route file, an endpoint and a
 * record page share a URL, the first of these kinds the caller sees stands for it).
 */
export async function listPages(site: Site, p: Principal, q: PageQuery): Promise<{ total: number; pages: Record<string, unknown>[] }> {
  const visible = visibility(site, p);
  const kind = q.kind === undefined || q.kind === "" ? null : q.kind;
  if (kind !== null && !(KINDS as string[]).includes(kind)) throw badRequest(`kind must be one of ${KINDS.join(", ")}`);
  const resource = q.resource === undefined || q.resource === "" ? null : q.resource;
  const limit = count("limit", q.limit, DEFAULT_LIMIT, MAX_LIMIT);
  const offset = count("offset", q.offset, 0, Number.MAX_SAFE_INTEGER);
  const term = searchTerm(q.search ?? "");
  const index = pagesIndex(site);
  await index.fresh();
  let total = 0;
  let lastUrl: string | null = null;
  const pages: Record<string, unknown>[] = [];
  index.pages.each(term, (e) => {
    if ((kind !== null && e.kind !== kind) || (resource !== null && e.resource !== resource) || (e.dup && e.url === lastUrl) || !visible(e)) return;
    lastUrl = e.url;
    if (total >= offset && pages.length < limit) pages.push(e.view);
    total++;
  });
  return { total, pages };
}

/** One page by id: a route file with its text, else the first entry of that URL the caller sees. */
export async function readPage(site: Site, p: Principal, id: string): Promise<Record<string, unknown>> {
  const visible = visibility(site, p);
  if (!isPageId(id)) throw notFound(`no page has the id ${id} (an id is the md5 of the URL path, 32 hex digits)`);
  const index = pagesIndex(site);
  await index.fresh();
  if (mayViewPageFiles(p)) {
    const url = index.routeUrl(id);
    const found = url === null ? null : readRoute(site.config.dir, url);
    if (found) return routeView(found);
  }
  let hit: PageEntry | null = null;
  index.pages.each("", (e) => {
    if (hit === null && e.id === id && visible(e)) hit = e;
  });
  if (hit === null) throw notFound(`no page with id ${id}`);
  return (hit as PageEntry).view;
}

export function routeView(found: NonNullable<ReturnType<typeof readRoute>>): Record<string, unknown> {
  const { route, text } = found;
  return { id: pageId(route.url), url: route.url, kind: "route", file: route.file, allows: route.allows, size: route.size, _modified: route.modified, text };
}
