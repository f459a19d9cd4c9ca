/**
 * Writing route files through the API: create, replace, delete, history and restore. Each write is
 * checked first (URL, symbolic links, text and its allow tags: nothing is written on a refusal), then
 * made under one lock per site: the folders are made and opened there, one by one and never through
 * a symbolic link (folder.ts), the new text goes to a temporary file beside the route file, and a
 * store transaction writes the history entry and, as its last step, renames the file into place (or
 * removes it), so that file and history change together. The anonymous allows are read anew for the
 * next request.
 *
 * History: the store's history table under the reserved resource name `.pages` (no resource can be
 * called that), the page's id as uuid, `{url, text}` as the data — the text after the change, for a
 * delete the text as it was, as records keep it. A route file changed outside resd (by hand, by git)
 * since its last entry gets an entry for the state found (user null, at its modification time)
 * before the API's own, so no text the API replaces is lost.
 */
import { forgetAllows } from "../access/anonymous";
import type { Principal } from "../access/permissions";
import { conflict, denied, notFound } from "../errors";
import { HISTORY_WINDOW_MS, type Site } from "../site";
import type { HistoryAction, HistoryEntry } from "../store/types";
import { asObject } from "../validation/object";
import { RouteFolder } from "./folder";
import { checkInside, checkUrl, isPageId, pageId, ROUTE_FILE } from "./paths";
import { checkText, readRoute } from "./routes";
import { MANAGE_PAGES, mayViewPageFiles, requireManagePages, routeView, VIEW_PAGES } from "./service";
import { pagesIndex } from "./site-index";

/** The history table's resource name for route files: dotted, so no resource can have it. */
export const PAGES_HISTORY = ".pages";

export type PageHistoryView = { id: number; action: HistoryAction; at: number; user: string | null; record: { url: string; text: string } };

const locks = new WeakMap<Site, Promise<unknown>>();

function locked<T>(site: Site, fn: () => Promise<T>): Promise<T> {
  const before = locks.get(site) ?? Promise.resolve();
  const run = before.then(fn, fn);
  locks.set(site, run.catch(() => undefined));
  return run;
}

const nowSec = () => Math.floor(Date.now() / 1000);
const dataOf = (e: HistoryEntry) => JSON.parse(e.data) as { url: string; text: string };

type Found = { text: string; modified: number } | null;

/**
 * Writes `after` (null: removes the file) with its history entry, and the state found on disk
 * first when the history does not end with it.
 */
async function commit(site: Site, p: Principal, url: string, action: HistoryAction, before: Found, after: string | null): Promise<void> {
  const id = pageId(url);
  const history = await site.store.history(PAGES_HISTORY, id);
  const last = history.at(-1);
  const lastText = last && last.action !== "delete" ? dataOf(last).text : null;
  const created = history[0]?._created ?? (before ? before.modified : nowSec());
  // The folder is made and opened here, under the lock, never through a symbolic link (folder.ts).
  const folder = RouteFolder.open(site.config.dir, url, after !== null);
  if (!folder) throw notFound(`${url} has no route file`);
  const tempName = () => `.${ROUTE_FILE}.${crypto.randomUUID()}.tmp`;
  let tmp: string | null = null;
  let changed = false;
  let prune = 0;
  try {
    if (after !== null) {
      folder.checkFileSlot();
      tmp = tempName();
      folder.writeNew(tmp, after);
    }
    await site.store.transaction(async (tx) => {
      const entry = (a: HistoryAction, at: number, user: string | null, text: string) =>
        tx.addHistory({ resource: PAGES_HISTORY, uuid: id, action: a, at, user, data: JSON.stringify({ url, text }), _created: created });
      if (before !== null && before.text !== lastText) await entry(last && last.action !== "delete" ? "update" : "create", before.modified * 1000, null, before.text);
      await entry(action, Date.now(), p.uuid, after ?? before!.text);
      // Last, so that a failure rolls the history back with it.
      if (tmp !== null) folder.rename(tmp, ROUTE_FILE);
      else folder.unlink(ROUTE_FILE);
      changed = true;
    });
    if (after === null) prune = Infinity;
  } catch (e) {
    if (tmp !== null) folder.removeQuietly(tmp);
    if (changed) {
      // The commit failed after the file changed: put the file back as it was.
      if (before !== null) {
        const back = tempName();
        try {
          folder.writeNew(back, before.text);
          folder.rename(back, ROUTE_FILE);
        } catch {
          folder.removeQuietly(back);
        }
      } else folder.removeQuietly(ROUTE_FILE);
    }
    prune = before === null ? folder.made : 0;
    throw e;
  } finally {
    folder.close(prune);
    forgetAllows(site);
    pagesIndex(site).routesChanged();
  }
}

