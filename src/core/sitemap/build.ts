/**
 * The sitemap: one URL per record (per language, per `each` item) of every definition with a
 * `sitemap` key, published records only when `published` names a field. Built from a stream of
 * rows and cached until a sitemap resource changes. Public by nature: it lists only what the
 * definitions opt in to, and never reads hidden fields.
 */
import type { ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import type { Site } from "../site";
import { compileList } from "../query/compile";
import { parseListParams } from "../query/parse";
import { absolute, render, tagsOf, w3cDate, xmlEscape } from "./template";

export type SitemapUrl = { loc: string; lastmod: string };
export type Sitemap = {
  /** Each part holds at most `sitemapMaxUrls` URLs; more than one part means a sitemap index. */
  parts: SitemapUrl[][];
  /** Milliseconds of the newest change in any sitemap resource. */
  lastChange: number;
};

const NS = "http://www.sitemaps.org/schemas/sitemap/0.9";
const YIELD_EVERY = 1000;

/** Problems with a definition's `sitemap` key, as sentences; empty when fine or absent. */
export function checkSitemap(def: ResourceDef): string[] {
  const sm = def.raw.sitemap as unknown;
  if (sm === undefined) return [];
  if (!sm || typeof sm !== "object" || Array.isArray(sm)) return ["`sitemap` must be an object with `url`"];
  const { url, published, each } = sm as Record<string, unknown>;
  const problems: string[] = [];
  const templates: string[] = [];
  if (typeof url === "string" && url !== "") templates.push(url);
  else if (url && typeof url === "object" && !Array.isArray(url) && Object.keys(url).length > 0) {
    for (const [lang, t] of Object.entries(url)) {
      if (typeof t !== "string" || t === "") problems.push(`sitemap.url.${lang} must be a URL template`);
      else templates.push(t);
    }
  } else problems.push("sitemap.url must be a URL template or an object of templates keyed by language");
  const visible = (f: string) => (isSystemField(f) || f in def.fields) && !def.hidden.has(f);
  if (published !== undefined) {
    if (typeof published !== "string" || !visible(published) || def.fields[published]?.type !== "boolean") problems.push("sitemap.published must name a visible boolean field");
  }
  if (each !== undefined && (typeof each !== "string" || !(each in def.fields) || def.hidden.has(each))) problems.push("sitemap.each must name a visible field holding a list");
  for (const t of templates) {
    for (const tag of tagsOf(t)) {
      const [head, field] = tag.split(".");
      if (tag === "language") {
        if (typeof url === "string" && !def.raw.languages?.length) problems.push("sitemap.url uses [#language#] but the definition has no `languages`");
      } else if (head === "record" && field !== undefined) {
        if (!visible(field)) problems.push(`sitemap.url: [#${tag}#] is not a visible field of ${def.name}`);
      } else if (head === "sitemap_item") {
        if (each === undefined) problems.push(`sitemap.url: [#${tag}#] needs sitemap.each`);
      } else problems.push(`sitemap.url: unknown tag [#${tag}#] (record.<field>, language, sitemap_item)`);
    }
  }
  return problems;
}

export const sitemapDefs = (site: Site) =>
  [...site.defs.values()].filter((d) => d.raw.sitemap !== undefined && !d.internal).sort((a, b) => a.name.localeCompare(b.name));

/** (language, template) pairs of one definition: one URL per pair for each record (and item). */
export function variants(def: ResourceDef): [string | null, string][] {
  const url = def.raw.sitemap!.url;
  if (typeof url !== "string") return Object.entries(url);
  return /\[#\s*language\s*#\]/.test(url) ? (def.raw.languages ?? []).map((l) => [l, url]) : [[null, url]];
}

/**
 * The URLs one record gives (`record`: its visible fields with uuid, _created, _modified): one per
 * `each` item and language whose tags all have values, as the template renders them (not yet
 * joined to a base). Also the record pages of the editing tools (src/core/pages).
 */
export function recordUrls(def: ResourceDef, record: Record<string, unknown>, vs = variants(def)): { language: string | null; url: string }[] {
  const sm = def.raw.sitemap!;
  const fallback = def.raw.languages?.[0] ?? null;
  let items: unknown[] = [undefined];
  if (sm.each) {
    const list = record[sm.each];
    items = Array.isArray(list) ? list : [];
  }
  const out: { language: string | null; url: string }[] = [];
  for (const item of items) {
    for (const [language, template] of vs) {
      const url = render(template, { record, language, item, languageFallback: fallback });
      if (url !== null) out.push({ language, url });
    }
  }
  return out;
}

async function urlsOf(site: Site, def: ResourceDef, base: string, out: SitemapUrl[]): Promise<void> {
  const sm = def.raw.sitemap!;
  const q = parseListParams({ filter: sm.published ? `${sm.published}:1` : undefined, sort: "_created|asc" });
  const vs = variants(def);
  let n = 0;
  for await (const row of site.store.stream(def.name, compileList(site.store.dialect, def, q))) {
    // A large sitemap takes most of a second to build: let other requests in between batches.
    if (++n % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    const data = JSON.parse(row.data) as Record<string, unknown>;
    if (sm.published && data[sm.published] !== true) continue;
    const record: Record<string, unknown> = { ...data, uuid: row.uuid, _created: row._created, _modified: row._modified };
    for (const h of def.hidden) delete record[h];
    const lastmod = w3cDate(row._modified);
    for (const { url } of recordUrls(def, record, vs)) out.push({ loc: absolute(url, base), lastmod });
  }
}

const cache = new WeakMap<Site, { key: string; map: Promise<Sitemap> }>();

/**
 * The site's sitemap for a base URL; rebuilt only when a sitemap resource or definition changed.
 * Requests that arrive during a build share it.
 */
export async function buildSitemap(site: Site, base: string): Promise<Sitemap | null> {
  const defs = sitemapDefs(site);
  if (!defs.length) return null;
  const changes = await Promise.all(defs.map((d) => site.store.lastChange(d.name)));
  const key = JSON.stringify([base, site.config.sitemapMaxUrls, changes, defs.map((d) => [d.name, d.raw.sitemap, d.raw.languages])]);
  const hit = cache.get(site);
  if (hit && hit.key === key) return hit.map;
  const map = (async () => {
    const all: SitemapUrl[] = [];
    for (const def of defs) await urlsOf(site, def, base, all);
    const max = site.config.sitemapMaxUrls;
    const parts: SitemapUrl[][] = [];
    for (let i = 0; i < all.length; i += max) parts.push(all.slice(i, i + max));
    return { parts: parts.length ? parts : [[]], lastChange: Math.max(0, ...changes) };
  })();
  cache.set(site, { key, map });
  map.catch(() => cache.delete(site));
  return map;
}

export function urlsetXml(urls: SitemapUrl[]): string {
  const body = urls.map((u) => `<url><loc>${xmlEscape(u.loc)}</loc><lastmod>${u.lastmod}</lastmod></url>`).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${NS}">\n${body}${body ? "\n" : ""}</urlset>\n`;
}

/** A sitemap index pointing at /sitemap-1.xml … for a sitemap split into parts. */
export function indexXml(map: Sitemap, base: string): string {
  const body = map.parts.map((part, i) => {
    const newest = part.reduce((m, u) => (u.lastmod > m ? u.lastmod : m), "");
    return `<sitemap><loc>${xmlEscape(absolute(`/sitemap-${i + 1}.xml`, base))}</loc>${newest ? `<lastmod>${newest}</lastmod>` : ""}</sitemap>`;
  }).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="${NS}">\n${body}\n</sitemapindex>\n`;
}
