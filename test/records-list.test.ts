import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { notes, pages } from "./fixtures/defs";

let s: Awaited<ReturnType<typeof adminSite>>;
const STATUSES = ["new", "open", "done", "draft"];
beforeAll(async () => {
  s = await adminSite({ defs: { notes, pages, plain: { fields: { name: { type: "text" }, city: { type: "text" } } } } });
  const bulk: Record<string, unknown> = {};
  for (let i = 0; i < 40; i++) {
    const r = await s.apiJson("POST", `/api/v1/notes/n${String(i).padStart(2, "0")}`, {
      title: i % 10 === 0 ? `Special title ${i}` : `Note ${i}`,
      year: 1950 + ((i * 7) % 30),
      status: STATUSES[i % 4],
      published: i % 2 === 0,
      tags: i % 3 === 0 ? ["a", "b"] : ["c"],
    });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  }
  await s.apiJson("POST", "/api/v1/plain/p1", { name: "Alice", city: "Berlin" });
  await s.apiJson("POST", "/api/v1/plain/p2", { name: "Bob", city: "Paris" });
  void bulk;
});
afterAll(async () => { await s.cleanup(); });

const list = async (q: string) => {
  const r = await s.apiJson("GET", `/api/v1/notes?${q}`);
  return { ...r, recs: Object.values((r.body?.notes ?? {}) as Record<string, Record<string, any>>) };
};

