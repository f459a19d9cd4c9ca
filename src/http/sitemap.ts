/**
 * `GET /sitemap.xml` (and `/sitemap-N.xml` once the sitemap is split into an index). Public: it
 * lists only records the definitions opt in to (published ones when `published` is named).
 * Absolute URLs use RESD_PUBLIC_URL, else the first configured CORS origin, else stay relative —
 * never the request's Host header, which any client sets: it would put a stranger's host into
 * <loc> and make every new value rebuild the sitemap.
 */
import { Elysia } from "elysia";
import type { Site } from "../core/site";
import { notFound } from "../core/errors";
import { buildSitemap, indexXml, urlsetXml } from "../core/sitemap/build";
import { lastModifiedHeader, notModified, notModifiedResponse } from "./conditional";
import { handle, type Ctx } from "./context";

/** The base of absolute URLs; "" keeps them relative to the host serving the sitemap. */
export function sitemapBase(config: { publicUrl: string; corsOrigins: string }): string {
  if (config.publicUrl) return config.publicUrl;
  const first = config.corsOrigins.split(",").map((o) => o.trim()).find((o) => /^https?:\/\/[^\s/]+$/.test(o));
  return first ?? "";
}

async function sitemap(c: Ctx, part: number | null): Promise<Response> {
  const base = sitemapBase(c.site.config);
  const map = await buildSitemap(c.site, base);
  if (!map) throw notFound("no resource definition has a sitemap");
  const lm = lastModifiedHeader(map.lastChange, c.site.store.changeLead?.());
  const split = map.parts.length > 1;
  if (part !== null && (!split || part < 1 || part > map.parts.length)) throw notFound(`sitemap part ${part} does not exist`);
  if (notModified(c.request, map.lastChange)) return notModifiedResponse(lm);
  const xml = part === null ? (split ? indexXml(map, base) : urlsetXml(map.parts[0])) : urlsetXml(map.parts[part - 1]);
  return new Response(xml, { headers: { "content-type": "application/xml; charset=utf-8", "last-modified": lm } });
}

export const sitemapRoutes = (site: Site) =>
  new Elysia({ name: "sitemap" })
    .get("/sitemap.xml", ({ request }) => handle(site, request, (c) => sitemap(c, null)))
    .get("/sitemap-:part", ({ request, params }) => handle(site, request, (c) => {
      const m = /^([1-9]\d{0,6})\.xml$/.exec((params as Record<string, string>).part ?? "");
      if (!m) throw notFound(`no route for ${c.url().pathname}`);
      return sitemap(c, Number(m[1]));
    }));
