/**
 * A typed client generated from the admin's OpenAPI document compiles and works against the real
 * server: openapi-typescript (on TypeScript 5, which it supports; resd itself is on 7) and
 * openapi-fetch; create, read, list, update and a typed 422. The document also has no error under
 * Redocly's recommended rules.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, ROOT } from "./helpers/site";


const notes = { fields: { title: { type: "text", required: true }, n: { type: "number", max: 10 } } };
let s: Awaited<ReturnType<typeof adminSite>>;
let dir: string;
beforeAll(async () => {
  s = await adminSite({ defs: { notes } });
  // Inside the repository, so that the program finds openapi-fetch in node_modules.
  dir = mkdtempSync(join(ROOT, ".test-client-"));
});
afterAll(async () => {
  await s.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const PROGRAM = `import createClient from "openapi-fetch";
import type { paths } from "./api";

const client = createClient<paths>({ baseUrl: process.env.BASE, headers: { authorization: \`Bearer \${process.env.TOKEN}\` } });
const created = await client.POST("/api/v1/notes", { body: { title: "typed" } });
if (!created.data) throw new Error("create failed");
const uuid: string = Object.keys(created.data.notes ?? {})[0];
const read = await client.GET("/api/v1/notes/{uuid}", { params: { path: { uuid } } });
const title: string | undefined = read.data?.notes?.[uuid]?.title;
const list = await client.GET("/api/v1/notes", { params: { query: { limit: 10 } } });
const total: number | undefined = list.data?.total;
const updated = await client.PUT("/api/v1/notes/{uuid}", { params: { path: { uuid } }, body: { n: 3 } });
const n: number | undefined = updated.data?.notes?.[uuid]?.n;
const bad = await client.POST("/api/v1/notes", { body: { title: "too big", n: 11 } });
const errors: Record<string, string> | undefined = bad.error?.errors;
console.log(JSON.stringify({ uuid, title, total, n, badStatus: bad.response.status, errors }));
`;

test("types generated from the admin's document compile with a program that then runs against the server", async () => {
  const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body!;
  writeFileSync(join(dir, "doc.json"), JSON.stringify(doc));
  const gen = Bun.spawnSync([process.execPath, join(ROOT, "test/helpers/openapi-types.ts"), join(dir, "doc.json"), join(dir, "api.d.ts")], { cwd: ROOT });
  expect(gen.stderr.toString()).toBe("");
  writeFileSync(join(dir, "client.ts"), PROGRAM);
  const tsc = Bun.spawnSync([join(ROOT, "node_modules/typescript5/bin/tsc"), "--noEmit", "--strict", "--target", "es2022", "--module", "esnext",
    "--moduleResolution", "bundler", "--skipLibCheck", "--types", "bun", join(dir, "client.ts")], { cwd: ROOT });
  expect(tsc.stdout.toString() + tsc.stderr.toString()).toBe("");
  expect(tsc.exitCode).toBe(0);
  const run = Bun.spawnSync([process.execPath, join(dir, "client.ts")], { cwd: ROOT, env: { ...process.env, BASE: s.base, TOKEN: s.token } });
  expect(run.stderr.toString()).toBe("");
  const out = JSON.parse(run.stdout.toString());
  expect(out).toMatchObject({ title: "typed", total: 1, n: 3, badStatus: 422 });
  expect(out.errors.n).toContain("10");
}, 60_000);

test("a program sending a value of the wrong type, or without a required field, does not compile", async () => {
  writeFileSync(join(dir, "wrong.ts"), PROGRAM.replace('body: { title: "typed" }', 'body: { title: 42 }').replace('body: { title: "too big", n: 11 }', 'body: { n: 11 }'));
  const tsc = Bun.spawnSync([join(ROOT, "node_modules/typescript5/bin/tsc"), "--noEmit", "--strict", "--target", "es2022", "--module", "esnext",
    "--moduleResolution", "bundler", "--skipLibCheck", "--types", "bun", join(dir, "wrong.ts")], { cwd: ROOT });
  expect(tsc.exitCode).not.toBe(0);
  const out = tsc.stdout.toString();
  expect(out).toContain("wrong.ts(5,");  // title: 42
  expect(out).toContain("Property 'title' is missing"); // no title

}, 60_000);

test("every caller's document passes Redocly's recommended rules at error level", async () => {
  const { createConfig, lintFromString, stringifyYaml } = await import("@redocly/openapi-core");
  const config = await createConfig({ extends: ["recommended"] });
  const { addUser, tokenFor } = await import("./helpers/access");
  await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-notes"] });
  await addUser(s.dir, "reader@example.com", "reader-password", { role: "reader", api: true });
  const reader = await tokenFor(s.base, "reader@example.com", "reader-password");
  for (const token of [s.token, reader]) {
    const doc = await (await fetch(`${s.base}/api/v1/openapi.json`, { headers: { authorization: `Bearer ${token}` } })).json();
    const problems = await lintFromString({ source: stringifyYaml(doc), absoluteRef: "openapi.yaml", config });
    const errors = problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
  }
}, 60_000);
