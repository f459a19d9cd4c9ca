/**
 * The pages of one site, kept in URL order between requests (see sorted.ts), so that a search as
 * the user types reads no record: route files, extension endpoints and every record page the
 * definitions' `sitemap.url` templates give (the sitemap's own expansion, published or not).
 *
 * How it stays up to date, all applied in one queue (`fresh()`, which every request awaits):
 * - a write of this process: its listener notes the record, which is read anew from the store at
 *   the next request (so the order in which notes and reads arrive never matters);
 * - a commit of another process or instance moves the resource's `lastChange` and the store's
 *   `version()` (SQLite: data_version, which only other connections move; PostgreSQL: NOTIFY, and
 *   every local commit). When `lastChange` moved but `version()` did not, only this process wrote,
 *   and its notes hold it all. Otherwise the records written since the last look (`_modified`,
 *   indexed, with a margin for clocks and commit delays) are read again, at most once a second
 *   per resource; a record whose stored text and time are unchanged keeps its entries. When the
 *   count of records then differs (a delete elsewhere) the resource is built again in the background;
 * - a definition's change (or a first request) builds its resource anew before answering; every
 *   10 minutes a changed resource is built again in the background, in case a change escaped the
 *   above (a transaction elsewhere that took longer than the margin to commit);
 * - route files are walked again at most every 2 s, and at once after a write through the API.
 * A build streams the records and lets other requests in every 1000 rows.
 */
import { relative } from "node:path";
import type { ResourceDef } from "../definitions/types";
import { registryOf } from "../extensions/registry";
import { compileList } from "../query/compile";
import { parseListParams } from "../query/parse";
import type { Site, WriteEvent } from "../site";
import { recordUrls, sitemapDefs, variants } from "../sitemap/build";
import { absolute } from "../sitemap/template";
import type { StoredRecord } from "../store/types";
import { pageId } from "./paths";
import { scanRoutes } from "./routes";
import { entryKey, hayOf, SortedPages, type PageEntry } from "./sorted";

const ROUTES_RESCAN_MS = 2000;
const REBUILD_MS = 10 * 60_000;
/** Seconds before the last change seen from which another process's writes are read again. */
const MARGIN_S = 10;
/** Another process's writes are looked for at most this often per resource. */
const DELTA_EVERY_MS = 1000;
const YIELD_EVERY = 1000;
/** Records read anew by uuid in one query. */
const BATCH = 500;
/** A resource of at most this many records is built again before the answer, not beside it. */
const BUILD_BEFORE_ANSWER = 20_000;

/** What expanding a definition's records needs, worked out once per definition. */
type Expander = { def: ResourceDef; vs: [string | null, string][]; titles: string[]; fallback: string | null };
/** Per record: its entries' keys, and the stored text's checksum and time they were made from. */
type Kept = { keys: string[]; crc: number; modified: number };
type Built = { known: number; version: number; records: Map<string, { entries: PageEntry[]; kept: Kept }>; dirty: Set<string> };
type Building = { dirty: Set<string> };
type ResourceState = {
  sig: string;
  x: Expander;
  records: Map<string, Kept>;
  /** The resource's lastChange these entries reflect, and the store's version() before it was read. */
  known: number;
  version: number;
  /** When another process's writes were last looked for (ms). */
  deltaAt: number;
  /** `known` of the last full build, and when that build ended (ms). */
  builtKnown: number;
  builtAt: number;
  building: Building | null;
};

/** A definition as its record pages depend on it (a reload makes new definition objects). */
const sigs = new WeakMap<ResourceDef, string>();
const nowMs = () => Date.now();
const tick = () => new Promise<void>((r) => setImmediate(r));

function expander(def: ResourceDef): Expander {
  const texts = Object.entries(def.fields).filter(([n, f]) => f.type === "text" && !def.hidden.has(n)).map(([n]) => n);
  return { def, vs: variants(def), titles: [...new Set(["title", "name", "label", ...texts])].filter((n) => !def.hidden.has(n)), fallback: def.raw.languages?.[0] ?? null };
}

