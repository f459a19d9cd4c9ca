/** GET /health, the request log (json and text), the error log, and what never reaches either. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { adminSite, cli, makeSite, serve } from "./helpers/site";

const notes = { fields: { title: { type: "text", required: true }, secret: { type: "text" } } };
/** A bug in an extension: the genuine way for a route to fail with a stack. */
const boom = `export default (api) => {
  api.route("GET", "/boom", () => { throw new Error("kaboom in an extension"); }, { public: true });
};\n`;

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => {
  s = await adminSite({ defs: { notes }, files: { "ext/boom.ts": boom }, env: { RESD_LOG_FORMAT: "json" } });
});
afterAll(async () => { await s.cleanup(); });

/** The server's log lines so far, after giving the batched writer a moment. */
async function lines(server: { output: () => string }) {
  await Bun.sleep(60);
  return server.output().split("\n").filter((l) => l.trim());
}
const json = (ls: string[]) => ls.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);

describe("GET /health", () => {
  test("200 without authentication, with version and database ok; HEAD too; not cached", async () => {
    const pkg = await Bun.file(join(import.meta.dir, "../package.json")).json();
    const res = await fetch(`${s.base}/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toMatchObject({ code: 200, success: true, version: pkg.version, database: "ok" });
    const head = await fetch(`${s.base}/health`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const post = await fetch(`${s.base}/health`, { method: "POST" });
    expect(post.status).toBe(405);
  });

  test("503 while the database file is gone (e.g. its volume unmounted), 200 again once it is back", async () => {
    const dir = makeSite({ store: "sqlite" }); // the SQLite file itself goes away
    const server = await serve(dir);
    try {
      expect((await fetch(`${server.base}/health`)).status).toBe(200);
      const db = join(dir, "data", "resd.db");
      renameSync(db, `${db}.away`);
      const t0 = performance.now();
      const down = await fetch(`${server.base}/health`);
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(down.status).toBe(503);
      expect(down.headers.get("retry-after")).toBe("5");
      expect(await down.json()).toMatchObject({ code: 503, success: false, message: "SERVICE_UNAVAILABLE", database: "unavailable" });
      renameSync(`${db}.away`, db);
      expect((await fetch(`${server.base}/health`)).status).toBe(200);
    } finally {
      server.proc.kill("SIGKILL");
      await server.proc.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("request log", () => {
  test("one JSON line per request: method, path, status, duration, user or anonymous, request id — 404 and 405 included", async () => {
    const before = (await lines(s)).length;
    const created = await s.apiJson("POST", "/api/v1/notes", { title: "logged" });
    expect(created.status).toBe(201);
    await fetch(`${s.base}/api/v1/notes`, { headers: { "x-request-id": "trace-me-123" } });
    const nf = await fetch(`${s.base}/no/such/route`);
    expect(nf.status).toBe(404);
    const nfBody = (await nf.json()) as { request_id: string };
    const na = await s.api("PATCH", "/health");
    expect(na.status).toBe(405);
    const entries = json((await lines(s)).slice(before)).filter((e) => "status" in e);
    expect(entries).toHaveLength(4);
    for (const e of entries) {
      expect(Object.keys(e).sort()).toEqual(["duration_ms", "method", "path", "request_id", "status", "time", "user"]);
      expect(typeof e.duration_ms).toBe("number");
      expect(String(e.request_id).length).toBeGreaterThan(0);
    }
    expect(entries[0]).toMatchObject({ method: "POST", path: "/api/v1/notes", status: 201, user: s.email });
    expect(entries[0].request_id).toBe(created.headers.get("x-request-id"));
    expect(entries[1]).toMatchObject({ method: "GET", path: "/api/v1/notes", status: 403, user: "anonymous", request_id: "trace-me-123" });
    expect(entries[2]).toMatchObject({ method: "GET", path: "/no/such/route", status: 404, user: "anonymous", request_id: nfBody.request_id });
    // /health never authenticates (it must stay cheap), so even a caller with a token is anonymous there.
    expect(entries[3]).toMatchObject({ method: "PATCH", path: "/health", status: 405, user: "anonymous" });
  });

  test("an unexpected error: 500 envelope with request_id, its stack on stderr exactly once under that id", async () => {
    const res = await fetch(`${s.base}/boom`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { message: string; request_id: string };
    expect(body.message).toBe("INTERNAL_ERROR");
    expect(JSON.stringify(body)).not.toContain("kaboom");
    const all = await lines(s);
    const errors = json(all).filter((e) => e.level === "error");
    const mine = errors.filter((e) => e.request_id === body.request_id);
    expect(mine).toHaveLength(1);
    expect(mine[0].error).toBe("kaboom in an extension");
    expect(String(mine[0].stack)).toContain("at ");
    expect(all.filter((l) => l.includes("kaboom in an extension"))).toHaveLength(1);
    expect(json(all).find((e) => e.request_id === body.request_id && e.status === 500)).toMatchObject({ path: "/boom" });
  });

  test("passwords, tokens, cookies and query strings never appear in the log", async () => {
    const pw = "Pw-LOGCHECK-5f1e9c";
    const userPw = "UserPw-LOGCHECK-77aa";
    const fieldSecret = "Field-LOGCHECK-0b3d";
    const querySecret = "Query-LOGCHECK-91fe";
    // A user with a password, created over HTTP; logins right and wrong; token by password.
    expect((await s.apiJson("POST", "/api/v1/users", { email: "u@example.com", password: userPw, role: "admin", api: true })).status).toBe(201);
    const tok = await fetch(`${s.base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "u@example.com", password: userPw }) });
    expect(tok.status).toBe(200);
    const issued = ((await tok.json()) as { token: string }).token;
    await fetch(`${s.base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "u@example.com", password: pw }) });
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "u@example.com", password: userPw }) });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const cookieValue = cookie.split("=")[1] ?? "";
    await fetch(`${s.base}/api/v1/session`, { headers: { cookie } });
    await s.apiJson("POST", "/api/v1/notes", { title: "t", secret: fieldSecret });
    await fetch(`${s.base}/api/v1/notes?token=${querySecret}&password=${querySecret}&filter=${querySecret}`, { headers: { authorization: `Bearer ${issued}` } });
    await fetch(`${s.base}/api/v1/notes`, { headers: { authorization: "Bearer not-a-valid-token-LOGCHECK" } });
    await fetch(`${s.base}/boom?password=${querySecret}`);
    const out = (await lines(s)).join("\n");
    expect(out).toContain("/api/v1/auth/token");
    for (const secret of [pw, userPw, fieldSecret, querySecret, s.token, issued, "not-a-valid-token-LOGCHECK"]) expect(out).not.toContain(secret);
    expect(cookieValue.length).toBeGreaterThan(8);
    expect(out).not.toContain(cookieValue);
    expect(out).not.toMatch(/LOGCHECK/);
  });
});

describe("log formats", () => {
  test("--log-format text: one readable line per request; auto is JSON when stdout is not a terminal", async () => {
    const dir = makeSite();
    try {
      const text = await serve(dir, { args: ["--log-format", "text"], env: { RESD_LOG_FORMAT: "json" } });
      await fetch(`${text.base}/health`);
      await fetch(`${text.base}/nothing-here`);
      const tl = await lines(text);
      expect(await text.stop()).toBe(0);
      expect(tl.some((l) => l.startsWith("{"))).toBe(false);
      expect(tl.find((l) => l.includes(" GET /health "))).toMatch(/^\S+Z GET \/health 200 [\d.]+ms anonymous [0-9a-f-]{36}$/);
      expect(tl.find((l) => l.includes("/nothing-here"))).toMatch(/ GET \/nothing-here 404 [\d.]+ms anonymous /);

      const auto = await serve(dir, { env: { RESD_LOG_FORMAT: "" } });
      await fetch(`${auto.base}/health`);
      const al = await lines(auto);
      expect(await auto.stop()).toBe(0);
      expect(al.length).toBeGreaterThanOrEqual(2);
      for (const l of al) expect(() => JSON.parse(l)).not.toThrow();
      expect(json(al).find((e) => e.path === "/health")).toMatchObject({ method: "GET", status: 200 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an invalid --log-format stops start-up naming the setting", async () => {
    const dir = makeSite();
    const r = await cli(dir, ["serve", "--port", "0", "--log-format", "xml"]);
    rmSync(dir, { recursive: true, force: true });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("logFormat (RESD_LOG_FORMAT)");
  });
});
