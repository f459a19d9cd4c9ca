/** Anonymous allows from ext/uri route files, the form key and honeypot, and the users write rules. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const contact = { fields: { name: { type: "text", required: true }, message: { type: "textarea" } } };
const news = { fields: { title: { type: "text", required: true } } };
const secret = { fields: { title: { type: "text" } } };
let s: Awaited<ReturnType<typeof adminSite>>;

beforeAll(async () => {
  s = await adminSite({
    defs: { contact, news, secret },
    files: {
      "ext/uri/api/v1/contact/index.tpl": "<form>…</form>\n[#api-allow post contact#]\n",
      "ext/uri/api/v1/news/index.tpl": "[#api-allow get news#] [# api-allow delete news #]",
      // A tag for another resource, and an unknown operation, open nothing.
      "ext/uri/api/v1/secret/index.tpl": "[#api-allow get news#][#api-allow export secret#][#api-allow post contact#]",
      "ext/uri/api/v1/users/index.tpl": "[#api-allow post users#]",
    },
  });
  await s.apiJson("POST", "/api/v1/news/n1", { title: "Hello" });
  await s.apiJson("POST", "/api/v1/secret/s1", { title: "Hidden" });
});
afterAll(async () => { await s.cleanup(); });

describe("[#api-allow <op> <resource>#]", () => {
  test("post contact: anonymous may create, and nothing else on contact", async () => {
    const r = await call(s.base, "POST", "/api/v1/contact", { body: { name: "Ann", message: "Hi" } });
    expect(r.status).toBe(201);
    const uuid = Object.keys(r.body!.contact)[0];
    expect(r.body!.contact[uuid]._created_by).toBeNull();
    const list = await call(s.base, "GET", "/api/v1/contact");
    expect(list.status).toBe(403);
    expect(list.body!.needs).toContain("view-contact");
    expect((await call(s.base, "GET", `/api/v1/contact/${uuid}`)).status).toBe(403);
    expect((await call(s.base, "PUT", `/api/v1/contact/${uuid}`, { body: { name: "X" } })).status).toBe(403);
    expect((await call(s.base, "DELETE", `/api/v1/contact/${uuid}`)).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/contact/export")).status).toBe(403);
  });

  test("get news opens list and read; delete news one record but never delete-all; post stays closed", async () => {
    expect((await call(s.base, "GET", "/api/v1/news")).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/news/n1")).status).toBe(200);
    expect((await call(s.base, "POST", "/api/v1/news", { body: { title: "x" } })).status).toBe(403);
    expect((await call(s.base, "DELETE", "/api/v1/news")).status).toBe(403);
    expect((await call(s.base, "DELETE", "/api/v1/news/n1")).status).toBe(200);
  });

  test("a tag naming another resource than its folder, or an unknown operation, is ignored", async () => {
    expect((await call(s.base, "GET", "/api/v1/secret")).status).toBe(403);
    expect((await call(s.base, "GET", "/api/v1/secret/export")).status).toBe(403);
    expect(s.output()).toContain("ignored [#api-allow export secret#]");
  });

  test("allow files are re-read while the server runs", async () => {
    const { writeFileSync, mkdirSync } = await import("node:fs");
    mkdirSync(`${s.dir}/ext/uri/api/v1/secret`, { recursive: true });
    writeFileSync(`${s.dir}/ext/uri/api/v1/secret/index.tpl`, "[#api-allow get secret#]");
    const deadline = Date.now() + 6000;
    let status = 0;
    while (Date.now() < deadline && (status = (await call(s.base, "GET", "/api/v1/secret/s1")).status) !== 200) await Bun.sleep(250);
    expect(status).toBe(200);
  }, 30_000);
});

describe("form key and honeypot", () => {
  test("a valid _form_key passes and is not stored; a forged or other resource's key 403; a filled _hp 400", async () => {
    const k = await call(s.base, "GET", "/api/v1/auth/form-key/contact");
    expect(k.status).toBe(200);
    const key = k.body!.form_key as string;
    expect(k.body!.expires).toBeGreaterThan(Date.now() / 1000);
    const ok = await call(s.base, "POST", "/api/v1/contact", { body: { name: "Bo", _form_key: key, _hp: "" } });
    expect(ok.status).toBe(201);
    const rec = Object.values(ok.body!.contact)[0] as Record<string, unknown>;
    expect(rec).not.toHaveProperty("_form_key");
    expect(rec).not.toHaveProperty("_hp");
    expect((await call(s.base, "POST", "/api/v1/contact", { body: { name: "Bo", _form_key: `${key.split(".")[0]}.${"A".repeat(32)}` } })).status).toBe(403);
    const newsKey = (await call(s.base, "GET", "/api/v1/auth/form-key/news")).body!.form_key;
    expect((await call(s.base, "POST", "/api/v1/contact", { body: { name: "Bo", _form_key: newsKey } })).status).toBe(403);
    const spam = await call(s.base, "POST", "/api/v1/contact", { body: { name: "Bot", _hp: "http://spam.example" } });
    expect(spam.status).toBe(400);
    expect(spam.body!.errors).toEqual({ _hp: "must be empty" });
    expect((await call(s.base, "GET", "/api/v1/auth/form-key/nope")).status).toBe(404);
  });
});

describe("users: sign-up, self_edit and role rules", () => {
  test("anonymous sign-up (post users) cannot pick a role or switch on API access", async () => {
    const plain = await call(s.base, "POST", "/api/v1/users", { body: { email: "new@example.com", password: "pw-new-long-1" } });
    expect(plain.status).toBe(201);
    expect(JSON.stringify(plain.body)).not.toContain("pw-new-long-1");
    expect((await call(s.base, "POST", "/api/v1/users", { body: { email: "evil@example.com", password: "x-long-password", role: "admin" } })).status).toBe(403);
    expect((await call(s.base, "POST", "/api/v1/users", { body: { email: "evil2@example.com", password: "x-long-password", api: true } })).status).toBe(403);
  });

  test("self_edit: own name yes; other own fields, other users no; role raise and own API access never", async () => {
    await s.apiJson("POST", "/api/v1/roles", { name: "member", permissions: ["view-news", "export-news"] });
    await s.apiJson("POST", "/api/v1/roles", { name: "useradmin", permissions: ["view-users", "edit-users", "create-users"] });
    const me = await addUser(s.dir, "me@example.com", "me-pw-long-1", { role: "member", api: true });
    const other = await addUser(s.dir, "other@example.com", "other-pw-long-1");
    const t = await tokenFor(s.base, "me@example.com", "me-pw-long-1");
    const own = await call(s.base, "PUT", `/api/v1/users/${me.uuid}`, { token: t, body: { name: "Me Myself" } });
    expect(own.status).toBe(200);
    expect(own.body!.users[me.uuid].name).toBe("Me Myself");
    const email = await call(s.base, "PUT", `/api/v1/users/${me.uuid}`, { token: t, body: { email: "x@example.com" } });
    expect(email.status).toBe(403);
    expect(email.body!.needs).toStartWith(`api_put_users_${me.uuid},`);
    expect((await call(s.base, "PUT", `/api/v1/users/${me.uuid}`, { token: t, body: { role: "admin" } })).status).toBe(403);
    expect((await call(s.base, "PUT", `/api/v1/users/${other.uuid}`, { token: t, body: { name: "Hacked" } })).status).toBe(403);
    expect((await call(s.base, "PUT", "/api/v1/users", { token: t, body: { [me.uuid]: { name: "Bulk" } } })).status).toBe(403);

    const ua = await addUser(s.dir, "ua@example.com", "ua-pw-long-1", { role: "useradmin", api: true });
    const ut = await tokenFor(s.base, "ua@example.com", "ua-pw-long-1");
    // May not touch a user whose role holds more (delete-users, which useradmin lacks)...
    await s.apiJson("POST", "/api/v1/roles", { name: "deleter", permissions: ["delete-users"] });
    const strong = await addUser(s.dir, "strong@example.com", "strong-pw-long-1", { role: "deleter" });
    expect((await call(s.base, "PUT", `/api/v1/users/${strong.uuid}`, { token: ut, body: { name: "Not yours" } })).status).toBe(403);
    // ...may edit every field of others, but not hand out a role above its own.
    expect((await call(s.base, "PUT", `/api/v1/users/${other.uuid}`, { token: ut, body: { name: "Renamed", email: "other2@example.com" } })).status).toBe(200);
    expect((await call(s.base, "PUT", `/api/v1/users/${other.uuid}`, { token: ut, body: { api: true } })).status).toBe(200);
    const raise = await call(s.base, "PUT", `/api/v1/users/${other.uuid}`, { token: ut, body: { role: "admin" } });
    expect(raise.status).toBe(403);
    expect(raise.body!.message).toBe("ACCESS_DENIED");
    expect((await call(s.base, "PUT", `/api/v1/users/${ua.uuid}`, { token: ut, body: { role: "admin" } })).status).toBe(403);
    expect((await call(s.base, "PUT", "/api/v1/users", { token: ut, body: { [ua.uuid]: { role: "admin" } } })).status).toBe(403);
    // A role holding something the caller lacks (export-news) is a raise, even if smaller otherwise;
    // view-news is no raise: everybody has it (anonymous allow), signed-in users too.
    expect((await call(s.base, "PUT", `/api/v1/users/${ua.uuid}`, { token: ut, body: { role: "member" } })).status).toBe(403);
    // Nobody switches on their own API access.
    await addUser(s.dir, "ua2@example.com", "ua2-pw-long-1", { role: "useradmin" });
    const ua2 = await call(s.base, "POST", "/api/v1/session", { body: { email: "ua2@example.com", password: "ua2-pw-long-1" } });
    const cookie = (ua2.headers.get("set-cookie") ?? "").split(";")[0];
    const meUa2 = (await call(s.base, "GET", "/api/v1/session", { headers: { cookie } })).body!.user.uuid;
    const selfApi = await call(s.base, "PUT", `/api/v1/users/${meUa2}`, { body: { api: true }, headers: { cookie } });
    expect(selfApi.status).toBe(403);
    expect(selfApi.body!.details).toContain("own API access");
    // Lowering one's own role is allowed.
    await s.apiJson("POST", "/api/v1/roles", { name: "lowly", permissions: ["view-users"] });
    expect((await call(s.base, "PUT", `/api/v1/users/${ua.uuid}`, { token: ut, body: { role: "lowly" } })).status).toBe(200);
    expect((await call(s.base, "PUT", `/api/v1/users/${other.uuid}`, { token: ut, body: { name: "again" } })).status).toBe(403);
    // The admin may do all of it.
    expect((await s.apiJson("PUT", `/api/v1/users/${other.uuid}`, { role: "admin", api: true })).status).toBe(200);
  }, 30_000);
});
