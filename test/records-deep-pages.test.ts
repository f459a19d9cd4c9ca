/** Deep pages (offset past 1,000: row ids first, then the rows) give exactly the rows of the full list. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";

const items = {
  fields: { title: { type: "text" }, year: { type: "number" }, status: { type: "select", options: { a: "A", b: "B", c: "C" } } },
  index: ["status,year"],
};
let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { items } });
  const rows = Array.from({ length: 4000 }, (_, i) => `t${i % 97},${1900 + ((i * 37) % 120)},${"abc"[(i * 7) % 3]}`);
  await Bun.write(join(s.dir, "items.csv"), `title,year,status\n${rows.join("\n")}\n`);
  // --no-match: titles repeat, and the default matching by title would merge the rows.
  const imp = await cli(s.dir, ["import", "items", join(s.dir, "items.csv"), "--no-match"]);
  expect(imp.stdout).toContain("created 4000");
});
afterAll(async () => { await s.cleanup(); });

const uuids = async (q: string) => {
  const r = await s.apiJson("GET", `/api/v1/items?${q}`);
  expect(r.status).toBe(200);
  return { ids: Object.keys(r.body!.items), total: r.body!.total as number | undefined };
};

test("every sort and filter: a deep page is the same slice of the full list", async () => {
  const cases = ["", "sort=year%7Cnumeric%7Cdesc", "filter=status:b", "filter=status:b&sort=year%7Cnumeric%7Casc", "filter=status:!a&sort=title%7Casc", "sort=title%7Ctext%7Cdesc", "filter=year:!1950"];
  for (const q of cases) {
    const all = (await uuids(q)).ids;
    expect(all.length, q).toBeGreaterThan(1040);
    for (const offset of [999, 1000, 1001, 1234, all.length - 5]) {
      if (offset < 0) continue;
      const page = await uuids(`${q}&limit=30&offset=${offset}`);
      expect(page.ids, `${q} offset ${offset}`).toEqual(all.slice(offset, offset + 30));
    }
  }
});

test("past the end of a maintained total: an empty page at once, with the exact total", async () => {
  const r = await uuids("filter=status:a&limit=20&offset=5000");
  expect(r.ids).toEqual([]);
  expect(r.total).toBe((await uuids("filter=status:a")).ids.length);
  expect((await uuids("filter=status:a&limit=20&offset=10")).ids).toHaveLength(20);
});

test("a page that is not full gives the total without a count, and it is exact", async () => {
  const all = (await uuids("filter=year:1950")).ids.length;
  expect(all).toBeGreaterThan(3);
  for (const [limit, offset] of [[100, 0], [100, 2], [all, 0], [all - 1, 1], [2, all - 1]]) {
    const r = await uuids(`filter=year:1950&limit=${limit}&offset=${offset}`);
    expect(r.total, `limit ${limit} offset ${offset}`).toBe(all);
    expect(r.ids.length).toBe(Math.max(0, Math.min(limit, all - offset)));
  }
  const search = await uuids("search=t96&limit=50");
  expect(search.total).toBe(search.ids.length);
});

test("resd migrate gives a table from before the row-id index its index (deep pages in insertion order skip over it)", async () => {
  const { makeSite } = await import("./helpers/site");
  const { Database } = await import("bun:sqlite");
  const dir = makeSite({ defs: { items }, store: "sqlite" }); // a table from before the index is made in the SQLite file
  expect((await cli(dir, ["migrate"])).code).toBe(0);
  const db = new Database(join(dir, "data", "resd.db"));
  db.exec(`DROP INDEX "ix:items:_id"`);
  db.close();
  const r = await cli(dir, ["migrate"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("ix:items:_id");
  const again = new Database(join(dir, "data", "resd.db"), { readonly: true });
  const plan = again.query(`EXPLAIN QUERY PLAN SELECT id FROM "r:items" ORDER BY id LIMIT 20 OFFSET 5000`).all() as { detail: string }[];
  again.close();
  expect(plan.map((p) => p.detail).join(" ")).toContain("ix:items:_id");
  (await import("node:fs")).rmSync(dir, { recursive: true, force: true });
});
