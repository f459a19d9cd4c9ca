/** Session sign-in for the service's own pages: cookie, who-am-I, sign-out, cross-origin refusal. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite, cli, serve } from "./helpers/site";
import { addUser, call } from "./helpers/access";

const items = { fields: { title: { type: "text", required: true } } };
let s: Awaited<ReturnType<typeof adminSite>>;
let editorRole: string;

beforeAll(async () => {
  s = await adminSite({ defs: { items } });
  const r = await s.apiJson("POST", "/api/v1/roles", { name: "editor", permissions: ["view-items", "create-items"] });
  editorRole = Object.keys(r.body!.roles)[0];
  await addUser(s.dir, "ed@example.com", "ed-pw-long-1", { role: "editor" });
});
afterAll(async () => { await s.cleanup(); });

async function signIn(email: string, password: string, headers: Record<string, string> = {}) {
  const r = await call(s.base, "POST", "/api/v1/session", { body: { email, password }, headers });
  const setCookie = r.headers.get("set-cookie") ?? "";
  return { ...r, setCookie, cookie: setCookie.split(";")[0] };
}

describe("POST/GET/DELETE /api/v1/session", () => {
  test("sign-in sets an HttpOnly SameSite cookie on Path=/, and the API applies the user's permissions", async () => {
    const r = await signIn("ed@example.com", "ed-pw-long-1");
    expect(r.status).toBe(200);
    // A user names their role by its uuid (a rename of the role changes nothing).
    expect(r.body!.user).toMatchObject({ email: "ed@example.com", role: editorRole });
    expect(r.body!.user).not.toHaveProperty("password");
    expect(r.body!.user).not.toHaveProperty("api");
    expect(r.setCookie).toMatch(/^resd_session=[\w-]{43}; /);
    expect(r.setCookie).toContain("HttpOnly");
    expect(r.setCookie).toContain("SameSite=Lax");
    expect(r.setCookie).toContain("Path=/");
    expect(r.setCookie).not.toContain("Secure");
    const h = { cookie: r.cookie };
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "by cookie" }, headers: h })).status).toBe(201);
    const denied = await call(s.base, "DELETE", "/api/v1/items", { headers: h });
    expect(denied.status).toBe(403);
    expect(denied.body!.needs).toBe("api_delete_resource_items");
    const me = await call(s.base, "GET", "/api/v1/session", { headers: h });
    expect(me.status).toBe(200);
    expect(me.body!.user.email).toBe("ed@example.com");
    expect(me.body!.permissions).toEqual(["view-items", "create-items"]);
  });

  test("sessions need no API access; Secure is set when the request came over https", async () => {
    const r = await signIn("ed@example.com", "ed-pw-long-1", { "x-forwarded-proto": "https" });
    expect(r.setCookie).toContain("; Secure");
  });

  test("400 / 401 / 403 like the token request; GET without a session 401", async () => {
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "ed@example.com" } })).status).toBe(400);
    const wrong = await call(s.base, "POST", "/api/v1/session", { body: { email: "ed@example.com", password: "x" } });
    expect(wrong.status).toBe(401);
    expect(wrong.body!.message).toBe("INVALID_CREDENTIALS");
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "nobody@example.com", password: "x" } })).status).toBe(403);
    const anon = await call(s.base, "GET", "/api/v1/session");
    expect(anon.status).toBe(401);
    expect(anon.body!.message).toBe("UNAUTHORIZED");
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: "resd_session=forged-value" } })).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: "resd_session=%E0%A4%A" } })).status).toBe(401);
    expect((await call(s.base, "GET", "/api/v1/items", { headers: { cookie: "resd_session=%zz" } })).status).toBe(403);
    expect((await call(s.base, "PUT", "/api/v1/session")).status).toBe(405);
  });

  test("DELETE signs out: the cookie is cleared and the session is gone server-side", async () => {
    const r = await signIn("ed@example.com", "ed-pw-long-1");
    const h = { cookie: r.cookie };
    const out = await call(s.base, "DELETE", "/api/v1/session", { headers: h });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await call(s.base, "GET", "/api/v1/session", { headers: h })).status).toBe(401);
    // The old cookie is now an anonymous visitor.
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "x" }, headers: h })).status).toBe(403);
  });

  test("a password change ends the user's sessions", async () => {
    await addUser(s.dir, "pc@example.com", "pc-old-long-1", { role: "editor" });
    const r = await signIn("pc@example.com", "pc-old-long-1");
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: r.cookie } })).status).toBe(200);
    expect((await cli(s.dir, ["user", "passwd", "pc@example.com", "--password", "pc-new-long-1"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/session", { headers: { cookie: r.cookie } })).status).toBe(401);
  }, 30_000);

});

describe("cross-origin writes with the cookie", () => {
  test("a write from another Origin is refused with 403; same origin and no Origin pass; reads pass", async () => {
    const r = await signIn("ed@example.com", "ed-pw-long-1");
    const host = new URL(s.base).host;
    const foreign = await call(s.base, "POST", "/api/v1/items", { body: { title: "csrf" }, headers: { cookie: r.cookie, origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.body!.message).toBe("ACCESS_DENIED");
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "csrf" }, headers: { cookie: r.cookie, origin: "null" } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "csrf" }, headers: { cookie: r.cookie, "sec-fetch-site": "cross-site" } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "ok" }, headers: { cookie: r.cookie, origin: `http://${host}` } })).status).toBe(201);
    // Behind a TLS proxy the page's origin is https://host.
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "ok" }, headers: { cookie: r.cookie, origin: `https://${host}`, "x-forwarded-proto": "https" } })).status).toBe(201);
    expect((await call(s.base, "POST", "/api/v1/items", { body: { title: "ok" }, headers: { cookie: r.cookie } })).status).toBe(201);
    expect((await call(s.base, "GET", "/api/v1/items", { headers: { cookie: r.cookie, origin: "https://evil.example" } })).status).toBe(200);
    // Sign-in and sign-out from a foreign page are refused as well (login CSRF).
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "ed@example.com", password: "ed-pw-long-1" }, headers: { origin: "https://evil.example" } })).status).toBe(403);
    expect((await call(s.base, "DELETE", "/api/v1/session", { headers: { cookie: r.cookie, origin: "https://evil.example" } })).status).toBe(403);
  });

  test("a bearer token is not subject to the Origin check (no ambient credential)", async () => {
    expect((await s.apiJson("POST", "/api/v1/items", { title: "t" }, { origin: "https://elsewhere.example" })).status).toBe(201);
  });
});

describe("persistence", () => {
  test("sessions survive a server restart (stored in SQLite); runs last, it stops the shared server", async () => {
    const r = await signIn("ed@example.com", "ed-pw-long-1");
    const dir = s.dir;
    await s.stop();
    const again = await serve(dir);
    try {
      expect((await call(again.base, "GET", "/api/v1/session", { headers: { cookie: r.cookie } })).status).toBe(200);
    } finally {
      await again.stop();
    }
  }, 30_000);
});
