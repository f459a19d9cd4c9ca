/**
 * Attacks on the access model, each as a black-box request sequence against the real server: a
 * narrow permission must never reach admin, and no secret of a user is ever handed out.
 * Every case here failed on the code before the access-model rework (issue 11).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { connect } from "node:net";
import { existsSync, statSync, readFileSync } from "node:fs";
import { join } from "node:path";
import JSZip from "jszip";
import type { Server as BunServer } from "bun";
import { adminSite, cli, makeSite, onPostgres, serve } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

type Site = Awaited<ReturnType<typeof adminSite>>;
const PW = "attacker-password";

const notes = { fields: { title: { type: "text", required: true } } };

/** A role with exactly these permissions, and a user holding it with API access; returns the user's token. */
async function userWithRole(s: Site, email: string, role: string, permissions: string[]) {
  const r = await s.apiJson("POST", "/api/v1/roles", { name: role, permissions });
  if (r.status !== 201) throw new Error(`role ${role}: ${JSON.stringify(r.body)}`);
  const roleUuid = Object.keys(r.body!.roles)[0];
  const u = await addUser(s.dir, email, PW, { role, api: true });
  return { token: await tokenFor(s.base, email, PW), roleUuid, userUuid: u.uuid };
}

const isAdmin = async (s: Site, token: string) => (await call(s.base, "GET", "/api/v1/users", { token })).status === 200;

async function importFile(s: Site, token: string, resource: string, name: string, text: string) {
  const form = new FormData();
  form.append("file", new Blob([text]), name);
  const res = await fetch(`${s.base}/api/v1/${resource}/import`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

let s: Site;
let adminUuid: string;
beforeAll(async () => {
  // History on for users, so that history and restore answers can be checked for leaks too.
  s = await adminSite({ defs: { notes, users: { history: true, fields: {} } }, files: { "ext/uri/api/v1/notes/index.tpl": "[#api-allow post notes#]\n" } });
  adminUuid = Object.values((await s.apiJson("GET", "/api/v1/users?filter=email:admin@example.com")).body!.users as Record<string, { uuid: string }>)[0].uuid;
});
afterAll(async () => { await s.cleanup(); });

describe("1. import passes the same guard as an API write", () => {
  test("import-roles alone cannot import (all) into its own role", async () => {
    const a = await userWithRole(s, "importer@example.com", "importer", ["import-roles"]);
    const r = await importFile(s, a.token, "roles", "roles.csv", `name,permissions\nimporter,"[""(all)""]"\n`);
    expect(r.body.stats?.errors ?? (r.status === 403 ? 1 : 0)).toBe(1);
    expect(await isAdmin(s, a.token)).toBe(false);
    const role = (await s.apiJson("GET", `/api/v1/roles/${a.roleUuid}`)).body!.roles[a.roleUuid];
    expect(role.permissions).toEqual(["import-roles"]);
  });

  test("import-users alone cannot create an admin or switch on API access", async () => {
    const a = await userWithRole(s, "uimporter@example.com", "uimporter", ["import-users"]);
    const r = await importFile(s, a.token, "users", "users.csv", `email,password,role,api\nsneak@example.com,sneaky-password,admin,\nsneak2@example.com,sneaky-password,,yes\n`);
    expect(r.body.stats.errors).toBe(2);
    expect(r.body.stats.created).toBe(0);
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "sneak@example.com", password: "sneaky-password" } })).status).toBe(403);
  });
});

