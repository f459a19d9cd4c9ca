/** Totals and pages are cached until anything commits: they must never be stale. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { notes: { fields: { title: { type: "text" }, secret: { type: "text" } } } } });
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
