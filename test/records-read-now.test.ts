/**
 * GET of one record answered without waiting (readOneNow): once a caller is known, later reads of
 * one record skip the promise chain. Each test reads twice first, so the second read and those after
 * it take that path; every answer must stay what the general path gives, and every change to the
 * caller, the record or the definitions must show at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite, cli } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const items = { fields: { title: { type: "text", required: true }, note: { type: "text" }, code: { type: "text" } }, hidden: ["code"] };
let s: Awaited<ReturnType<typeof adminSite>>;
let readerToken = "";
let roleUuid = "";

/** Two reads: the first works out the caller, the second is answered in place. */
async function twice(path: string, opts: Parameters<typeof call>[3] = {}, base = s.base) {
  const first = await call(base, "GET", path, opts);
  const second = await call(base, "GET", path, opts);
  return { first, second };
}

const withoutTiming = (body: Record<string, unknown> | null) => {
  const { memory_usage: _m, execution_time: _e, ...rest } = body ?? {};
  return rest;
};

beforeAll(async () => {
  s = await adminSite({ defs: { items }, env: { RESD_LOG_FORMAT: "text" } });
  const role = await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-items"] });
  roleUuid = Object.keys(role.body!.roles)[0];
  await addUser(s.dir, "reader@example.com", "reader-pw-long-1", { role: "reader", api: true });
  readerToken = await tokenFor(s.base, "reader@example.com", "reader-pw-long-1");
  expect((await s.apiJson("POST", "/api/v1/items/one", { title: "One", note: "first", code: "s3cret" })).status).toBe(201);
});
afterAll(async () => {
  await s.cleanup();
});