describe("list", () => {
  test("unpaged: every record, count, no total", async () => {
    const r = await s.apiJson("GET", "/api/v1/notes");
    expect(r.status).toBe(200);
    expect(r.body!.count).toBe(40);
    expect(r.body!.total).toBeUndefined();
    expect(Object.keys(r.body!.notes)).toHaveLength(40);
  });

  test("limit and offset page through; total is the number before the cut", async () => {
    const a = await list("limit=15&offset=0&sort=uuid|asc");
    const b = await list("limit=15&offset=15&sort=uuid|asc");
    const c = await list("limit=15&offset=30&sort=uuid|asc");
    expect([a.body!.count, b.body!.count, c.body!.count]).toEqual([15, 15, 10]);
    expect(a.body!.total).toBe(40);
    const all = [...a.recs, ...b.recs, ...c.recs].map((r) => r.uuid);
    expect(new Set(all).size).toBe(40);
    expect(all).toEqual([...all].sort());
  });

  test("sort: field|order, field|flag|order, several entries, default from the definition", async () => {
    const d = await list("sort=year|numeric|desc,uuid|asc&limit=40");
    const years = d.recs.map((r) => r.year);
    expect(years).toEqual([...years].sort((x, y) => y - x));
    for (let i = 1; i < d.recs.length; i++) {
      if (d.recs[i].year === d.recs[i - 1].year) expect(d.recs[i].uuid > d.recs[i - 1].uuid).toBe(true);
    }
    const t = await list("sort=title|text|asc&limit=40");
    const titles = t.recs.map((r) => r.title.toLowerCase());
    expect(titles).toEqual([...titles].sort());
    const def = await s.apiJson("GET", "/api/v1/notes");
    const dy = Object.values(def.body!.notes as Record<string, any>).map((r) => r.year);
    expect(dy).toEqual([...dy].sort((x, y) => x - y));
    expect((await list("sort=year|sideways")).status).toBe(400);
    expect((await list("sort=year|weird|asc")).status).toBe(400);
  });

  test("filter: AND, negation, alternatives, booleans, multi values", async () => {
    const n = await list("filter=status:new&limit=100");
    expect(n.body!.total).toBe(10);
    expect(n.recs.every((r) => r.status === "new")).toBe(true);
    const not = await list("filter=status:!new&limit=100");
    expect(not.body!.total).toBe(30);
    const alt = await list("filter=status:new||open&limit=100");
    expect(alt.body!.total).toBe(20);
    const notAlt = await list("filter=status:!new||open&limit=100");
    expect(notAlt.body!.total).toBe(20);
    const and = await list("filter=status:new,published:1&limit=100");
    expect(and.recs.every((r) => r.status === "new" && r.published === true)).toBe(true);
    expect(and.body!.total).toBe(10);
    const unpub = await list("filter=published:0&limit=100");
    expect(unpub.body!.total).toBe(20);
    const tag = await list("filter=tags:a&limit=100");
    expect(tag.body!.total).toBe(14);
    const year = await list(`filter=year:${1950 + 7}&limit=100`);
    expect(year.recs.every((r) => r.year === 1957)).toBe(true);
    expect((await list("filter=year:abc")).status).toBe(400);
  });

  test("system fields work in sort and filter", async () => {
    const r = await list("filter=uuid:n05");
    expect(r.recs.map((x) => x.uuid)).toEqual(["n05"]);
    const c = await list("sort=_created|desc,uuid|desc&limit=3");
    expect(c.body!.count).toBe(3);
  });

  test("search: the title field when there is one, otherwise any field", async () => {
    const r = await s.apiJson("GET", "/api/v1/notes?search=special");
    expect(r.body!.count).toBe(4);
    expect(r.body!.total).toBeUndefined();
    const p = await s.apiJson("GET", "/api/v1/plain?search=pari");
    expect(Object.keys(p.body!.plain)).toEqual(["p2"]);
    const pct = await s.apiJson("GET", "/api/v1/notes?search=%25");
    expect(pct.body!.count).toBe(0);
  });

  test("search looks at the values of translated fields, not at their language keys", async () => {
    await s.apiJson("POST", "/api/v1/pages/p-garden", { title: { en: "Garden", de: "Garten" } });
    await s.apiJson("POST", "/api/v1/pages/p-house", { title: { en: "House", de: "Haus" } });
    const en = await s.apiJson("GET", "/api/v1/pages?search=en");
    expect(Object.keys(en.body!.pages)).toEqual(["p-garden"]); // "Garden"/"Garten", not the key "en"
    const haus = await s.apiJson("GET", "/api/v1/pages?search=HAUS");
    expect(Object.keys(haus.body!.pages)).toEqual(["p-house"]);
  });

  test("a translated field sorts by the first language", async () => {
    // Stored with "de" first: ordered by the JSON text it would come first; by English, last.
    await s.apiJson("POST", "/api/v1/pages/p-zucchini", { title: { de: "Apfel", en: "Zucchini" } });
    const asc = await s.apiJson("GET", "/api/v1/pages?sort=title|text|asc");
    expect(Object.values(asc.body!.pages).map((p: any) => p.title.en)).toEqual(["Garden", "House", "Zucchini"]);
    const desc = await s.apiJson("GET", "/api/v1/pages?sort=title|desc");
    expect(Object.values(desc.body!.pages).map((p: any) => p.title.en)).toEqual(["Zucchini", "House", "Garden"]);
  });

  test("sort or filter on a hidden, encrypted or unknown field is 400", async () => {
    for (const q of ["sort=secret|asc", "filter=secret:x", "filter=pin:1", "sort=nosuch|asc", "filter=nosuch:1", "filter=password:x"]) {
      const r = await list(q);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ message: "INVALID_DATA", success: false });
    }
  });

  test("bad limit or offset is 400", async () => {
    expect((await list("limit=-1")).status).toBe(400);
    expect((await list("offset=x")).status).toBe(400);
  });

  test("a large unpaged list streams valid JSON", async () => {
    const body: Record<string, unknown> = {};
    for (let i = 0; i < 3000; i++) body[`bulk-${i}`] = { value: `v${i}` };
    const res = await s.apiJson("PUT", "/api/v1/kv", body);
    expect(res.status).toBe(404); // kv is not defined
    const make = [];
    for (let i = 0; i < 3000; i++) make.push({ name: `person ${i}`, city: "x".repeat(50) });
    // 3,000 creates through the API, 50 at a time.
    for (let i = 0; i < make.length; i += 50) await Promise.all(make.slice(i, i + 50).map((m) => s.apiJson("POST", "/api/v1/plain", m)));
    const r = await s.api("GET", "/api/v1/plain");
    const text = await r.text();
    const parsed = JSON.parse(text);
    expect(parsed.count).toBe(3002);
    expect(Object.keys(parsed.plain)).toHaveLength(3002);
    expect(parsed.success).toBe(true);
    const big = await s.apiJson("GET", "/api/v1/plain?limit=2500&offset=100");
    expect(big.body!.count).toBe(2500);
    expect(big.body!.total).toBe(3002);
  });
});
