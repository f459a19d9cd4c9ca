/** GET /sitemap.xml through the real server: i18n, published, each, escaping, lastmod, index split. */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { adminSite, makeSite, serve } from "./helpers/site";

const defs = {
  pages: {
    fields: { title: { type: "text", i18n: true, required: true }, slug: { type: "slug", source: "title", i18n: true }, published: { type: "boolean" } },
    languages: ["en", "de"],
    index: ["slug"],
    sitemap: { url: "/[#language#]/[#record.slug#]", published: "published" },
  },
  products: {
    fields: { name: { type: "text", required: true }, slug: { type: "text" }, variants: { type: "text", multi: true } },
    sitemap: { url: { en: "/shop/[#record.slug#]/[#sitemap_item#]", fr: "/boutique/[#record.slug#]/[#sitemap_item#]" }, each: "variants" },
  },
  news: {
    fields: { title: { type: "text" } },
    sitemap: { url: "https://news.example.com/read?id=[#record.uuid#]&ref=<map>" },
  },
  notes: { fields: { title: { type: "text" } } },
};

const ENTITY = "&(?:amp|lt|gt|quot|apos);";
const W3C = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00";
/** The shape the sitemap protocol's schema allows (urlset or sitemapindex), with escaped text only. */
function wellFormed(xml: string, root: "urlset" | "sitemapindex") {
  const item = root === "urlset" ? "url" : "sitemap";
  const text = `(?:[^<>&"']|${ENTITY})+`;
  const re = new RegExp(`^<\\?xml version="1.0" encoding="UTF-8"\\?>\\n<${root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\\n(?:<${item}><loc>${text}</loc>(?:<lastmod>${W3C}</lastmod>)?</${item}>\\n)*</${root}>\\n$`);
  expect(xml).toMatch(re);
}
const locs = (xml: string) => [...xml.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1].replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">"));

let s: Awaited<ReturnType<typeof adminSite>>;
const ids: Record<string, string> = {};
const create = async (resource: string, body: Record<string, unknown>) => {
  const r = await s.apiJson("POST", `/api/v1/${resource}`, body);
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return Object.keys(r.body![resource])[0];
};
const get = (path: string, headers: Record<string, string> = {}) => fetch(s.base + path, { headers });

beforeAll(async () => {
  s = await adminSite({ defs, env: { RESD_PUBLIC_URL: "https://www.example.com/" } });
  ids.both = await create("pages", { title: { en: "About", de: "Über" }, slug: { en: "about", de: "ueber-uns" }, published: true });
  ids.enOnly = await create("pages", { title: { en: "News" }, slug: { en: "news" }, published: true });
  ids.draft = await create("pages", { title: { en: "Draft", de: "Entwurf" }, slug: { en: "draft", de: "entwurf" }, published: false });
  ids.unset = await create("pages", { title: { en: "Unset" }, slug: { en: "unset" } });
  ids.shirt = await create("products", { name: "Shirt", slug: "shirt", variants: ["red", "blue"] });
  ids.bare = await create("products", { name: "Bare", slug: "bare" });
  ids.story = await create("news", { title: "Story" });
  await create("notes", { title: "not in the sitemap" });
});
afterAll(() => s.cleanup());