function current(site: Site, url: string): Found {
  const found = readRoute(site.config.dir, url);
  return found ? { text: found.text, modified: found.route.modified } : null;
}

function answer(site: Site, url: string): Record<string, unknown> {
  const found = readRoute(site.config.dir, url);
  if (!found) throw notFound(`${url} has no route file`);
  return routeView(found);
}

/** POST {url, text}: a new route file; 409 when the URL has one. */
export async function createPage(site: Site, p: Principal, body: unknown): Promise<Record<string, unknown>> {
  requireManagePages(p);
  const values = asObject(body);
  const url = checkUrl(values.url);
  checkInside(site.config.dir, url);
  const text = checkText(site, url, values.text);
  return locked(site, async () => {
    if (current(site, url)) throw conflict(`${url} has a route file already; replace it with PUT /api/v1/.pages/${pageId(url)}`);
    await commit(site, p, url, "create", null, text);
    return answer(site, url);
  });
}

async function urlOf(site: Site, id: string): Promise<string> {
  if (!isPageId(id)) throw notFound(`no page has the id ${id} (an id is the md5 of the URL path, 32 hex digits)`);
  const url = await pagesIndex(site).routeUrlNow(id);
  if (url === null) throw notFound(`no route file has the id ${id}`);
  return url;
}

/** PUT {text}: replaces a route file's text; 404 when there is none. */
export async function replacePage(site: Site, p: Principal, id: string, body: unknown): Promise<Record<string, unknown>> {
  requireManagePages(p);
  const values = asObject(body);
  const url = await urlOf(site, id);
  checkInside(site.config.dir, url);
  const text = checkText(site, url, values.text);
  return locked(site, async () => {
    const before = current(site, url);
    if (!before) throw notFound(`${url} has no route file`);
    await commit(site, p, url, "update", before, text);
    return answer(site, url);
  });
}

/** DELETE: removes a route file and the folders it leaves empty; answers the page as it was. */
export async function deletePage(site: Site, p: Principal, id: string): Promise<Record<string, unknown>> {
  requireManagePages(p);
  const url = await urlOf(site, id);
  checkInside(site.config.dir, url);
  return locked(site, async () => {
    const was = readRoute(site.config.dir, url);
    if (!was) throw notFound(`${url} has no route file`);
    await commit(site, p, url, "delete", { text: was.text, modified: was.route.modified }, null);
    return routeView(was);
  });
}

/** The history of a route file, oldest first; a file never changed through the API is its own entry 0. */
export async function pageHistory(site: Site, p: Principal, id: string): Promise<PageHistoryView[]> {
  if (!mayViewPageFiles(p)) throw denied([VIEW_PAGES, MANAGE_PAGES], "the history of route files needs view-.pages");
  if (!isPageId(id)) throw notFound(`no page has the id ${id} (an id is the md5 of the URL path, 32 hex digits)`);
  const entries = await site.store.history(PAGES_HISTORY, id);
  if (entries.length) return entries.map((e) => ({ id: e.id, action: e.action, at: e.at, user: e.user, record: dataOf(e) }));
  const url = await pagesIndex(site).routeUrlNow(id);
  const found = url === null ? null : readRoute(site.config.dir, url);
  if (!found) throw notFound(`no route file and no history has the id ${id}`);
  return [{ id: 0, action: "create", at: found.route.modified * 1000, user: null, record: { url: found.route.url, text: found.text } }];
}

/**
 * POST restore: without an entry, brings back a deleted route file as it was (409 when it exists);
 * with `entry`, puts the file back to that entry's text. Checked like a write: an allow tag that
 * names a resource the site no longer has is refused.
 */
export async function restorePage(site: Site, p: Principal, id: string, entryId?: number): Promise<Record<string, unknown>> {
  requireManagePages(p);
  const entries = await pageHistory(site, p, id);
  const entry = entryId === undefined ? entries.at(-1) : entries.find((e) => e.id === entryId || (entryId === 0 && e.action === "create"));
  if (!entry) throw notFound(entryId !== undefined ? `history entry ${entryId} of page ${id} does not exist` : `page ${id} has no history`);
  const last = entries.at(-1)!;
  if (entryId === undefined && last.action !== "delete") throw conflict(`page ${id} is not deleted; name a history entry to roll back to`);
  if (last.action === "delete" && Date.now() - last.at > HISTORY_WINDOW_MS) throw notFound(`page ${id} was deleted more than 90 days ago`);
  const { url, text } = entry.record;
  checkInside(site.config.dir, url);
  checkText(site, url, text);
  return locked(site, async () => {
    const before = current(site, url);
    if (before && entryId === undefined) throw conflict(`${url} has a route file again; name a history entry to roll back to`);
    await commit(site, p, url, "restore", before, text);
    return answer(site, url);
  });
}
