/** Totals, pages and single records are cached between commits: they must never be stale. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { notes: { fields: { title: { type: "text" }, secret: { type: "text" } } }, cards: { history: true, fields: { title: { type: "text" } } } } });
  for (let i = 0; i < 5; i++) await s.apiJson("POST", `/api/v1/notes/n${i}`, { title: `t${i}`, secret: "s" });
});
afterAll(async () => { await s.cleanup(); });

const page = async () => (await s.apiJson("GET", "/api/v1/notes?limit=3&sort=uuid|asc")).body!;

test("an update, a create and a delete through the API show in the next identical page", async () => {
  expect((await page()).notes.n0.title).toBe("t0");
  await s.apiJson("PUT", "/api/v1/notes/n0", { title: "changed" });
  expect((await page()).notes.n0.title).toBe("changed");
  await s.apiJson("POST", "/api/v1/notes/a0", { title: "first now" });
  const p = await page();
  expect(Object.keys(p.notes)).toEqual(["a0", "n0", "n1"]);
  expect(p.total).toBe(6);
  await s.apiJson("DELETE", "/api/v1/notes/a0");
  expect((await page()).total).toBe(5);
});

test("one record read again is never stale: after an update, a bulk update, a delete, a restore, another process's write and a delete of all", async () => {
  const title = async (uuid: string) => {
    const r = await s.apiJson("GET", `/api/v1/cards/${uuid}`);
    return r.status === 200 ? r.body!.cards[uuid].title : r.status;
  };
  for (const uuid of ["c1", "c2", "c3"]) expect((await s.apiJson("POST", `/api/v1/cards/${uuid}`, { title: `${uuid} first` })).status).toBe(201);
  for (let i = 0; i < 2; i++) expect(await title("c1")).toBe("c1 first"); // read twice: kept
  await s.apiJson("PUT", "/api/v1/cards/c1", { title: "c1 second" });
  expect(await title("c1")).toBe("c1 second");
  await s.apiJson("POST", "/api/v1/cards/c4", { title: "c4" });
  expect(await title("c1")).toBe("c1 second");
  expect(await title("c2")).toBe("c2 first");
  await s.apiJson("PUT", "/api/v1/cards", { c2: { title: "c2 bulk" }, c3: { title: "c3 bulk" } });
  expect([await title("c2"), await title("c3")]).toEqual(["c2 bulk", "c3 bulk"]);
  expect((await s.apiJson("DELETE", "/api/v1/cards/c2")).status).toBe(200);
  expect(await title("c2")).toBe(404);
  expect((await s.apiJson("POST", "/api/v1/cards/c2/restore")).status).toBe(200);
  expect(await title("c2")).toBe("c2 bulk");
  expect(await title("c3")).toBe("c3 bulk");
  const file = join(s.dir, "cards.json");
  writeFileSync(file, JSON.stringify([{ uuid: "c3", title: "c3 from the shell" }]));
  expect((await cli(s.dir, ["import", "cards", file])).code).toBe(0);
  expect(await title("c3")).toBe("c3 from the shell");
  expect(await title("c4")).toBe("c4");
  expect((await s.apiJson("DELETE", "/api/v1/cards")).status).toBe(200);
  for (const uuid of ["c1", "c2", "c3", "c4"]) expect(await title(uuid)).toBe(404);
});

test("a write by another process (resd import) shows at once", async () => {
  expect((await page()).notes.n1.title).toBe("t1");
  const file = join(s.dir, "rows.json");
  writeFileSync(file, JSON.stringify([{ uuid: "n1", title: "from the shell" }]));
  expect((await cli(s.dir, ["import", "notes", file])).code).toBe(0);
  expect((await page()).notes.n1.title).toBe("from the shell");
});

test("a field newly hidden by the definition disappears from the cached page", async () => {
  expect((await page()).notes.n0.secret).toBe("s");
  writeFileSync(join(s.dir, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text" }, secret: { type: "text" } }, hidden: "secret" }));
  const end = Date.now() + 5000;
  let p = await page();
  while (p.notes.n0.secret !== undefined && Date.now() < end) { await Bun.sleep(50); p = await page(); }
  expect(p.notes.n0.secret).toBeUndefined();
});
