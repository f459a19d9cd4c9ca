/** Extension routes through the real server: envelope, authentication and permissions. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli } from "./helpers/site";

const EXT = readFileSync(join(import.meta.dir, "fixtures/ext-basic/hooks.ts"), "utf8");
const articles = { fields: { title: { type: "text", required: true } } };

let s: Awaited<ReturnType<typeof adminSite>>;
let readerToken = "";
let nobodyToken = "";

async function userToken(email: string, role: string): Promise<string> {
  const add = await cli(s.dir, ["user", "add", email, "--password", "a-password-1", "--role", role, "--api"]);
  if (add.code !== 0) throw new Error(add.stderr);
  const t = await cli(s.dir, ["token", email]);
  if (t.code !== 0) throw new Error(t.stderr);
  return t.stdout.trim();
}
const call = async (method: string, path: string, token?: string, body?: unknown) => {
  const res = await fetch(s.base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
};

beforeAll(async () => {
  s = await adminSite({ defs: { articles }, files: { "ext/hooks.ts": EXT } });
  const role = await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-articles"] });
  if (role.status !== 201) throw new Error(JSON.stringify(role.body));
  await s.apiJson("POST", "/api/v1/roles", { name: "none", permissions: [] });
  readerToken = await userToken("reader@example.com", "reader");
  nobodyToken = await userToken("nobody@example.com", "none");
  await s.apiJson("POST", "/api/v1/articles", { title: "one" });
  await s.apiJson("POST", "/api/v1/articles", { title: "two" });
});
afterAll(() => s.cleanup());

describe("extension routes", () => {
  test("answer with the spec's envelope and a request id", async () => {
    const r = await call("GET", "/api/v1/stats", s.token);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, success: true, status: "ok", stats: { articles: 2 } });
    expect(typeof r.body.memory_usage).toBe("string");
    expect(typeof r.body.execution_time).toBe("string");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    expect(r.headers.get("content-type")).toContain("application/json");
  });

  test("a route's permission: granted to a role holding it, 403 with needs otherwise", async () => {
    expect((await call("GET", "/api/v1/stats", readerToken)).body.stats).toEqual({ articles: 2 });
    const denied = await call("GET", "/api/v1/stats", nobodyToken);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 403, success: false, status: "error", message: "ACCESS_DENIED", needs: "view-articles,manage-articles" });
    expect((await call("GET", "/api/v1/stats")).status).toBe(403);
  });

  test("a route without options needs a signed-in caller: 401 for anonymous, 401 for a bad token", async () => {
    expect((await call("GET", "/api/v1/whoami", nobodyToken)).body.who).toEqual({ kind: "user", email: "nobody@example.com" });
    const anon = await call("GET", "/api/v1/whoami");
    expect(anon.status).toBe(401);
    expect(anon.body.message).toBe("UNAUTHORIZED");
    expect((await call("GET", "/api/v1/whoami", "not-a-token")).status).toBe(401);
  });

  test("records called from a route act as the caller: permissions and validation of the core apply", async () => {
    const ok = await call("POST", "/api/v1/quick-article", s.token, { title: "three" });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ code: 201, success: true, article: { title: "three" } });
    const denied = await call("POST", "/api/v1/quick-article", readerToken, { title: "four" });
    expect(denied.status).toBe(403);
    expect(denied.body.needs).toContain("create-articles");
    const invalid = await call("POST", "/api/v1/quick-article", s.token, {});
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({ message: "INVALID_DATA", errors: { title: expect.any(String) } });
    const broken = await fetch(`${s.base}/api/v1/quick-article`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: "{nope" });
    expect(broken.status).toBe(400);
    expect((await call("GET", "/api/v1/stats", s.token)).body.stats.articles).toBe(3);
  });

  test("a public route: anonymous allowed, path parameters and query, errors in the envelope, 405 for other methods", async () => {
    const r = await call("GET", "/hello/world?q=yes");
    expect(r.body).toMatchObject({ code: 200, greeting: "hello world", q: "yes" });
    const nf = await call("GET", "/hello/nobody");
    expect(nf.status).toBe(404);
    expect(nf.body).toMatchObject({ success: false, message: "RESOURCE_NOT_FOUND", details: "nobody is not here" });
    const na = await call("DELETE", "/hello/world");
    expect(na.status).toBe(405);
    expect(na.body.message).toBe("METHOD_NOT_ALLOWED");
  });

  test("the generic record routes are untouched", async () => {
    const r = await call("GET", "/api/v1/articles?limit=1", s.token);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(3);
  });
});
