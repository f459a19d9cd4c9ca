/** Deleting every record delivers the declared delete events and jobs, one per record. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, ROOT } from "./helpers/site";

const articles = { fields: { title: { type: "text" } }, events: { delete: ["article-removed", "job:notify"] } };
let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { articles, plain: { fields: { title: { type: "text" } } } }, files: { "ext/hooks.ts": readFileSync(join(ROOT, "test/fixtures/ext-basic/hooks.ts"), "utf8") }, env: { RESD_JOB_POLL: "50" } });
});
afterAll(async () => { await s.cleanup(); });

const logged = () => (existsSync(join(s.dir, "hooks.log")) ? readFileSync(join(s.dir, "hooks.log"), "utf8").trim().split("\n").map((l) => JSON.parse(l)) : []);

test("DELETE /api/v1/{resource} sends each record's delete event and queues its job", async () => {
  for (const id of ["a1", "a2", "a3"]) expect((await s.apiJson("POST", `/api/v1/articles/${id}`, { title: id })).status).toBe(201);
  const r = await s.apiJson("DELETE", "/api/v1/articles");
  expect(r.body).toMatchObject({ message: "RESOURCE_DELETED", count: 3 });
  const end = Date.now() + 8000;
  while (logged().filter((l) => l.kind === "job").length < 3 && Date.now() < end) await Bun.sleep(50);
  const events = logged().filter((l) => l.kind === "event" && l.event === "article-removed");
  expect(events.map((e) => e.uuid).sort()).toEqual(["a1", "a2", "a3"]);
  expect(events.every((e) => e.action === "delete" && e.previous?.title === e.uuid)).toBe(true);
  expect(logged().filter((l) => l.kind === "job").map((j) => j.uuid).sort()).toEqual(["a1", "a2", "a3"]);
  expect((await s.apiJson("GET", "/api/v1/articles")).body!.count).toBe(0);
  // Each record can be restored from history, as after single deletes.
  expect((await s.apiJson("POST", "/api/v1/articles/a2/restore")).status).toBe(200);
});

test("a resource without delete events is emptied by one statement (history kept)", async () => {
  for (const id of ["p1", "p2"]) await s.apiJson("POST", `/api/v1/plain/${id}`, { title: id });
  expect((await s.apiJson("DELETE", "/api/v1/plain")).body!.count).toBe(2);
  expect((await s.apiJson("POST", "/api/v1/plain/p1/restore")).status).toBe(200);
});
