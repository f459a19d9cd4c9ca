import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes: { fields: { title: { type: "text" } } } } }); });
afterAll(async () => { await s.cleanup(); });

const until = async (fn: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (await fn()) return true; await Bun.sleep(50); }
  return false;
};

test("a new or changed definition is served without a restart", async () => {
  expect((await s.apiJson("GET", "/api/v1/books")).status).toBe(404);
  writeFileSync(join(s.dir, "resources/books.json"), JSON.stringify({ fields: { title: { type: "text", required: true } } }));
  expect(await until(async () => (await s.apiJson("GET", "/api/v1/books")).status === 200)).toBe(true);
  expect((await s.apiJson("POST", "/api/v1/books", { title: "Dune" })).status).toBe(201);
  writeFileSync(join(s.dir, "resources/books.json"), JSON.stringify({ fields: { title: { type: "text", required: true }, year: { type: "number", max: 2100 } } }));
  expect(await until(async () => (await s.apiJson("POST", "/api/v1/books", { title: "x", year: 3000 })).status === 422)).toBe(true);
});

test("an invalid edit is reported and the definitions in force stay", async () => {
  writeFileSync(join(s.dir, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "nonsense" } } }));
  // At error level, on stderr: a rejected definition is what an operator must notice.
  expect(await until(async () => s.errors().includes("definitions not reloaded"))).toBe(true);
  const line = s.errors().split("\n").find((l) => l.includes("definitions not reloaded"))!;
  expect(line).toMatch(/^\S+ ERROR definitions not reloaded/);
  expect(line).toContain('field \\"title\\": unknown type');
  const r = await s.apiJson("POST", "/api/v1/notes", { title: "still served" });
  expect(r.status).toBe(201);
  writeFileSync(join(s.dir, "resources/notes.json"), JSON.stringify({ fields: { title: { type: "text" } } }));
});

test("a resource created by resd import from the shell is served at once", async () => {
  const file = join(s.dir, "authors.json");
  writeFileSync(file, JSON.stringify({ _meta: { fields: { name: { type: "text" } } }, a1: { uuid: "a1", name: "Le Guin" } }));
  const r = await cli(s.dir, ["import", "authors", file, "--json"]);
  expect(r.code).toBe(0);
  expect(await until(async () => (await s.apiJson("GET", "/api/v1/authors/a1")).status === 200)).toBe(true);
});
