/**
 * Search through the index (FTS5 trigram) keeps the documented meaning, and maintained totals stay
 * exact under concurrent writes. Black-box through the real server; COUNT(*) read from the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { adminSite, onPostgres } from "./helpers/site";

const notes = {
  languages: ["en", "de"],
  fields: {
    title: { type: "text", i18n: true },
    status: { type: "select", options: { new: "New", open: "Open", done: "Done" } },
    published: { type: "boolean" },
    n: { type: "number" },
  },
  index: ["status", "published"],
};
const plain = { fields: { name: { type: "text" }, tags: { type: "text", multi: true }, secret: { type: "text" }, code: { type: "number" } }, hidden: "secret" };

let s: Awaited<ReturnType<typeof adminSite>>;
const items = { fields: { title: { type: "text" }, status: { type: "select", options: { new: "New", done: "Done" } } }, index: ["status"] };
beforeAll(async () => { s = await adminSite({ defs: { notes, plain, short: plain, items } }); });
afterAll(async () => { await s.cleanup(); });

const uuids = (body: Record<string, any>, r: string) => Object.keys(body[r]);
const search = async (r: string, term: string) => (await s.apiJson("GET", `/api/v1/${r}?search=${encodeURIComponent(term)}&limit=50`)).body!;

describe("search through the index", () => {
  test("substring, case-insensitive (ASCII), over translations; short terms and wildcards still work", async () => {
    const a = uuids((await s.apiJson("POST", "/api/v1/notes", { title: { en: "The Quick Brown Fox", de: "Der schnelle Fuchs" } })).body!, "notes")[0];
    const b = uuids((await s.apiJson("POST", "/api/v1/notes", { title: { en: "100% sure_thing" } })).body!, "notes")[0];
    const c = uuids((await s.apiJson("POST", "/api/v1/notes", { title: { en: "Ünïcödé Straße", de: "ok" } })).body!, "notes")[0];
    expect(uuids(await search("notes", "quick brown"), "notes")).toEqual([a]);
    expect(uuids(await search("notes", "QUICK"), "notes")).toEqual([a]);
    expect(uuids(await search("notes", "fuchs"), "notes")).toEqual([a]); // the German value
    expect(uuids(await search("notes", "ck"), "notes")).toEqual([a]); // shorter than a trigram
    expect(uuids(await search("notes", "x"), "notes")).toEqual([a]);
    expect(uuids(await search("notes", "0% s"), "notes")).toEqual([b]); // LIKE wildcards are literal
    expect(uuids(await search("notes", "e_t"), "notes")).toEqual([b]);
    expect(uuids(await search("notes", "_"), "notes")).toEqual([b]);
    expect(uuids(await search("notes", "cödé"), "notes")).toEqual([c]); // unicode, exact case
    expect(uuids(await search("notes", "straße"), "notes")).toEqual([c]);
    // Case folding is ASCII-only on SQLite, as before the index: Ü does not match ü. PostgreSQL's
    // ILIKE folds by the database's LC_CTYPE (a UTF-8 locale folds Ü to ü): documented in docs/scale-out.md.
    expect(uuids(await search("notes", "ÜNÏ"), "notes")).toEqual(onPostgres ? [c] : []);
    // A term never spans two values.
    expect(uuids(await search("notes", "Fox Der"), "notes")).toEqual([]);
    expect((await search("notes", "quick")).total).toBe(1);
  });

  test("every visible field without a title; list values; hidden fields are never matched", async () => {
    const a = uuids((await s.apiJson("POST", "/api/v1/plain", { name: "alpha", tags: ["red label", "blue"], secret: "hidden-word", code: 4242 })).body!, "plain")[0];
    expect(uuids(await search("plain", "label"), "plain")).toEqual([a]);
    expect(uuids(await search("plain", "4242"), "plain")).toEqual([a]);
    expect(uuids(await search("plain", "hidden-word"), "plain")).toEqual([]);
    expect(uuids(await search("plain", "tags"), "plain")).toEqual([]); // no JSON text (keys, quotes)
  });

  test("an updated record is found by its new text only; a deleted one not at all", async () => {
    const a = uuids((await s.apiJson("POST", "/api/v1/notes", { title: { en: "before-text" } })).body!, "notes")[0];
    expect(uuids(await search("notes", "before-text"), "notes")).toEqual([a]);
    await s.apiJson("PUT", `/api/v1/notes/${a}`, { title: { en: "after-text" } });
    expect(uuids(await search("notes", "before-text"), "notes")).toEqual([]);
    expect(uuids(await search("notes", "after-text"), "notes")).toEqual([a]);
    await s.apiJson("DELETE", `/api/v1/notes/${a}`);
    expect(uuids(await search("notes", "after-text"), "notes")).toEqual([]);
  });

  test("a common term: pages in order with the exact total", async () => {
    const body: Record<string, unknown>[] = [];
    for (let i = 0; i < 2100; i++) body.push({ name: `common item ${i}`, code: i });
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(body)], { type: "application/json" }), "p.json");
    const imp = await fetch(`${s.base}/api/v1/plain/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
    const page = (await s.apiJson("GET", "/api/v1/plain?search=common&sort=code|desc&limit=3&offset=1")).body!;
    expect(page.total).toBe(2100);
    expect(Object.values(page.plain as Record<string, { code: number }>).map((r) => r.code)).toEqual([2098, 2097, 2096]);
  });
});

describe("a term of several words, one of them in every record", () => {
  test("the same records and totals as reading every record, whatever word the store asks its index for", async () => {
    const rows = Array.from({ length: 1500 }, (_, i) => ({ title: `Record number ${i}`, status: i % 3 ? "new" : "done" }));
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(rows)], { type: "application/json" }), "items.json");
    const imp = await fetch(`${s.base}/api/v1/items/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
    const expected = (term: string, status?: string) =>
      rows.filter((r) => r.title.toLowerCase().includes(term.toLowerCase()) && (!status || r.status === status)).map((r) => r.title).sort();
    const found = async (term: string, extra = "") => {
      const body = (await s.apiJson("GET", `/api/v1/items?search=${encodeURIComponent(term)}&limit=1000${extra}`)).body!;
      return { titles: Object.values(body.items as Record<string, { title: string }>).map((r) => r.title).sort(), total: body.total as number };
    };
    for (const term of ["number 123", "ord number 149", "number 1234", "NUMBER 77", "Record number 1499", "number 12", "cord number 14", "number 99999", "1499", "ber 14"]) {
      const want = expected(term);
      expect({ term, ...(await found(term)) }).toEqual({ term, titles: want, total: want.length });
    }
    const want = expected("number 12", "done");
    expect(await found("number 12", "&filter=status:done")).toEqual({ titles: want, total: want.length });
    // A common term pages in order with its exact total.
    const page = (await s.apiJson("GET", `/api/v1/items?search=${encodeURIComponent("record number")}&limit=2&offset=3`)).body!;
    expect(page.total).toBe(1500);
    expect(Object.values(page.items as Record<string, { title: string }>).map((r) => r.title)).toEqual(["Record number 3", "Record number 4"]);
  });
});

describe("the total of a term too short or too common for the index (counted over the index's text)", () => {
  test("equals the number of records the row-level search finds, for every kind of value", async () => {
    const words = ["alpha", "Beta", "gamma delta", "Ünï", "straße", "x_y", "50% off", "e", "", "A\u001fB"];
    const body: Record<string, unknown>[] = [];
    for (let i = 0; i < 97; i++) {
      body.push({
        name: i % 7 === 0 ? null : `${words[i % words.length]} ${i}`,
        tags: i % 3 === 0 ? [words[(i + 1) % words.length], `t${i}`] : [],
        secret: `zz${i} e a`,
        code: i % 5 === 0 ? null : i * 37,
      });
    }
    const form = new FormData();
    form.append("file", new Blob([JSON.stringify(body)], { type: "application/json" }), "short.json");
    const imp = await fetch(`${s.base}/api/v1/short/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
    for (const term of ["e", "E", "a", "1", "37", "ß", "ün", "Ün", "t", " ", "zz", "%", "_", "B", "f"]) {
      const q = encodeURIComponent(term);
      const unpaged = (await s.apiJson("GET", `/api/v1/short?search=${q}`)).body!;
      const paged = (await s.apiJson("GET", `/api/v1/short?search=${q}&limit=1`)).body!;
      expect({ term, total: paged.total }).toEqual({ term, total: unpaged.count });
    }
    for (const filter of ["code:!74", "code:", "name:!"]) {
      const unpaged = (await s.apiJson("GET", `/api/v1/short?search=e&filter=${encodeURIComponent(filter)}`)).body!;
      const paged = (await s.apiJson("GET", `/api/v1/short?search=e&filter=${encodeURIComponent(filter)}&limit=1`)).body!;
      expect({ filter, total: paged.total }).toEqual({ filter, total: unpaged.count });
    }
    expect((await s.apiJson("GET", "/api/v1/short?search=e&limit=1")).body!.total).toBeGreaterThan(40);
    expect((await s.apiJson("GET", "/api/v1/short?search=zz&limit=1")).body!.total).toBe(0); // hidden
  });
});

describe("maintained totals", () => {
  test("equality filters on indexed select and boolean fields stay exact after concurrent writes", async () => {
    const statuses = ["new", "open", "done"];
    const created: string[] = [];
    await Promise.all(Array.from({ length: 120 }, async (_, i) => {
      const r = await s.apiJson("POST", "/api/v1/notes", { title: { en: `c${i}` }, status: statuses[i % 3], published: i % 2 === 0, n: i });
      created.push(uuids(r.body!, "notes")[0]);
    }));
    // Concurrent updates that move records between values, and deletes.
    await Promise.all(created.slice(0, 40).map((u, i) => s.apiJson("PUT", `/api/v1/notes/${u}`, { status: statuses[(i + 1) % 3], published: i % 3 === 0 })));
    await Promise.all(created.slice(40, 60).map((u) => s.apiJson("DELETE", `/api/v1/notes/${u}`)));
    // Counted here from every stored record (the whole list, no total asked), whichever store holds them.
    const all = Object.values((await s.apiJson("GET", "/api/v1/notes")).body!.notes as Record<string, { status?: string | null; published?: boolean | null }>);
    const exact = (pred: (r: { status?: string | null; published?: boolean | null }) => boolean) => all.filter(pred).length;
    const total = async (q: string) => (await s.apiJson("GET", `/api/v1/notes?limit=1&${q}`)).body!.total;
    for (const st of statuses) {
      expect(await total(`filter=status:${st}`)).toBe(exact((r) => r.status === st));
      expect(await total(`filter=status:!${st}`)).toBe(exact((r) => r.status !== st));
    }
    expect(await total("filter=status:new||done")).toBe(exact((r) => r.status === "new" || r.status === "done"));
    expect(await total("filter=published:1")).toBe(exact((r) => r.published === true));
    expect(await total("filter=published:0")).toBe(exact((r) => !r.published));
    expect(await total("filter=status:")).toBe(exact((r) => r.status == null || r.status === ""));
    expect(await total("offset=0")).toBe(all.length);
  });

  test("writes by another process (a CLI import) are counted too", async () => {
    const before = (await s.apiJson("GET", "/api/v1/notes?limit=1&filter=status:open")).body!.total;
    const { cli } = await import("./helpers/site");
    const file = join(s.dir, "more.csv");
    await Bun.write(file, 'title,status\n"{""en"":""x1""}",open\n"{""en"":""x2""}",open\n"{""en"":""x3""}",done\n');
    const r = await cli(s.dir, ["import", "notes", file]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout + r.stderr).toContain("created 3");
    expect((await s.apiJson("GET", "/api/v1/notes?limit=1&filter=status:open")).body!.total).toBe(before + 2);
  });
});