describe("2. roles are referenced by uuid; renames are checked", () => {
  test("two role editors cannot make one of them admin by renaming roles", async () => {
    const a = await userWithRole(s, "ed1@example.com", "editor1", ["view-roles", "edit-roles"]);
    const b = await userWithRole(s, "ed2@example.com", "editor2", ["view-roles", "edit-roles"]);
    expect((await call(s.base, "PUT", `/api/v1/roles/${a.roleUuid}`, { token: b.token, body: { name: "editor1-old" } })).status).toBe(200);
    const rename = await call(s.base, "PUT", "/api/v1/roles/admin", { token: b.token, body: { name: "editor1" } });
    expect(rename.status).toBe(403);
    expect(await isAdmin(s, a.token)).toBe(false);
    // Even the admin cannot rename, strip or delete the built-in role.
    expect((await s.apiJson("PUT", "/api/v1/roles/admin", { name: "boss" })).status).toBe(403);
    expect((await s.apiJson("PUT", "/api/v1/roles/admin", { permissions: ["view-notes"] })).status).toBe(403);
    expect((await s.apiJson("DELETE", "/api/v1/roles/admin")).status).toBe(403);
    expect((await s.apiJson("GET", "/api/v1/roles/admin")).body!.roles.admin).toMatchObject({ name: "admin", permissions: ["(all)"] });
  });

  test("users read their role as the role's uuid; writes accept a name or a uuid", async () => {
    const r = await s.apiJson("POST", "/api/v1/roles", { name: "reader", permissions: ["view-notes"] });
    const roleUuid = Object.keys(r.body!.roles)[0];
    const byName = await s.apiJson("POST", "/api/v1/users", { email: "byname@example.com", password: "long-enough-pw", role: "reader" });
    expect(byName.status).toBe(201);
    expect(Object.values(byName.body!.users as Record<string, any>)[0].role).toBe(roleUuid);
    const byUuid = await s.apiJson("POST", "/api/v1/users", { email: "byuuid@example.com", password: "long-enough-pw", role: roleUuid });
    expect(Object.values(byUuid.body!.users as Record<string, any>)[0].role).toBe(roleUuid);
    expect((await s.apiJson("GET", `/api/v1/users/${adminUuid}`)).body!.users[adminUuid].role).toBe("admin");
  });

  test("changing a role needs every permission it has and will have", async () => {
    const a = await userWithRole(s, "ed3@example.com", "editor3", ["view-roles", "edit-roles", "delete-roles", "view-notes"]);
    const r = await s.apiJson("POST", "/api/v1/roles", { name: "strong", permissions: ["delete-users"] });
    const strong = Object.keys(r.body!.roles)[0];
    // Renaming or narrowing a role stronger than oneself, or deleting it, is refused.
    expect((await call(s.base, "PUT", `/api/v1/roles/${strong}`, { token: a.token, body: { name: "weak" } })).status).toBe(403);
    expect((await call(s.base, "PUT", `/api/v1/roles/${strong}`, { token: a.token, body: { permissions: ["view-notes"] } })).status).toBe(403);
    expect((await call(s.base, "DELETE", `/api/v1/roles/${strong}`, { token: a.token })).status).toBe(403);
    const weak = Object.keys((await s.apiJson("POST", "/api/v1/roles", { name: "weak2", permissions: ["view-notes"] })).body!.roles)[0];
    expect((await call(s.base, "PUT", `/api/v1/roles/${weak}`, { token: a.token, body: { name: "weak3" } })).status).toBe(200);
  });

  test("the decision is taken when the write runs, not when the request started (held body)", async () => {
    const a = await userWithRole(s, "held@example.com", "heldrole", ["view-roles", "edit-roles", "view-notes"]);
    const target = Object.keys((await s.apiJson("POST", "/api/v1/roles", { name: "target", permissions: ["view-notes"] })).body!.roles)[0];
    const body = JSON.stringify({ name: "renamed-target" });
    const url = new URL(s.base);
    const sock = connect(Number(url.port), url.hostname);
    await new Promise<void>((ok) => sock.once("connect", () => ok()));
    let answer = "";
    sock.on("data", (d) => (answer += d.toString()));
    const done = new Promise<void>((ok) => sock.once("close", () => ok()));
    sock.write(`PUT /api/v1/roles/${target} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${a.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`);
    await Bun.sleep(300);
    // Meanwhile the admin takes edit-roles away from the caller's role.
    expect((await s.apiJson("PUT", `/api/v1/roles/${a.roleUuid}`, { permissions: ["view-notes"] })).status).toBe(200);
    sock.write(body.slice(5));
    await done;
    expect(answer.split(" ")[1]).toBe("403");
    expect((await s.apiJson("GET", `/api/v1/roles/${target}`)).body!.roles[target].name).toBe("target");
  });
});

