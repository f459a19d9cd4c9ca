/** Bearer tokens end to end: statuses, renewal, expiry, immediate cut-off, lockout, `needs`. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite, cli, serve, makeSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const items = { fields: { title: { type: "text", required: true }, year: { type: "number" } } };
let s: Awaited<ReturnType<typeof adminSite>>;
let readerUuid = "";

beforeAll(async () => {
  s = await adminSite({ defs: { items } });
  const roles = await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-items"] });
  expect(roles.status).toBe(201);
  await s.apiJson("POST", "/api/v1/roles", { name: "legacy", permissions: ["api_put_items", "api_(any)_roles"] });
  await s.apiJson("POST", "/api/v1/roles", { name: "manager", permissions: ["manage-items"] });
  await s.apiJson("POST", "/api/v1/roles", { name: "wiper", permissions: ["api_delete_resource_items"] });
  readerUuid = (await addUser(s.dir, "reader@example.com", "reader-pw-long-1", { role: "reader", api: true })).uuid;
  await addUser(s.dir, "legacy@example.com", "legacy-pw-long-1", { role: "legacy", api: true });
  await addUser(s.dir, "manager@example.com", "manager-pw", { role: "manager", api: true });
  await addUser(s.dir, "wiper@example.com", "wiper-pw-long-1", { role: "wiper", api: true });
  await addUser(s.dir, "noapi@example.com", "noapi-pw-long-1", { role: "reader" });
  await s.apiJson("POST", "/api/v1/items/one", { title: "One" });
});
afterAll(async () => { await s.cleanup(); });

describe("POST /api/v1/auth/token", () => {
  test("200 with token, token_created, token_expires (600 s by default)", async () => {
    const r = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "reader@example.com", password: "reader-pw-long-1" } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, success: true, status: "ok" });
    expect(r.body!.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.body!.token_expires - r.body!.token_created).toBe(600);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: r.body!.token })).status).toBe(200);
  });

  test("400 without credentials, 401 wrong password, 403 unknown account or no API access", async () => {
    const missing = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "reader@example.com" } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 400, success: false, status: "error", message: "INVALID_DATA" });
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: "" })).status).toBe(400);
    const wrong = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "reader@example.com", password: "nope" } });
    expect(wrong.status).toBe(401);
    expect(wrong.body!.message).toBe("INVALID_CREDENTIALS");
    const unknown = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "ghost@example.com", password: "x" } });
    expect(unknown.status).toBe(403);
    expect(unknown.body!.message).toBe("ACCESS_DENIED");
    const noApi = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "noapi@example.com", password: "noapi-pw-long-1" } });
    expect(noApi.status).toBe(403);
    expect(noApi.body!.message).toBe("ACCESS_DENIED");
  });

  test("e-mail is matched without regard to case", async () => {
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "Reader@Example.com", password: "reader-pw-long-1" } })).status).toBe(200);
  });
});

describe("using and renewing a token", () => {
  test("401 UNAUTHORIZED for a malformed header, a forged or garbage token", async () => {
    expect((await call(s.base, "GET", "/api/v1/items", { headers: { authorization: "Basic abc" } })).status).toBe(401);
    const garbage = await call(s.base, "GET", "/api/v1/items", { token: "not.a.token" });
    expect(garbage.status).toBe(401);
    expect(garbage.body!.message).toBe("UNAUTHORIZED");
    const good = await tokenFor(s.base, "reader@example.com", "reader-pw-long-1");
    const [h, p] = good.split(".");
    expect((await call(s.base, "GET", "/api/v1/items", { token: `${h}.${p}.AAAA` })).status).toBe(401);
    // alg "none" is refused: the algorithm is pinned.
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${p}.`;
    expect((await call(s.base, "GET", "/api/v1/items", { token: none })).status).toBe(401);
  });

  test("GET /api/v1/auth/token renews: a new token with a new lifetime; without a token 401", async () => {
    const t = await tokenFor(s.base, "reader@example.com", "reader-pw-long-1");
    await Bun.sleep(1100);
    const r = await call(s.base, "GET", "/api/v1/auth/token", { token: t });
    expect(r.status).toBe(200);
    expect(r.body!.token).not.toBe(t);
    expect(r.body!.token_created).toBeGreaterThan(0);
    expect(r.body!.token_expires - r.body!.token_created).toBe(600);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: r.body!.token })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/auth/token")).status).toBe(401);
    expect((await call(s.base, "PUT", "/api/v1/auth/token", { token: t })).status).toBe(405);
  }, 30_000);

  test("switching API access off with the CLI while the server runs cuts the token off at once; on again, only new tokens work", async () => {
    await addUser(s.dir, "cut@example.com", "cut-pw-long-1", { role: "reader", api: true });
    const t = await tokenFor(s.base, "cut@example.com", "cut-pw-long-1");
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(200);
    expect((await cli(s.dir, ["user", "api", "cut@example.com", "--off"])).code).toBe(0);
    const after = await call(s.base, "GET", "/api/v1/items/one", { token: t });
    expect(after.status).toBe(401);
    expect(after.body!.message).toBe("UNAUTHORIZED");
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: t })).status).toBe(401);
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "cut@example.com", password: "cut-pw-long-1" } })).status).toBe(403);
    expect((await cli(s.dir, ["user", "api", "cut@example.com", "--on"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(401);
    const renewed = await tokenFor(s.base, "cut@example.com", "cut-pw-long-1");
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: renewed })).status).toBe(200);
  }, 30_000);

  test("a password change (CLI) and removing the user kill existing tokens", async () => {
    await addUser(s.dir, "pw@example.com", "old-pw-long-1", { role: "reader", api: true });
    const t = await tokenFor(s.base, "pw@example.com", "old-pw-long-1");
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(200);
    expect((await cli(s.dir, ["user", "passwd", "pw@example.com", "--password", "new-pw-long-1"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(401);
    const t2 = await tokenFor(s.base, "pw@example.com", "new-pw-long-1");
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t2 })).status).toBe(200);
    expect((await cli(s.dir, ["user", "remove", "pw@example.com"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t2 })).status).toBe(401);
  }, 30_000);

  test("a role change applies to a live token at once", async () => {
    const t = await tokenFor(s.base, "reader@example.com", "reader-pw-long-1");
    expect((await call(s.base, "POST", "/api/v1/items", { token: t, body: { title: "x" } })).status).toBe(403);
    const role = await s.apiJson("GET", "/api/v1/roles?filter=name:reader");
    const uuid = Object.keys(role.body!.roles)[0];
    expect((await s.apiJson("PUT", `/api/v1/roles/${uuid}`, { permissions: ["view-items", "create-items"] })).status).toBe(200);
    expect((await call(s.base, "POST", "/api/v1/items", { token: t, body: { title: "x" } })).status).toBe(201);
    await s.apiJson("PUT", `/api/v1/roles/${uuid}`, { permissions: ["view-items"] });
    expect((await call(s.base, "POST", "/api/v1/items", { token: t, body: { title: "y" } })).status).toBe(403);
  });
});

describe("403 ACCESS_DENIED and needs", () => {
  test("needs lists the granting patterns in the spec's order (single record first)", async () => {
    const t = await tokenFor(s.base, "reader@example.com", "reader-pw-long-1");
    const del = await call(s.base, "DELETE", "/api/v1/items/one", { token: t });
    expect(del.status).toBe(403);
    expect(del.body).toMatchObject({ code: 403, success: false, status: "error", message: "ACCESS_DENIED" });
    expect(del.body!.needs).toBe("api_delete_items_one,api_delete_items,api_(any)_items,api_delete_(any),api_(any),delete-items,manage-items");
    const post = await call(s.base, "POST", "/api/v1/items", { token: t, body: { title: "x" } });
    expect(post.body!.needs).toBe("api_post_items,api_(any)_items,api_post_(any),api_(any),create-items,manage-items");
    const put = await call(s.base, "PATCH", "/api/v1/items/one", { token: t, body: { title: "x" } });
    expect(put.body!.needs).toBe("api_put_items_one,api_put_items,api_(any)_items,api_put_(any),api_(any),edit-items,manage-items");
    const users = await call(s.base, "GET", "/api/v1/users", { token: t });
    expect(users.body!.needs).toBe("api_get_users,api_(any)_users,api_get_(any),api_(any),view-users,manage-users");
  });

  test("deleting all records needs api_delete_resource_{resource}; manage- and wildcards never grant it", async () => {
    const manager = await tokenFor(s.base, "manager@example.com", "manager-pw");
    expect((await call(s.base, "POST", "/api/v1/items/m1", { token: manager, body: { title: "M" } })).status).toBe(201);
    expect((await call(s.base, "PUT", "/api/v1/items/m1", { token: manager, body: { title: "M2" } })).status).toBe(200);
    expect((await call(s.base, "DELETE", "/api/v1/items/m1", { token: manager })).status).toBe(200);
    const all = await call(s.base, "DELETE", "/api/v1/items", { token: manager });
    expect(all.status).toBe(403);
    expect(all.body!.needs).toBe("api_delete_resource_items");
    const wiper = await tokenFor(s.base, "wiper@example.com", "wiper-pw-long-1");
    expect((await call(s.base, "GET", "/api/v1/items", { token: wiper })).status).toBe(403);
    await s.apiJson("POST", "/api/v1/items/keep", { title: "K" });
    expect((await call(s.base, "DELETE", "/api/v1/items", { token: wiper })).status).toBe(200);
    expect((await s.apiJson("GET", "/api/v1/items")).body!.count).toBe(0);
    await s.apiJson("POST", "/api/v1/items/one", { title: "One" });
  });

  test("legacy api_* permissions are accepted", async () => {
    const t = await tokenFor(s.base, "legacy@example.com", "legacy-pw-long-1");
    expect((await call(s.base, "PUT", "/api/v1/items/one", { token: t, body: { title: "L" } })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/items/one", { token: t })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/roles", { token: t })).status).toBe(200);
    expect((await call(s.base, "DELETE", "/api/v1/roles", { token: t })).status).toBe(403);
  });

  test("no credentials: anonymous has no permissions (403 with needs)", async () => {
    const r = await call(s.base, "GET", "/api/v1/items/one");
    expect(r.status).toBe(403);
    expect(r.body!.needs).toStartWith("api_get_items_one,");
  });

  test("user fields password, api, salt and tokens never come back", async () => {
    const r = await s.apiJson("GET", `/api/v1/users/${readerUuid}`);
    expect(r.status).toBe(200);
    const u = r.body!.users[readerUuid];
    expect(u.email).toBe("reader@example.com");
    for (const f of ["password", "salt", "api", "password_reset_token", "change_email_token"]) expect(u).not.toHaveProperty(f);
  });
});

describe("limits", () => {
  test("repeated failed logins lock the account: 429 with Retry-After, even with the right password", async () => {
    await addUser(s.dir, "brute@example.com", "right-pw-long-1", { role: "reader", api: true });
    for (let i = 0; i < 5; i++) {
      expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "brute@example.com", password: `guess-${i}` } })).status).toBe(401);
    }
    const locked = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "brute@example.com", password: "right-pw-long-1" } });
    expect(locked.status).toBe(429);
    expect(locked.body!.message).toBe("TOO_MANY_REQUESTS");
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(50);
    // The lock is per account and shared through SQLite: sessions are refused too, others are not.
    expect((await call(s.base, "POST", "/api/v1/session", { body: { email: "brute@example.com", password: "right-pw-long-1" } })).status).toBe(429);
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "reader@example.com", password: "reader-pw-long-1" } })).status).toBe(200);
  }, 30_000);

  test("the lock survives a restart and expires after RESD_LOGIN_LOCK; success clears the count", async () => {
    const dir = makeSite();
    const env = { RESD_LOGIN_MAX_FAILURES: "2", RESD_LOGIN_LOCK: "4" };
    await addUser(dir, "x@example.com", "pw-x-long-1", { api: true });
    let srv = await serve(dir, { env });
    try {
      for (let i = 0; i < 2; i++) expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "x@example.com", password: "bad" } })).status).toBe(401);
      await srv.stop();
      srv = await serve(dir, { env });
      const locked = await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "x@example.com", password: "pw-x-long-1" } });
      expect(locked.status).toBe(429);
      await Bun.sleep(Number(locked.headers.get("retry-after")) * 1000 + 100);
      expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "x@example.com", password: "pw-x-long-1" } })).status).toBe(200);
      expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "x@example.com", password: "bad" } })).status).toBe(401);
      expect((await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "x@example.com", password: "pw-x-long-1" } })).status).toBe(200);
    } finally {
      await srv.stop();
    }
  }, 30_000);

  test("a token expires after RESD_TOKEN_TTL: calls and renewal give 401", async () => {
    const dir = makeSite({ defs: { items } });
    const env = { RESD_TOKEN_TTL: "2" };
    await addUser(dir, "ttl@example.com", "ttl-pw-long-1", { role: "admin", api: true });
    const srv = await serve(dir, { env });
    try {
      const r = await call(srv.base, "POST", "/api/v1/auth/token", { body: { email: "ttl@example.com", password: "ttl-pw-long-1" } });
      expect(r.body!.token_expires - r.body!.token_created).toBe(2);
      const t = r.body!.token as string;
      expect((await call(srv.base, "GET", "/api/v1/items", { token: t })).status).toBe(200);
      const renewed = (await call(srv.base, "GET", "/api/v1/auth/token", { token: t })).body!.token as string;
      await Bun.sleep(2200);
      const late = await call(srv.base, "GET", "/api/v1/items", { token: t });
      expect(late.status).toBe(401);
      expect(late.body!.message).toBe("UNAUTHORIZED");
      expect((await call(srv.base, "GET", "/api/v1/auth/token", { token: t })).status).toBe(401);
      expect((await call(srv.base, "GET", "/api/v1/items", { token: renewed })).status).toBe(401);
    } finally {
      await srv.stop();
    }
  }, 30_000);
});