/** The title of a record page: title, name or label, else the first text field, in the URL's language. */
function titleOf(x: Expander, record: Record<string, unknown>, language: string | null): string | null {
  for (const key of x.titles) {
    let v = record[key];
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const byLang = v as Record<string, unknown>;
      v = byLang[language ?? x.fallback ?? ""] ?? Object.values(byLang).find((s) => typeof s === "string" && s !== "");
    }
    if (typeof v === "string" && v.trim() !== "") return v.trim();
  }
  return null;
}

/** The entries of one stored record (none when no template renders). */
function recordEntries(x: Expander, row: StoredRecord): PageEntry[] {
  const { def } = x;
  const data = JSON.parse(row.data) as Record<string, unknown>;
  const sm = def.raw.sitemap!;
  const record: Record<string, unknown> = { ...data, uuid: row.uuid, _created: row._created, _modified: row._modified };
  for (const h of def.hidden) delete record[h];
  const published = sm.published ? data[sm.published] === true : true;
  const out: PageEntry[] = [];
  for (const { language, url: rendered } of recordUrls(def, record, x.vs)) {
    const url = absolute(rendered, "");
    const key = entryKey(url, "record", def.name, row.uuid, language);
    if (out.some((e) => e.key === key)) continue; // an `each` item that gives the same URL again
    const title = titleOf(x, record, language);
    const id = pageId(url);
    out.push({
      id, url, kind: "record", resource: def.name, key, hay: hayOf(url, title),
      view: { id, url, kind: "record", resource: def.name, uuid: row.uuid, title, language, _modified: row._modified, published },
    });
  }
  return out;
}

const keptOf = (row: StoredRecord, entries: PageEntry[]): Kept => ({ keys: entries.map((e) => e.key), crc: Bun.hash.crc32(row.data), modified: row._modified });