describe("3. a renamed admin role (old site) does not stop start-up", () => {
  test("the admin role is found by its uuid and repaired; users named by role name are migrated to uuids", async () => {
    const dir = makeSite({ store: "sqlite" }); // an old site is made by editing the SQLite file
    expect((await cli(dir, ["user", "add", "boss@example.com", "--password", "boss-password", "--role", "admin", "--api"])).code).toBe(0);
    expect((await cli(dir, ["import", "roles", join(dir, "roles.json")], { stdin: "" })).code).not.toBe(0); // no such file: a sanity check of the CLI
    await Bun.write(join(dir, "roles.json"), JSON.stringify([{ uuid: "editor-role", name: "editor", permissions: ["view-roles"] }]));
    expect((await cli(dir, ["import", "roles", join(dir, "roles.json")])).code).toBe(0);
    expect((await cli(dir, ["user", "add", "ed@example.com", "--password", "editor-password", "--role", "editor"])).code).toBe(0);
    // What an old site looks like: the admin role renamed, users naming their role.
    const db = new Database(join(dir, "data", "resd.db"));
    db.run(`UPDATE "r:roles" SET data = json_set(data, '$.name', 'boss') WHERE uuid = 'admin'`);
    db.run(`UPDATE "r:users" SET data = json_set(data, '$.role', 'editor') WHERE json_extract(data, '$.email') = 'ed@example.com'`);
    db.close();
    const srv = await serve(dir);
    try {
      const token = (await cli(dir, ["token", "boss@example.com"])).stdout.trim();
      const roles = await call(srv.base, "GET", "/api/v1/roles/admin", { token });
      expect(roles.status).toBe(200);
      expect(roles.body!.roles.admin).toMatchObject({ name: "admin", permissions: ["(all)"] });
      const users = await call(srv.base, "GET", "/api/v1/users?filter=email:ed@example.com", { token });
      expect(Object.values(users.body!.users as Record<string, any>)[0].role).toBe("editor-role");
    } finally {
      await srv.stop();
    }
  });
});

describe("4. a user manager cannot take over stronger users", () => {
  test("edit-users cannot change, delete or restore a user whose role holds more", async () => {
    const m = await userWithRole(s, "manager@example.com", "manager", ["view-users", "create-users", "edit-users", "delete-users"]);
    for (const body of [{ password: "taken-over-pw" }, { email: "mine@example.com" }, { api: false }, { role: m.roleUuid }, { name: "x" }]) {
      const r = await call(s.base, "PUT", `/api/v1/users/${adminUuid}`, { token: m.token, body });
      expect(r.status).toBe(403);
    }
    expect((await call(s.base, "PATCH", `/api/v1/users/${adminUuid}`, { token: m.token, body: { password: "taken-over-pw" } })).status).toBe(403);
    expect((await call(s.base, "PUT", "/api/v1/users", { token: m.token, body: { [adminUuid]: { password: "taken-over-pw" } } })).status).toBe(403);
    expect((await call(s.base, "DELETE", `/api/v1/users/${adminUuid}`, { token: m.token })).status).toBe(403);
    // The admin can still sign in with the old password.
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "admin@example.com", password: "admin-password" } })).status).toBe(200);
    // A user with a weaker role is fine to manage.
    const low = await s.apiJson("POST", "/api/v1/users", { email: "low@example.com", password: "low-password-1" });
    const lowUuid = Object.keys(low.body!.users)[0];
    expect((await call(s.base, "PUT", `/api/v1/users/${lowUuid}`, { token: m.token, body: { name: "Low" } })).status).toBe(200);
  });
});

describe("5. the API-access guard looks at the stored (normalised) value", () => {
  test('anonymous sign-up and self edits cannot switch on API access with "true", 1 or "yes"', async () => {
    const signup = await adminSite({ files: { "ext/uri/api/v1/users/index.tpl": "[#api-allow post users#]\n" } });
    try {
      for (const [i, api] of (["true", 1, "yes", "1", "on"] as unknown[]).entries()) {
        const r = await call(signup.base, "POST", "/api/v1/users", { body: { email: `anon${i}@example.com`, password: "anon-password-1", api } });
        expect(r.status).toBe(403);
      }
      const list = await signup.apiJson("GET", "/api/v1/users?filter=email:anon0@example.com");
      expect(list.body!.count).toBe(0);
    } finally {
      await signup.cleanup();
    }
  });
});

