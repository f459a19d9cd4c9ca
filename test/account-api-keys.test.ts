/**
 * Personal API keys, black-box through the real server and the CLI: made with a session or token
 * and the password, shown once, used as a bearer, listed, revoked (401 at once), expiring, limited
 * to a list of permissions, dying with the user's API access — and not asking for the second factor.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as OTPAuth from "otpauth";
import { adminSite, cli } from "./helpers/site";
import { call, tokenFor } from "./helpers/access";

const notes = { fields: { title: { type: "text", required: true } } };

let s: Awaited<ReturnType<typeof adminSite>>;
const roles: Record<string, string> = {};
const uuids: Record<string, string> = {};
const tokens: Record<string, string> = {};
const email = (who: string) => `${who}@example.com`;
const password = (who: string) => `${who}-password`;

async function user(who: string, permissions: string[], api = true): Promise<void> {
  const r = await s.apiJson("POST", "/api/v1/roles", { name: `${who}-role`, permissions });
  roles[who] = Object.keys(r.body!.roles)[0];
  const u = await s.apiJson("POST", "/api/v1/users", { email: email(who), password: password(who), role: roles[who], api });
  expect(u.status).toBe(201);
  uuids[who] = Object.keys(u.body!.users)[0];
  if (api) tokens[who] = await tokenFor(s.base, email(who), password(who));
}

const makeKey = (who: string, body: Record<string, unknown>, auth: { token?: string; headers?: Record<string, string> } = { token: tokens[who] }) =>
  call(s.base, "POST", "/api/v1/session/api-keys", { ...auth, body: { password: password(who), ...body } });
const listKeys = (who: string) => call(s.base, "GET", "/api/v1/session/api-keys", { token: tokens[who] });

beforeAll(async () => {
  s = await adminSite({ defs: { notes } });
  await s.apiJson("POST", "/api/v1/notes/n1", { title: "One" });
  await user("ci", ["view-notes", "create-notes"]);
  await user("lim", ["view-notes", "create-notes", "view-users"]);
  await user("many", ["view-notes"]);
  await user("gone", ["view-notes"]);
  await user("cut", ["view-notes"]);
  await user("shift", ["view-notes"]);
  await user("noapi", ["view-notes"], false);
  await user("twofa", ["view-notes"]);
});
afterAll(() => s.cleanup());

describe("API keys over HTTP", () => {
  test("create (password again) → the key once; list without it; use as a bearer; revoke → 401 at once", async () => {
    const wrong = await makeKey("ci", { name: "ci", password: "wrong-wrong-wrong" });
    expect(wrong.status).toBe(401);
    expect(wrong.body!.message).toBe("INVALID_CREDENTIALS");
    expect((await makeKey("ci", { name: "ci", password: undefined })).status).toBe(400);

    const made = await makeKey("ci", { name: "deploy" });
    expect(made.status).toBe(201);
    const { id, key } = made.body! as { id: string; key: string };
    expect(key).toMatch(/^resd_[0-9a-f-]{36}_[A-Za-z0-9_-]{43}$/);
    expect(key).toContain(id);
    expect(made.body).toMatchObject({ name: "deploy", expires: null, permissions: null });
    expect(typeof made.body!.created).toBe("number");
    expect(made.headers.get("cache-control")).toBe("no-store");

    const list = await listKeys("ci");
    expect(list.status).toBe(200);
    expect(list.body!.keys).toHaveLength(1);
    expect(Object.keys(list.body!.keys[0]).sort()).toEqual(["created", "expires", "id", "last_used", "name", "permissions"]);
    expect(list.body!.keys[0]).toMatchObject({ id, name: "deploy", expires: null, permissions: null });
    expect(JSON.stringify(list.body)).not.toContain(key.split("_").pop()!);

    const read = await call(s.base, "GET", "/api/v1/notes", { token: key });
    expect(read.status).toBe(200);
    expect(Object.keys(read.body!.notes)).toEqual(["n1"]);
    const write = await call(s.base, "POST", "/api/v1/notes", { token: key, body: { title: "by key" } });
    expect(write.status).toBe(201);
    expect(Object.values(write.body!.notes as Record<string, { _created_by: string }>)[0]._created_by).toBe(uuids.ci);
    // The use is noted (at most once a minute, after the answer).
    let used: { last_used: number | null } = { last_used: null };
    for (let i = 0; i < 40 && used.last_used === null; i++) {
      used = (await listKeys("ci")).body!.keys[0];
      if (used.last_used === null) await Bun.sleep(50);
    }
    expect(typeof used.last_used).toBe("number");

    // A key manages no keys and no two-factor settings, and mints no token.
    expect((await makeKey("ci", { name: "from a key" }, { token: key })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/session/api-keys", { token: key })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/session/2fa/enrol", { token: key, body: { password: password("ci") } })).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: key })).status).toBe(401);

    // Another user's key is as unknown as none.
    expect((await call(s.base, "DELETE", `/api/v1/session/api-keys/${id}`, { token: tokens.lim })).status).toBe(404);
    const revoked = await call(s.base, "DELETE", `/api/v1/session/api-keys/${id}`, { token: tokens.ci });
    expect(revoked.status).toBe(200);
    expect(revoked.body!.ok).toBe(true);
    const after = await call(s.base, "GET", "/api/v1/notes", { token: key });
    expect(after.status).toBe(401);
    expect(after.body!.message).toBe("UNAUTHORIZED");
    expect((await call(s.base, "DELETE", `/api/v1/session/api-keys/${id}`, { token: tokens.ci })).status).toBe(404);
    expect((await listKeys("ci")).body!.keys).toEqual([]);
  });

  test("a forged or altered key → 401", async () => {
    const { key } = (await makeKey("ci", { name: "to alter" })).body! as { key: string };
    const last = key.at(-1) === "A" ? "B" : "A";
    for (const bad of [`${key.slice(0, -1)}${last}`, "resd_nope", `resd_${crypto.randomUUID()}_${"x".repeat(43)}`]) {
      expect((await call(s.base, "GET", "/api/v1/notes", { token: bad })).status, bad).toBe(401);
    }
  });

  test("bad input: name 1-100 characters, expiry a number of days, permissions a list the role holds", async () => {
    for (const body of [{}, { name: "" }, { name: "x".repeat(101) }, { name: "a\nb" }, { name: "ok", expires_in_days: 0 }, { name: "ok", expires_in_days: "3" },
      { name: "ok", permissions: [] }, { name: "ok", permissions: "view-notes" }, { name: "ok", permissions: ["delete-notes"] }, { name: "ok", permissions: ["(all)"] }]) {
      const r = await makeKey("ci", body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body!.message).toBe("INVALID_DATA");
    }
    expect((await makeKey("ci", { name: "x".repeat(100) })).status).toBe(201);
    const noApi = await call(s.base, "POST", "/api/v1/session", { body: { email: email("noapi"), password: password("noapi") } });
    const cookie = /resd_session=([^;]*)/.exec(noApi.headers.get("set-cookie")!)![1];
    const refused = await makeKey("noapi", { name: "x" }, { headers: { cookie: `resd_session=${cookie}` } });
    expect(refused.status).toBe(403);
    expect((await makeKey("ci", { name: "anon" }, {})).status).toBe(401);
  });

  test("an expired key → 401", async () => {
    const made = await makeKey("ci", { name: "short", expires_in_days: 2 / 86400 });
    expect(made.status).toBe(201);
    expect(made.body!.expires - made.body!.created).toBe(2);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: made.body!.key })).status).toBe(200);
    await Bun.sleep(3000);
    const r = await call(s.base, "GET", "/api/v1/notes", { token: made.body!.key });
    expect(r.status).toBe(401);
    expect(r.body!.details).toContain("expired");
    // Still listed (with its expiry) until revoked.
    expect((await listKeys("ci")).body!.keys.some((k: { id: string }) => k.id === made.body!.id)).toBe(true);
  });

  test("a key limited to a list: 403 on what the list lacks though the user may; a role change counts at once", async () => {
    const made = await makeKey("lim", { name: "read only", permissions: ["view-notes"] });
    expect(made.status).toBe(201);
    expect(made.body!.permissions).toEqual(["view-notes"]);
    const key = made.body!.key as string;
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(200);
    const write = await call(s.base, "POST", "/api/v1/notes", { token: key, body: { title: "no" } });
    expect(write.status).toBe(403);
    expect(write.body!.needs).toContain("create-notes");
    expect((await call(s.base, "GET", "/api/v1/users", { token: key })).status).toBe(403);
    // Not even the own record's self_edit fields, which the user may change.
    expect((await call(s.base, "PATCH", `/api/v1/users/${uuids.lim}`, { token: key, body: { name: "Renamed" } })).status).toBe(403);
    expect((await call(s.base, "PATCH", `/api/v1/users/${uuids.lim}`, { token: tokens.lim, body: { name: "Lim" } })).status).toBe(200);
    // The user may do both.
    expect((await call(s.base, "POST", "/api/v1/notes", { token: tokens.lim, body: { title: "yes" } })).status).toBe(201);
    expect((await call(s.base, "GET", "/api/v1/users", { token: tokens.lim })).status).toBe(200);
    // Its OpenAPI document shows only what it may do.
    const doc = await call(s.base, "GET", "/api/v1/openapi.json", { token: key });
    expect(Object.keys(doc.body!.paths["/api/v1/notes"])).toEqual(["get"]);
    expect(doc.body!.paths["/api/v1/users"]).toBeUndefined();

    // The role loses view-notes: the key loses it at the next request.
    expect((await s.apiJson("PATCH", `/api/v1/roles/${roles.lim}`, { permissions: ["create-notes", "view-users"] })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(403);
    expect((await s.apiJson("PATCH", `/api/v1/roles/${roles.lim}`, { permissions: ["view-notes", "create-notes", "view-users"] })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(200);
  });

  test("a role change reaches a key with all of the user's rights too", async () => {
    const { key } = (await makeKey("shift", { name: "all" })).body! as { key: string };
    expect((await call(s.base, "POST", "/api/v1/notes", { token: key, body: { title: "no" } })).status).toBe(403);
    await s.apiJson("PATCH", `/api/v1/roles/${roles.shift}`, { permissions: ["view-notes", "create-notes"] });
    expect((await call(s.base, "POST", "/api/v1/notes", { token: key, body: { title: "now" } })).status).toBe(201);
  });

  test("a key after its user loses API access → 401, and stays dead when the access comes back; a deleted user's key → 401", async () => {
    const { key } = (await makeKey("cut", { name: "ci" })).body! as { key: string };
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(200);
    expect((await s.apiJson("PATCH", `/api/v1/users/${uuids.cut}`, { api: false })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(401);
    expect((await s.apiJson("PATCH", `/api/v1/users/${uuids.cut}`, { api: true })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(401);
    // It is gone from the list as well.
    const token = await tokenFor(s.base, email("cut"), password("cut"));
    expect((await call(s.base, "GET", "/api/v1/session/api-keys", { token })).body!.keys).toEqual([]);

    const other = (await makeKey("gone", { name: "ci" })).body!.key as string;
    expect((await call(s.base, "GET", "/api/v1/notes", { token: other })).status).toBe(200);
    expect((await s.apiJson("DELETE", `/api/v1/users/${uuids.gone}`)).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: other })).status).toBe(401);
  });

  test("a user with two-factor sign-in: a key needs no code (a token does)", async () => {
    const e = await call(s.base, "POST", "/api/v1/session/2fa/enrol", { token: tokens.twofa, body: { password: password("twofa") } });
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(e.body!.secret), algorithm: "SHA1", digits: 6, period: 30 });
    expect((await call(s.base, "POST", "/api/v1/session/2fa/confirm", { token: tokens.twofa, body: { code: totp.generate() } })).status).toBe(200);
    // The confirmation ended the token: a new one needs the code; the key is made with it.
    const none = await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("twofa"), password: password("twofa") } });
    expect(none.status).toBe(401);
    expect(none.body!.two_factor).toBe(true);
    const next = totp.generate({ timestamp: Date.now() + 30_000 });
    const token = (await call(s.base, "POST", "/api/v1/auth/token", { body: { email: email("twofa"), password: password("twofa"), code: next } })).body!.token as string;
    const made = await makeKey("twofa", { name: "ci" }, { token });
    expect(made.status).toBe(201);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: made.body!.key })).status).toBe(200);
  });

  test("at most 50 keys per user (409 past it), even when asked at once", async () => {
    for (let i = 0; i < 48; i++) expect((await makeKey("many", { name: `k${i}` })).status).toBe(201);
    // Four at once (each checks the password: more at once would meet the sign-in lock).
    const replies = await Promise.all(Array.from({ length: 4 }, (_, i) => makeKey("many", { name: `last${i}` })));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(2);
    const refused = replies.filter((r) => r.status !== 201);
    expect(refused.map((r) => r.status)).toEqual([409, 409]);
    expect(refused[0].body!.message).toBe("CONFLICT");
    expect((await listKeys("many")).body!.keys).toHaveLength(50);
  });
});

describe("API keys from the CLI", () => {
  test("resd token create (--expires, --permissions, --json), list, revoke; resd token EMAIL unchanged", async () => {
    const plain = await cli(s.dir, ["token", "create", email("lim"), "--name", "cli key"]);
    expect(plain.code).toBe(0);
    const key = plain.stdout.trim();
    expect(key).toMatch(/^resd_[0-9a-f-]{36}_[A-Za-z0-9_-]{43}$/);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: key })).status).toBe(200);

    const json = await cli(s.dir, ["token", "create", email("lim"), "--name", "ci", "--expires", "30", "--permissions", "view-notes", "--json"]);
    expect(json.code).toBe(0);
    const made = JSON.parse(json.stdout);
    expect(made).toMatchObject({ name: "ci", permissions: ["view-notes"] });
    expect(made.expires - made.created).toBe(30 * 86400);
    expect((await call(s.base, "POST", "/api/v1/notes", { token: made.key, body: { title: "no" } })).status).toBe(403);

    const list = await cli(s.dir, ["token", "list", email("lim"), "--json"]);
    expect(list.code).toBe(0);
    const keys = JSON.parse(list.stdout) as { id: string; name: string }[];
    expect(keys.map((k) => k.name)).toEqual(["read only", "cli key", "ci"]);
    expect(list.stdout).not.toContain(made.key);
    const text = await cli(s.dir, ["token", "list", email("lim")]);
    expect(text.stdout).toContain("cli key");
    expect(text.stdout).toContain("view-notes");

    const revoke = await cli(s.dir, ["token", "revoke", made.id]);
    expect(revoke.code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: made.key })).status).toBe(401);
    expect((await cli(s.dir, ["token", "revoke", made.id])).code).toBe(2);

    expect((await cli(s.dir, ["token", "create", email("lim"), "--name", "too much", "--permissions", "delete-notes"])).code).toBe(2);
    expect((await cli(s.dir, ["token", "create", email("noapi"), "--name", "x"])).code).toBe(2);
    expect((await cli(s.dir, ["token", "create", "ghost@example.com", "--name", "x"])).code).toBe(2);
    expect((await cli(s.dir, ["token", "create", email("lim")])).code).toBe(2);

    const token = await cli(s.dir, ["token", email("lim")]);
    expect(token.code).toBe(0);
    expect(token.stdout.trim()).toMatch(/^eyJ/);
    expect((await call(s.base, "GET", "/api/v1/notes", { token: token.stdout.trim() })).status).toBe(200);
  });
});