export class PagesIndex {
  readonly pages = new SortedPages();
  private readonly resources = new Map<string, ResourceState>();
  /** Records written by this process since the last look, per resource. */
  private readonly noted = new Map<string, Set<string>>();
  private routes = new Map<string, PageEntry>();
  private routesAt = -Infinity;
  private endpointsDone = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly site: Site) {
    site.listeners.push((e) => this.note(e));
  }

  private note(e: WriteEvent): void {
    const state = this.resources.get(e.resource);
    if (!state) return;
    let set = this.noted.get(e.resource);
    if (!set) this.noted.set(e.resource, (set = new Set()));
    set.add(e.uuid);
    state.building?.dirty.add(e.uuid);
  }

  /** Route files changed through the API: walked again before the next answer. */
  routesChanged(): void {
    this.routesAt = -Infinity;
  }

  /** Runs `fn` after everything queued before it (the index changes in one order). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Brings the index up to date (see the module comment); answers wait for it. */
  fresh(): Promise<void> {
    return this.serial(async () => {
      this.refreshRoutes();
      this.endpoints();
      const defs = sitemapDefs(this.site).filter((d) => !this.site.refused.has(d.name));
      const names = new Set(defs.map((d) => d.name));
      for (const name of [...this.resources.keys()]) {
        if (names.has(name)) continue;
        this.resources.delete(name);
        this.noted.delete(name);
        this.pages.replaceAll((e) => e.kind === "record" && e.resource === name, []);
      }
      for (const def of defs) await this.freshResource(def);
    });
  }

  private async freshResource(def: ResourceDef): Promise<void> {
    let sig = sigs.get(def);
    if (sig === undefined) sigs.set(def, (sig = JSON.stringify([def.raw, [...def.hidden]])));
    let state = this.resources.get(def.name);
    if (!state || state.sig !== sig) {
      state = { sig, x: expander(def), records: new Map(), known: 0, version: 0, deltaAt: 0, builtKnown: 0, builtAt: 0, building: null };
      this.resources.set(def.name, state);
      this.noted.delete(def.name);
      try {
        await this.swap(state, await this.build(state));
      } catch (e) {
        this.resources.delete(def.name); // the next request tries again
        throw e;
      }
      return;
    }
    const noted = this.noted.get(def.name);
    if (noted?.size) {
      this.noted.delete(def.name);
      await this.reread(state, [...noted]);
    }
    // lastChange first, then version(): a commit elsewhere in between moves version(), and is looked for.
    const last = await this.site.store.lastChange(def.name);
    if (last !== state.known) {
      if (this.site.store.version() === state.version) state.known = last; // only this process wrote: its notes hold it
      else if (nowMs() - state.deltaAt >= DELTA_EVERY_MS) await this.delta(state);
    }
    if (!state.building && state.known !== state.builtKnown && nowMs() - state.builtAt > REBUILD_MS) this.rebuildLater(state);
  }

  /** Streams every record of a resource into new entries. */
  private async build(state: ResourceState): Promise<Built> {
    const building: Building = { dirty: new Set() };
    state.building = building;
    try {
      const version = this.site.store.version();
      const known = await this.site.store.lastChange(state.x.def.name);
      const records: Built["records"] = new Map();
      let n = 0;
      for await (const row of this.site.store.all(state.x.def.name)) {
        if (++n % YIELD_EVERY === 0) await tick();
        const entries = recordEntries(state.x, row);
        records.set(row.uuid, { entries, kept: keptOf(row, entries) });
      }
      return { known, version, records, dirty: building.dirty };
    } finally {
      if (state.building === building) state.building = null;
    }
  }

  /** Puts a built resource in place of its entries, then reads again what was written meanwhile. */
  private async swap(state: ResourceState, built: Built): Promise<void> {
    const name = state.x.def.name;
    if (this.resources.get(name) !== state) return; // the definition changed meanwhile
    const all: PageEntry[] = [];
    state.records = new Map();
    for (const [uuid, { entries, kept }] of built.records) {
      state.records.set(uuid, kept);
      for (const e of entries) all.push(e);
    }
    this.pages.replaceAll((e) => e.kind === "record" && e.resource === name, all);
    // Other processes' writes during the build: lastChange has moved past `known`, and the next look reads them.
    state.known = built.known;
    state.version = built.version;
    state.deltaAt = 0;
    state.builtKnown = built.known;
    state.builtAt = nowMs();
    if (built.dirty.size) await this.reread(state, [...built.dirty]);
  }

  private rebuildLater(state: ResourceState): void {
    state.builtAt = nowMs(); // one attempt per period, whatever happens to it
    void this.build(state)
      .then((built) => this.serial(() => this.swap(state, built)))
      .catch((e) => console.error(`pages: building the record pages of ${state.x.def.name} failed:`, e));
  }

  /** Replaces the entries of one record (null: it is gone); a row as it was when last read keeps them. */
  private put(state: ResourceState, uuid: string, row: StoredRecord | null): void {
    const was = state.records.get(uuid);
    if (row && was && was.modified === row._modified && was.crc === Bun.hash.crc32(row.data)) return;
    for (const key of was?.keys ?? []) this.pages.remove(key);
    if (row === null) {
      state.records.delete(uuid);
      return;
    }
    const entries = recordEntries(state.x, row);
    for (const e of entries) this.pages.add(e);
    state.records.set(uuid, keptOf(row, entries));
  }

  /** Reads records anew by uuid: what the store holds now is what the index holds. */
  private async reread(state: ResourceState, uuids: string[]): Promise<void> {
    for (let i = 0; i < uuids.length; i += BATCH) {
      const batch = uuids.slice(i, i + BATCH);
      const rows = await this.site.store.page(state.x.def.name, { where: `WHERE uuid IN (${batch.map(() => "?").join(", ")})`, args: batch, orderBy: "", limit: null, offset: 0 });
      const found = new Map(rows.map((r) => [r.uuid, r]));
      for (const uuid of batch) this.put(state, uuid, found.get(uuid) ?? null);
    }
  }

  /** Another process wrote: reads the records written since the last look, and checks the count. */
  private async delta(state: ResourceState): Promise<void> {
    const { def } = state.x;
    // version() before lastChange: a commit between the two is looked for again next time.
    const version = this.site.store.version();
    const last = await this.site.store.lastChange(def.name);
    const since = Math.floor(state.known / 1000) - MARGIN_S;
    state.deltaAt = nowMs();
    let n = 0;
    for await (const row of this.site.store.stream(def.name, { where: "WHERE _modified >= ?", args: [since], orderBy: "ORDER BY id", limit: null, offset: 0 })) {
      if (++n % YIELD_EVERY === 0) await tick();
      this.put(state, row.uuid, row);
    }
    state.known = last;
    state.version = version;
    const q = compileList(this.site.store.dialect, def, parseListParams({}));
    const count = await this.site.store.count(def.name, { where: q.where, args: q.args, counted: q.counted });
    // Fewer records than the index holds: deleted elsewhere, built again now (before answering
    // while that takes a fraction of a second). More: created during the look (the next look reads
    // them) or by a transaction slower than the margin: built again at most once a minute.
    const size = state.records.size;
    if (state.building) return;
    if (count < size && size <= BUILD_BEFORE_ANSWER) await this.swap(state, await this.build(state));
    else if (count < size || (count > size && nowMs() - state.builtAt > 60_000)) this.rebuildLater(state);
  }

  private refreshRoutes(): void {
    const now = nowMs();
    if (now - this.routesAt < ROUTES_RESCAN_MS) return;
    this.routesAt = now;
    const next = new Map<string, PageEntry>();
    for (const r of scanRoutes(this.site.config.dir)) {
      const id = pageId(r.url);
      const key = entryKey(r.url, "route");
      next.set(key, { id, url: r.url, kind: "route", resource: null, key, hay: hayOf(r.url, null), view: { id, url: r.url, kind: "route", file: r.file, allows: r.allows, size: r.size, _modified: r.modified } });
    }
    for (const key of this.routes.keys()) if (!next.has(key)) this.pages.remove(key);
    for (const [key, e] of next) {
      const old = this.routes.get(key);
      if (!old || JSON.stringify(old.view) !== JSON.stringify(e.view)) this.pages.add(e);
    }
    this.routes = next;
  }

  /** The routes extensions registered: fixed once the server listens. */
  private endpoints(): void {
    if (this.endpointsDone) return;
    const routes = registryOf(this.site).routes;
    this.endpointsDone = true;
    const byPath = new Map<string, { methods: string[]; file: string }>();
    for (const r of routes) {
      const got = byPath.get(r.path) ?? { methods: [], file: relative(this.site.config.dir, r.file).split("\\").join("/") };
      got.methods.push(r.method);
      byPath.set(r.path, got);
    }
    for (const [url, { methods, file }] of byPath) {
      const id = pageId(url);
      const key = entryKey(url, "endpoint");
      this.pages.add({ id, url, kind: "endpoint", resource: null, key, hay: hayOf(url, null), view: { id, url, kind: "endpoint", methods: methods.sort(), file } });
    }
  }

  /** The route file entry of a URL, as last walked. */
  route(url: string): PageEntry | undefined {
    return this.routes.get(entryKey(url, "route"));
  }

  /** The URL of a route file by its id, the route files walked again first (before a write). */
  routeUrlNow(id: string): Promise<string | null> {
    return this.serial(async () => {
      this.routesAt = -Infinity;
      this.refreshRoutes();
      return this.routeUrl(id);
    });
  }

  /** The URL of a route file by its id (after `fresh`). */
  routeUrl(id: string): string | null {
    for (const e of this.routes.values()) if (e.id === id) return e.url;
    return null;
  }
}

const indexes = new WeakMap<Site, PagesIndex>();

/** The site's pages index, made (and subscribed to writes) on first use. */
export function pagesIndex(site: Site): PagesIndex {
  let index = indexes.get(site);
  if (!index) indexes.set(site, (index = new PagesIndex(site)));
  return index;
}