describe("6. parallel guesses do not bypass the lockout", () => {
  test("40 simultaneous wrong passwords: at most the allowed number is checked, the rest 429 at once", async () => {
    await addUser(s.dir, "victim@example.com", "victim-password", { api: true });
    const tries = Array.from({ length: 40 }, () => call(s.base, "POST", "/api/v1/auth/token", { body: { email: "victim@example.com", password: "wrong-guess" } }));
    const statuses = (await Promise.all(tries)).map((r) => r.status);
    expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThanOrEqual(35);
    expect(statuses.every((x) => x === 401 || x === 429)).toBe(true);
  });

  test("same for sessions", async () => {
    await addUser(s.dir, "victim2@example.com", "victim-password");
    const tries = Array.from({ length: 40 }, () => call(s.base, "POST", "/api/v1/session", { body: { email: "victim2@example.com", password: "wrong-guess" } }));
    const statuses = (await Promise.all(tries)).map((r) => r.status);
    expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThanOrEqual(35);
  });
});

describe("7. import-document: bounded unzip, no anonymous callers, rate-limited AI", () => {
  let provider: BunServer<undefined>;
  let site: Site;
  let calls = 0;
  beforeAll(async () => {
    provider = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: () => { calls++; return Response.json({ choices: [{ index: 0, message: { role: "assistant", content: "{\"title\":\"T\"}" } }] }); },
    });
    site = await adminSite({
      defs: { notes },
      files: {
        ".env": `AI_API_KEY=k\nAI_BASE_URL=http://127.0.0.1:${provider.port}/v1\n`,
        "ext/uri/api/v1/notes/index.tpl": "[#api-allow post notes#]\n",
      },
      env: { AI_API_KEY: "", AI_BASE_URL: "", RESD_AI_RATE: "3" },
    });
  });
  afterAll(async () => { await site.cleanup(); provider.stop(true); });

  async function docx(xml: string) {
    const zip = new JSZip();
    zip.file("[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`);
    zip.file("_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`);
    zip.file("word/document.xml", xml);
    return zip.generateAsync({ type: "uint8array", compression: "DEFLATE" });
  }
  const send = (doc: Uint8Array, token?: string) => {
    const form = new FormData();
    form.append("file", new Blob([doc]), "doc.docx");
    return fetch(`${site.base}/api/v1/notes/import-document`, { method: "POST", headers: token ? { authorization: `Bearer ${token}` } : {}, body: form });
  };
  const plain = (text: string) => docx(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:body></w:document>`);

  test("a document that inflates past the bound is refused before it is read", async () => {
    const bomb = await docx(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${" ".repeat(40 * 1024 * 1024)}</w:body></w:document>`);
    expect(bomb.length).toBeLessThan(200_000);
    const res = await send(bomb, site.token);
    expect([413, 422]).toContain(res.status);
    expect(((await res.json()) as any).details).toMatch(/uncompressed|inflate/i);
    expect(calls).toBe(0);
  });

  test("anonymous callers are refused even where anonymous posts are allowed", async () => {
    const res = await send(await plain("hello"), undefined);
    expect(res.status).toBe(401);
    expect(calls).toBe(0);
  });

  test("AI calls are rate-limited per user", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await send(await plain(`doc ${i}`), site.token)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(calls).toBe(3);
  });
});

describe("8. signed-in users keep the anonymous allows", () => {
  test("a user without create-notes may post the form anonymous visitors may post", async () => {
    const u = await userWithRole(s, "plain@example.com", "plain", ["view-roles"]);
    expect((await call(s.base, "POST", "/api/v1/notes", { body: { title: "anon" } })).status).toBe(201);
    expect((await call(s.base, "POST", "/api/v1/notes", { token: u.token, body: { title: "signed in" } })).status).toBe(201);
  });
});