describe("sitemap", () => {
  test("is public XML listing exactly the opted-in URLs", async () => {
    const res = await get("/sitemap.xml");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/xml; charset=utf-8");
    const xml = await res.text();
    wellFormed(xml, "urlset");
    expect(locs(xml).sort()).toEqual([
      `https://news.example.com/read?id=${ids.story}&ref=<map>`,
      "https://www.example.com/boutique/shirt/blue",
      "https://www.example.com/boutique/shirt/red",
      "https://www.example.com/de/ueber-uns",
      "https://www.example.com/en/about",
      "https://www.example.com/en/news",
      "https://www.example.com/shop/shirt/blue",
      "https://www.example.com/shop/shirt/red",
    ].sort());
  });

  test("escapes XML and dates entries from _modified in W3C format", async () => {
    const xml = await (await get("/sitemap.xml")).text();
    expect(xml).toContain(`<loc>https://news.example.com/read?id=${ids.story}&amp;ref=&lt;map&gt;</loc>`);
    const rec = await s.apiJson("GET", `/api/v1/news/${ids.story}`);
    const modified = rec.body!.news[ids.story]._modified as number;
    const w3c = new Date(modified * 1000).toISOString().replace(/\.\d{3}Z$/, "+00:00");
    expect(xml).toContain(`ref=&lt;map&gt;</loc><lastmod>${w3c}</lastmod>`);
  });

  test("follows changes: publishing a page adds its URLs, unpublishing removes them", async () => {
    expect((await s.apiJson("PUT", `/api/v1/pages/${ids.draft}`, { published: true })).status).toBe(200);
    let xml = await (await get("/sitemap.xml")).text();
    expect(locs(xml)).toContain("https://www.example.com/de/entwurf");
    expect(locs(xml)).toContain("https://www.example.com/en/draft");
    expect((await s.apiJson("PUT", `/api/v1/pages/${ids.draft}`, { published: false })).status).toBe(200);
    xml = await (await get("/sitemap.xml")).text();
    expect(locs(xml).some((l) => l.includes("draft") || l.includes("entwurf"))).toBe(false);
  });

  test("answers 304 to If-Modified-Since when nothing changed", async () => {
    // A change in the current second is announced as the previous one (never a wrong 304): let it pass.
    await Bun.sleep(1100);
    const first = await get("/sitemap.xml");
    const lm = first.headers.get("last-modified")!;
    expect(lm).toBeTruthy();
    const again = await get("/sitemap.xml", { "if-modified-since": lm });
    expect(again.status).toBe(304);
  });

  test("has no parts while it is not split", async () => {
    const r = await get("/sitemap-1.xml");
    expect(r.status).toBe(404);
    expect(((await r.json()) as { message: string }).message).toBe("RESOURCE_NOT_FOUND");
  });
});

describe("sitemap index", () => {
  test("above RESD_SITEMAP_MAX_URLS URLs, /sitemap.xml is an index of /sitemap-N.xml parts; base from the first CORS origin", async () => {
    const origin = "https://app.example.org";
    const split = await serve(s.dir, { env: { RESD_SITEMAP_MAX_URLS: "3", RESD_CORS_ORIGINS: `${origin}, https://other.example.net` } });
    try {
      const index = await (await fetch(`${split.base}/sitemap.xml`)).text();
      wellFormed(index, "sitemapindex");
      const parts = locs(index);
      expect(parts).toEqual([1, 2, 3].map((n) => `${origin}/sitemap-${n}.xml`));
      const all: string[] = [];
      for (const p of parts) {
        const res = await fetch(split.base + new URL(p).pathname);
        expect(res.status).toBe(200);
        const xml = await res.text();
        wellFormed(xml, "urlset");
        expect(locs(xml).length).toBeLessThanOrEqual(3);
        all.push(...locs(xml));
      }
      expect(all.length).toBe(8);
      expect(new Set(all).size).toBe(8);
      expect(all).toContain(`${origin}/en/about`);
      expect((await fetch(`${split.base}/sitemap-4.xml`)).status).toBe(404);
      expect((await fetch(`${split.base}/sitemap-x.xml`)).status).toBe(404);
    } finally {
      await split.stop();
    }
  });

  test("sitemap base: never the request's Host; relative paths when no public URL or origin is configured", async () => {
    const srv = await serve(s.dir);
    try {
      const { port } = new URL(srv.base);
      const forged = await new Promise<string>((resolve, reject) => {
        let text = "";
        const sock = connect(Number(port), "127.0.0.1");
        sock.on("connect", () => sock.write("GET /sitemap.xml HTTP/1.1\r\nHost: evil.example:666\r\nConnection: close\r\n\r\n"));
        sock.on("data", (d) => (text += d.toString()));
        sock.on("end", () => resolve(text));
        sock.on("error", reject);
      });
      expect(forged).toStartWith("HTTP/1.1 200");
      expect(forged).not.toContain("evil.example");
      const xml = await (await fetch(`${srv.base}/sitemap.xml`)).text();
      wellFormed(xml, "urlset");
      const urls = locs(xml);
      expect(urls.length).toBe(8);
      expect(urls).toContain("/en/about");
      // Templates that start with a scheme stay as they are; every other URL is a path.
      for (const u of urls) expect(u.startsWith("/") || u.startsWith("https://news.example.com/")).toBe(true);
      expect(urls.filter((u) => u.startsWith("/")).length).toBeGreaterThan(4);
    } finally {
      await srv.stop();
    }
  });

  test("a site without any sitemap definition answers 404", async () => {
    const dir = makeSite({ defs: { notes: defs.notes } });
    const srv = await serve(dir);
    try {
      const r = await fetch(`${srv.base}/sitemap.xml`);
      expect(r.status).toBe(404);
    } finally {
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
