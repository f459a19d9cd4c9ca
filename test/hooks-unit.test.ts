/** Pure pieces of the hooks area: sitemap templates, escaping, dates, backoff, events checks. */
import { describe, expect, test } from "bun:test";
import { absolute, render, tagsOf, w3cDate, xmlEscape } from "../src/core/sitemap/template";
import { backoffMs } from "../src/core/jobs/worker";
import { checkEvents, lifecycleEntries } from "../src/core/jobs/enqueue";
import { checkSitemap } from "../src/core/sitemap/build";
import { buildDefinition } from "../src/core/definitions/load";
import type { DefinitionFile } from "../src/core/definitions/types";

const scope = (record: Record<string, unknown>, language: string | null = null, item?: unknown) => ({ record, language, item, languageFallback: "en" });

describe("sitemap templates", () => {
  const cases: [string, ReturnType<typeof scope>, string | null][] = [
    ["/a/[#record.slug#]", scope({ slug: "hello" }), "/a/hello"],
    ["/[#language#]/[#record.slug#]", scope({ slug: { en: "hi", de: "hallo" } }, "de"), "/de/hallo"],
    ["/x/[#record.slug#]", scope({ slug: { en: "hi", de: "hallo" } }), "/x/hi"], // fallback: first language
    ["/[#language#]/[#record.slug#]", scope({ slug: { en: "hi" } }, "de"), null], // no German slug: left out
    ["/a/[#record.missing#]", scope({}), null],
    ["/a/[#record.slug#]", scope({ slug: "" }), null],
    ["/a/[#record.title#]", scope({ title: "a b/c?d&e" }), "/a/a%20b/c%3Fd%26e"],
    ["/p/[#record.uuid#]/[#sitemap_item#]", scope({ uuid: "u1" }, null, "red"), "/p/u1/red"],
    ["/p/[#sitemap_item.code#]", scope({}, null, { code: 7 }), "/p/7"],
    ["/n/[# record.n #]", scope({ n: 3 }), "/n/3"],
  ];
  for (const [tpl, sc, want] of cases) test(`${tpl} → ${want}`, () => expect(render(tpl, sc)).toBe(want));

  test("tags and absolute URLs", () => {
    expect(tagsOf("/[#language#]/[#record.slug#]/[#sitemap_item.x#]")).toEqual(["language", "record.slug", "sitemap_item.x"]);
    expect(absolute("/a", "https://ex.org/")).toBe("https://ex.org/a");
    expect(absolute("a", "https://ex.org")).toBe("https://ex.org/a");
    expect(absolute("https://other.org/a", "https://ex.org")).toBe("https://other.org/a");
  });

  test("XML escaping and W3C dates", () => {
    expect(xmlEscape(`a&b<c>"d'`)).toBe("a&amp;b&lt;c&gt;&quot;d&apos;");
    expect(w3cDate(0)).toBe("1970-01-01T00:00:00+00:00");
    expect(w3cDate(1700000000)).toBe("2023-11-14T22:13:20+00:00");
  });
});

describe("backoff", () => {
  test("doubles per attempt from the base and stops at one hour", () => {
    expect([1, 2, 3, 4].map((a) => backoffMs(10_000, a))).toEqual([10_000, 20_000, 40_000, 80_000]);
    expect(backoffMs(10_000, 30)).toBe(3600_000);
  });
});

describe("definition checks", () => {
  const def = (raw: Partial<DefinitionFile>) => buildDefinition("things", { fields: { title: { type: "text" }, slug: { type: "text" }, secret: { type: "text" }, on: { type: "boolean" }, tags: { type: "text", multi: true } }, hidden: "secret", ...raw } as DefinitionFile, null);

  test("events: lists split into named events and jobs; malformed keys are named", () => {
    expect(lifecycleEntries(def({ events: { create: ["a", "job:b", "job:c"] } }), "create")).toEqual({ events: ["a"], jobs: ["b", "c"] });
    expect(checkEvents(def({ events: { create: ["ok", "job:fine"] } }))).toEqual([]);
    expect(checkEvents(def({ events: { create: "a" } as never })).join()).toContain("events.create must be a list");
    expect(checkEvents(def({ events: { save: ["a"] } as never })).join()).toContain("events.save: unknown key");
    expect(checkEvents(def({ events: { create: ["bad name"] } })).join()).toContain('"bad name"');
  });

  test("sitemap: fields must exist and be visible; language needs languages; sitemap_item needs each", () => {
    expect(checkSitemap(def({ sitemap: { url: "/t/[#record.slug#]", published: "on", each: "tags" } }))).toEqual([]);
    expect(checkSitemap(def({ sitemap: { url: "/t/[#record.secret#]" } })).join()).toContain("not a visible field");
    expect(checkSitemap(def({ sitemap: { url: "/t/[#record.slug#]", published: "title" } })).join()).toContain("visible boolean field");
    expect(checkSitemap(def({ sitemap: { url: "/[#language#]/x" } })).join()).toContain("no `languages`");
    expect(checkSitemap(def({ sitemap: { url: "/[#sitemap_item#]" } })).join()).toContain("needs sitemap.each");
    expect(checkSitemap(def({ sitemap: { url: "/[#page.x#]" } })).join()).toContain("unknown tag");
    expect(checkSitemap(def({ sitemap: { url: {} } })).join()).toContain("sitemap.url must be");
  });
});