describe("leaks", () => {
  test("no answer carrying a user holds its password, salt, api or tokens", async () => {
    const secret = ["password", "salt", "api", "password_reset_token", "change_email_token"];
    const leaks = (label: string, x: unknown) => {
      const found: string[] = [];
      const walk = (v: unknown) => {
        if (Array.isArray(v)) v.forEach(walk);
        // An export's `_meta` is the definition: it names the fields, it holds no values.
        else if (v && typeof v === "object") for (const [k, w] of Object.entries(v)) { if (k === "_meta") continue; if (secret.includes(k)) found.push(`${label}: ${k}`); walk(w); }
      };
      walk(x);
      return found;
    };
    const found: string[] = [];
    const login = await call(s.base, "POST", "/api/v1/session", { body: { email: "admin@example.com", password: "admin-password" } });
    expect(login.status).toBe(200);
    found.push(...leaks("session POST", login.body));
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    found.push(...leaks("session GET", (await call(s.base, "GET", "/api/v1/session", { headers: { cookie } })).body));
    found.push(...leaks("token", (await call(s.base, "POST", "/api/v1/auth/token", { body: { email: "admin@example.com", password: "admin-password" } })).body));
    found.push(...leaks("list", (await s.apiJson("GET", "/api/v1/users")).body));
    found.push(...leaks("read", (await s.apiJson("GET", `/api/v1/users/${adminUuid}`)).body));
    const made = await s.apiJson("POST", "/api/v1/users", { email: "gone@example.com", password: "gone-password", api: true });
    const gone = Object.keys(made.body!.users)[0];
    found.push(...leaks("create", made.body));
    found.push(...leaks("update", (await s.apiJson("PUT", `/api/v1/users/${gone}`, { name: "Gone" })).body));
    found.push(...leaks("history", (await s.apiJson("GET", `/api/v1/users/${gone}/history`)).body));
    found.push(...leaks("delete", (await s.apiJson("DELETE", `/api/v1/users/${gone}`)).body));
    const restored = await s.apiJson("POST", `/api/v1/users/${gone}/restore`);
    expect(restored.status).toBe(200);
    found.push(...leaks("restore", restored.body));
    const exp = await (await s.api("GET", "/api/v1/users/export?format=json")).json();
    found.push(...leaks("export json", exp));
    const csv = await (await s.api("GET", "/api/v1/users/export?format=csv")).text();
    expect(csv.split("\n")[0].split(",").filter((h) => secret.includes(h.replace(/"/g, "")))).toEqual([]);
    expect(found).toEqual([]);
  });

  test("the OpenAPI document of a view-only caller holds no input schema of an operation it may not use", async () => {
    const v = await userWithRole(s, "viewer-openapi@example.com", "user-viewer", ["view-users", "view-notes"]);
    const doc = (await call(s.base, "GET", "/api/v1/openapi.json", { token: v.token })).body as any;
    expect(Object.keys(doc.paths)).toContain("/api/v1/users");
    const components = JSON.stringify(doc.components);
    for (const name of ['"password"', '"api"', '"salt"', "users.input"]) expect(components).not.toContain(name);
    // Anonymous visitors may post notes, so this caller may too: that input schema stays.
    expect(Object.keys(doc.components.schemas)).toContain("notes.input");
    // Every reference still resolves.
    const refs = [...JSON.stringify(doc).matchAll(/"#\/components\/(\w+)\/([^"]+)"/g)];
    expect(refs.length).toBeGreaterThan(0);
    for (const [, kind, name] of refs) expect(doc.components[kind][name], `${kind}/${name}`).toBeDefined();
  });

  test("secret files are private: data/ 0700; resd.db and .env 0600", () => {
    expect(statSync(join(s.dir, "data")).mode & 0o777).toBe(0o700);
    // On PostgreSQL the records are not on this machine at all.
    if (onPostgres) expect(existsSync(join(s.dir, "data", "resd.db"))).toBe(false);
    else expect(statSync(join(s.dir, "data", "resd.db")).mode & 0o777).toBe(0o600);
    expect(statSync(join(s.dir, ".env")).mode & 0o777).toBe(0o600);
  });

  test("a backup made --with-secrets is 0600 (a PostgreSQL site refuses, pointing to pg_dump)", async () => {
    const out = join(s.dir, "b.tar");
    const r = await cli(s.dir, ["backup", "--out", out, "--with-secrets"]);
    if (onPostgres) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("pg_dump");
      expect(existsSync(out)).toBe(false);
      return;
    }
    expect(r.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  test("a token signing key shorter than 32 bytes is refused at start-up", async () => {
    const dir = makeSite({ files: { ".env": "RESD_TOKEN_SECRET=short-secret\n" } });
    const r = await cli(dir, ["serve", "--port", "0", "--host", "127.0.0.1"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/RESD_TOKEN_SECRET/);
    expect(r.stderr).toMatch(/32/);
    expect(readFileSync(join(dir, ".env"), "utf8")).toContain("short-secret");
  });
});