describe("GET one record, answered in place", () => {
  test("the same answer as the general path: body, headers, hidden fields left out", async () => {
    const { first, second } = await twice("/api/v1/items/one", { token: readerToken });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(withoutTiming(second.body)).toEqual(withoutTiming(first.body));
    expect(second.body!.items.one).toMatchObject({ uuid: "one", title: "One", note: "first" });
    expect(second.body!.items.one).not.toHaveProperty("code");
    expect(second.body!.memory_usage).toMatch(/^\d+(\.\d+)? MB$/);
    expect(second.body!.execution_time).toMatch(/^\d+\.\d\d ms$/);
    for (const h of ["etag", "last-modified", "content-type"]) expect(second.headers.get(h)).toBe(first.headers.get(h));
    expect(second.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    const echoed = await call(s.base, "GET", "/api/v1/items/one", { token: readerToken, headers: { "x-request-id": "trace-42" } });
    expect(echoed.headers.get("x-request-id")).toBe("trace-42");
  });

  test("304 for If-None-Match and If-Modified-Since; a changed record answers 200 with its new text", async () => {
    const { second } = await twice("/api/v1/items/one", { token: readerToken });
    const etag = second.headers.get("etag")!;
    const inm = await call(s.base, "GET", "/api/v1/items/one", { token: readerToken, headers: { "if-none-match": etag } });
    expect(inm.status).toBe(304);
    expect(inm.headers.get("etag")).toBe(etag);
    // Last-Modified names the second before a change in the current one, so a later date is asked.
    const later = new Date(Date.now() + 60_000).toUTCString();
    const ims = await call(s.base, "GET", "/api/v1/items/one", { token: readerToken, headers: { "if-modified-since": later } });
    expect(ims.status).toBe(304);
    expect((await s.apiJson("PATCH", "/api/v1/items/one", { note: "second" })).status).toBe(200);
    const after = await call(s.base, "GET", "/api/v1/items/one", { token: readerToken, headers: { "if-none-match": etag } });
    expect(after.status).toBe(200);
    expect(after.body!.items.one.note).toBe("second");
    expect(after.headers.get("etag")).not.toBe(etag);
  });

  test("a role that no longer grants viewing refuses the next read (403 with needs), and grants again at once", async () => {
    expect((await twice("/api/v1/items/one", { token: readerToken })).second.status).toBe(200);
    expect((await s.apiJson("PUT", `/api/v1/roles/${roleUuid}`, { permissions: ["create-items"] })).status).toBe(200);
    // Another caller's read first: the roles' change mark is remembered again before the reader asks.
    expect((await s.apiJson("GET", "/api/v1/items/one")).status).toBe(200);
    const refused = await call(s.base, "GET", "/api/v1/items/one", { token: readerToken });
    expect(refused.status).toBe(403);
    expect(refused.body!.message).toBe("ACCESS_DENIED");
    expect(refused.body!.needs.split(",")).toContain("view-items");
    expect((await s.apiJson("PUT", `/api/v1/roles/${roleUuid}`, { permissions: ["view-items"] })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: readerToken })).status).toBe(200);
  });

  test("a record-level grant is not widened to other records by earlier reads", async () => {
    await s.apiJson("POST", "/api/v1/items/two", { title: "Two" });
    await s.apiJson("POST", "/api/v1/roles", { name: "one-only", permissions: ["api_get_items_one"] });
    await addUser(s.dir, "narrow@example.com", "narrow-pw-long-1", { role: "one-only", api: true });
    const t = await tokenFor(s.base, "narrow@example.com", "narrow-pw-long-1");
    expect((await twice("/api/v1/items/one", { token: t })).second.status).toBe(200);
    const other = await call(s.base, "GET", "/api/v1/items/two", { token: t });
    expect(other.status).toBe(403);
    expect(other.body!.needs.split(",")[0]).toBe("api_get_items_two");
  });

  test("API access switched off or the user removed by another process: 401 on the next read", async () => {
    await addUser(s.dir, "gone@example.com", "gone-pw-long-1", { role: "reader", api: true });
    const t = await tokenFor(s.base, "gone@example.com", "gone-pw-long-1");
    expect((await twice("/api/v1/items/one", { token: t })).second.status).toBe(200);
    expect((await cli(s.dir, ["user", "api", "gone@example.com", "--off"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(401);
    // Switched on again, the old token stays dead (issue 31, item 9); a new one reads.
    expect((await cli(s.dir, ["user", "api", "gone@example.com", "--on"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(401);
    const renewed = await tokenFor(s.base, "gone@example.com", "gone-pw-long-1");
    expect((await twice("/api/v1/items/one", { token: renewed })).second.status).toBe(200);
    expect((await cli(s.dir, ["user", "remove", "gone@example.com"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: renewed })).status).toBe(401);
  }, 30_000);

  test("a record deleted, or changed by another process, shows on the next read", async () => {
    await s.apiJson("POST", "/api/v1/items/three", { title: "Three" });
    expect((await twice("/api/v1/items/three", { token: readerToken })).second.body!.items.three.title).toBe("Three");
    const csv = "uuid,title\nthree,Three from the CLI\n";
    const imported = await cli(s.dir, ["import", "items", "-", "--format", "csv"], { stdin: csv });
    expect(imported.code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/three", { token: readerToken })).body!.items.three.title).toBe("Three from the CLI");
    expect((await s.apiJson("DELETE", "/api/v1/items/three")).status).toBe(200);
    const gone = await call(s.base, "GET", "/api/v1/items/three", { token: readerToken });
    expect(gone.status).toBe(404);
    expect(gone.body!.message).toBe("RESOURCE_NOT_FOUND");
  }, 30_000);

  test("the request log names the caller of a read answered in place", async () => {
    const { second } = await twice("/api/v1/items/one", { token: readerToken, headers: { "x-request-id": "log-check-7" } });
    expect(second.status).toBe(200);
    await Bun.sleep(100);
    const lines = s.output().split("\n").filter((l) => l.includes("log-check-7"));
    expect(lines.length).toBe(2);
    for (const l of lines) expect(l).toMatch(/ GET \/api\/v1\/items\/one 200 [\d.]+ms reader@example\.com log-check-7$/);
 
    // The path the router matched, never the query string (it may carry secrets).
    const q = await call(s.base, "GET", "/api/v1/items/one?token=secret-q", { token: readerToken, headers: { "x-request-id": "log-check-8" } });
    expect(q.status).toBe(200);
    expect(q.headers.get("x-request-id")).toBe("log-check-8");
    await Bun.sleep(100);
    const withQuery = s.output().split("\n").filter((l) => l.includes("log-check-8"));
    expect(withQuery.length).toBe(1);
    expect(withQuery[0]).toMatch(/ GET \/api\/v1\/items\/one 200 [\d.]+ms reader@example\.com log-check-8$/);
    expect(s.output()).not.toContain("secret-q");
  });

  test("a bad bearer header, an unknown resource and a session cookie still get the general answers", async () => {
    expect((await call(s.base, "GET", "/api/v1/items/one", { headers: { authorization: "Bearer" } })).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/nope/one", { token: readerToken })).status).toBe(404);
    expect((await call(s.base, "GET", "/api/v1/items/one", { headers: { cookie: "resd_session=forged" } })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/items/one")).status).toBe(403);
  });
});

describe("answers in place that fail, and allows that go", () => {
  let t: Awaited<ReturnType<typeof adminSite>>;
  beforeAll(async () => {
    t = await adminSite({ defs: { items }, files: { "ext/uri/api/v1/items/index.tpl": "[#api-allow get items#]\n" } });
    expect((await t.apiJson("POST", "/api/v1/items/one", { title: "One" })).status).toBe(201);
  });
  afterAll(async () => {
    await t.cleanup();
  });

  test("a user's token and session lose an anonymous allow when its file goes (within the 3 s rescan), as anonymous callers do", async () => {
    await addUser(t.dir, "plain@example.com", "plain-pw-long-1", { api: true });
    const token = await tokenFor(t.base, "plain@example.com", "plain-pw-long-1");
    expect((await twice("/api/v1/items/one", { token }, t.base)).second.status).toBe(200);
    expect((await twice("/api/v1/items/one", {}, t.base)).second.status).toBe(200);
    const signedIn = await call(t.base, "POST", "/api/v1/session", { body: { email: "plain@example.com", password: "plain-pw-long-1" } });
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0];
    expect((await twice("/api/v1/items/one", { headers: { cookie } }, t.base)).second.status).toBe(200);
    rmSync(join(t.dir, "ext/uri/api/v1/items/index.tpl"));
    // Asked until the rescan took the file away, for at most the 3.3 s the rescan may take.
    const gone = Date.now() + 3300;
    while ((await call(t.base, "GET", "/api/v1/items/one")).status !== 403 && Date.now() < gone) await Bun.sleep(100);
    expect((await call(t.base, "GET", "/api/v1/items/one")).status).toBe(403);
    expect((await call(t.base, "GET", "/api/v1/items/one", { token })).status).toBe(403);
    expect((await call(t.base, "GET", "/api/v1/items/one", { headers: { cookie } })).status).toBe(403);
  }, 20_000);

  test("an error on the way keeps the request's id in the header, the body and the log", async () => {
    // An allow "file" that is a folder: reading the allows fails for every anonymous caller.
    mkdirSync(join(t.dir, "ext/uri/api/v1/weird/index.tpl"), { recursive: true });
    const broken = Date.now() + 3300;
    while ((await call(t.base, "GET", "/api/v1/items/one")).status !== 500 && Date.now() < broken) await Bun.sleep(100);
    const r = await call(t.base, "GET", "/api/v1/items/one", { headers: { "x-request-id": "trace-broken" } });
    expect(r.status).toBe(500);
    expect(r.headers.get("x-request-id")).toBe("trace-broken");
    expect(r.body!.request_id).toBe("trace-broken");
    await Bun.sleep(100);
    expect(t.output().split("\n").filter((l) => l.includes("trace-broken")).length).toBeGreaterThanOrEqual(2);
    rmSync(join(t.dir, "ext/uri/api/v1/weird"), { recursive: true });
  }, 20_000);
});
