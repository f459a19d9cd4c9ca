/**
 * Hardening, round 3 (issue 31): what a review of the running server found, each as a black-box
 * attack on the real server or CLI. Every case here failed on the code before its fix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync, rmSync, mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server as BunServer } from "bun";
import { adminSite, cli, makeSite, onPostgres, serve, siteEnv, MAIN } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";
import { docx } from "./helpers/docx";

type Site = Awaited<ReturnType<typeof adminSite>>;
const PW = "reviewer-password";

const notes = {
  languages: ["en", "de"],
  fields: {
    title: { type: "text", required: true },
    intro: { type: "text", i18n: true },
    link: { type: "url" },
    pin: { type: "text" },
  },
  hidden: "pin",
};
const open = { fields: { title: { type: "text" } } };

let provider: BunServer<undefined>;
let providerCalls = 0;
let s: Site;
let viewer: string;
beforeAll(async () => {
  provider = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    fetch: () => {
      providerCalls++;
      return Response.json({ choices: [{ message: { content: JSON.stringify({ text: "written", de: "übersetzt", title: "T" }) } }] });
    },
  });
  s = await adminSite({
    defs: { notes, open },
    files: {
      ".env": `AI_API_KEY=k\nAI_BASE_URL=http://127.0.0.1:${provider.port}/v1\nAI_MODEL=m\n`,
      // Anonymous callers may create notes, so every signed-in user holds create-notes too.
      "ext/uri/api/v1/notes/index.tpl": "[#api-allow post notes#]\n",
      "ext/uri/api/v1/open/index.tpl": "[#api-allow get open#]\n",
    },
    env: { AI_API_KEY: "", AI_BASE_URL: "", AI_MODEL: "", RESD_AI_RATE: "" },
  });
  const role = await s.apiJson("POST", "/api/v1/roles", { name: "note-viewer", permissions: ["view-notes"] });
  expect(role.status).toBe(201);
  await addUser(s.dir, "viewer@example.com", PW, { role: "note-viewer", api: true });
  viewer = await tokenFor(s.base, "viewer@example.com", PW);
});
afterAll(async () => {
  await s.cleanup();
  provider.stop(true);
});

describe("1. a record's ETag gives no hidden value away", () => {
  /** The tag as it used to be built: an unkeyed hash of the stored row. */
  const unkeyed = (...parts: (string | number)[]) => `W/"${Bun.hash(parts.join("\u0000")).toString(36)}"`;

  test("a 4-digit hidden value cannot be found offline from one ETag, nor checked with If-None-Match", async () => {
    const created = await s.apiJson("POST", "/api/v1/notes", { title: "Safe", pin: "4711" });
    expect(created.status).toBe(201);
    const uuid = Object.keys(created.body!.notes)[0];
    const r = await call(s.base, "GET", `/api/v1/notes/${uuid}`, { token: viewer });
    expect(r.status).toBe(200);
    const seen = r.body!.notes[uuid];
    expect(seen.pin).toBeUndefined();
    const etag = r.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"/);
    const guesses: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const pin = String(i).padStart(4, "0");
      guesses.push(unkeyed(JSON.stringify({ title: "Safe", pin }), seen._modified, seen._modified_by ?? ""));
    }
    expect(guesses).not.toContain(etag);
    // The tag still does its job: the same caller's If-None-Match gives 304, without a body or a hint.
    const again = await fetch(`${s.base}/api/v1/notes/${uuid}`, { headers: { authorization: `Bearer ${viewer}`, "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const wrong = await fetch(`${s.base}/api/v1/notes/${uuid}`, { headers: { authorization: `Bearer ${viewer}`, "if-none-match": guesses[4711] } });
    expect(wrong.status).toBe(200);
  });

  test("a change of the record changes its tag; list tags still answer 304", async () => {
    const created = await s.apiJson("POST", "/api/v1/notes", { title: "Tagged", pin: "1" });
    const uuid = Object.keys(created.body!.notes)[0];
    const first = (await s.api("GET", `/api/v1/notes/${uuid}`)).headers.get("etag")!;
    expect((await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { pin: "2" })).status).toBe(200);
    const second = (await s.api("GET", `/api/v1/notes/${uuid}`)).headers.get("etag")!;
    expect(second).not.toBe(first);
    const list = await s.api("GET", "/api/v1/notes?limit=5");
    const tag = list.headers.get("etag")!;
    expect((await s.api("GET", "/api/v1/notes?limit=5", undefined, { "if-none-match": tag })).status).toBe(304);
  });
});

describe("2. the AI provider is spent only with create-.ai", () => {
  test("a view-only user reaches no provider through complete, translate or import-document", async () => {
    const before = providerCalls;
    const complete = await call(s.base, "POST", "/api/v1/openai/complete", { token: viewer, body: { resource: "notes", field: "title", prompt: "free prompt" } });
    expect(complete.status).toBe(403);
    expect(complete.body!.needs).toContain("create-.ai");
    const translate = await call(s.base, "POST", "/api/v1/openai/translate", { token: viewer, body: { resource: "notes", field: "intro", text: "hello" } });
    expect(translate.status).toBe(403);
    expect(translate.body!.needs).toContain("create-.ai");
    const form = new FormData();
    form.append("file", new Blob([await docx(["A title"])]), "doc.docx");
    const doc = await fetch(`${s.base}/api/v1/notes/import-document`, { method: "POST", headers: { authorization: `Bearer ${viewer}` }, body: form });
    expect(doc.status).toBe(403);
    expect(((await doc.json()) as { needs: string }).needs).toContain("create-.ai");
    expect(providerCalls).toBe(before);
  });

  test("the admin pages offer AI help only to those who hold it", async () => {
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "viewer@example.com", password: PW }) });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const described = await call(s.base, "GET", "/api/v1/.resources", { headers: { cookie } });
    expect(described.status).toBe(200);
    expect(described.body!.resources.notes.ai).toBe(false);
    expect((await s.apiJson("GET", "/api/v1/.resources")).body!.resources.notes.ai).toBe(true);
  });

  test("with create-.ai (and create on the resource) the provider is asked", async () => {
    const role = await s.apiJson("POST", "/api/v1/roles", { name: "writer", permissions: ["view-notes", "create-notes", "create-.ai"] });
    expect(role.status).toBe(201);
    await addUser(s.dir, "writer@example.com", PW, { role: "writer", api: true });
    const writer = await tokenFor(s.base, "writer@example.com", PW);
    const before = providerCalls;
    const r = await call(s.base, "POST", "/api/v1/openai/complete", { token: writer, body: { resource: "notes", field: "title", prompt: "a title" } });
    expect(r.status).toBe(200);
    expect(r.body!.text).toBe("written");
    expect(providerCalls).toBe(before + 1);
  });
});

describe("5. an unpaired UTF-16 surrogate is refused on both stores", () => {
  const lone = '{"title":"x\\ud800"}';

  test("create, anonymous create, update and bulk update answer 422 naming the field", async () => {
    const created = await s.api("POST", "/api/v1/notes", lone);
    expect(created.status).toBe(422);
    const body = (await created.json()) as { message: string; errors: Record<string, string> };
    expect(body.message).toBe("INVALID_DATA");
    expect(body.errors.title).toMatch(/surrogate/);
    const anon = await fetch(`${s.base}/api/v1/notes`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"title":"ok","intro":{"en":"\\udfff"}}' });
    expect(anon.status).toBe(422);
    expect(((await anon.json()) as { errors: Record<string, string> }).errors["intro.en"]).toMatch(/surrogate/);
    const good = await s.apiJson("POST", "/api/v1/notes", { title: "pair 😀 kept" });
    expect(good.status).toBe(201);
    const uuid = Object.keys(good.body!.notes)[0];
    expect(good.body!.notes[uuid].title).toBe("pair 😀 kept");
    expect((await s.api("PUT", `/api/v1/notes/${uuid}`, lone)).status).toBe(422);
    expect((await s.api("PUT", "/api/v1/notes", `{"${uuid}":${lone}}`)).status).toBe(422);
    expect((await s.apiJson("GET", `/api/v1/notes/${uuid}`)).body!.notes[uuid].title).toBe("pair 😀 kept");
  });

  test("an unpaired surrogate in a record key, a sign-in or an import is no 500", async () => {
    expect((await s.api("POST", "/api/v1/notes", '{"title":"t","\\ud800":"x"}')).status).toBe(422);
    expect((await call(s.base, "POST", "/api/v1/session", { body: '{"email":"a\\ud800@example.com","password":"whatever-long"}' })).status).toBe(422);
    expect((await call(s.base, "POST", "/api/v1/auth/token", { body: '{"email":"a\\ud800@example.com","password":"whatever-long"}' })).status).toBe(422);
    const form = new FormData();
    form.append("file", new Blob(['[{"title":"fine"},{"title":"bad\\ud800"}]']), "notes.json");
    const res = await fetch(`${s.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(res.status).toBe(200);
    const stats = ((await res.json()) as { stats: Record<string, number> }).stats;
    expect(stats).toMatchObject({ created: 1, errors: 1 });
  });
});

describe("6. a record id that is not UTF-8 once decoded", () => {
  test("answers 400 on every method, never 500", async () => {
    for (const method of ["GET", "PUT", "DELETE", "POST", "PATCH"]) {
      const r = await s.api(method, "/api/v1/notes/%ED%A0%80", method === "GET" || method === "DELETE" ? undefined : { title: "x" });
      expect([method, r.status]).toEqual([method, 400]);
      expect(((await r.json()) as { message: string }).message).toBe("INVALID_DATA");
    }
    expect((await s.api("GET", "/api/v1/%ED%A0%80")).status).toBe(400);
    expect((await s.api("GET", "/api/v1/notes/%ED%A0%80/history")).status).toBe(400);
  });
});

describe("7. credentialed answers are private", () => {
  test("lists and records read with a token or a session: private, revalidated, varying on the credentials", async () => {
    const created = await s.apiJson("POST", "/api/v1/notes", { title: "Cached" });
    const uuid = Object.keys(created.body!.notes)[0];
    const login = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: s.email, password: "admin-password" }) });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const answers = [
      await s.api("GET", "/api/v1/notes?limit=3"),
      await s.api("GET", `/api/v1/notes/${uuid}`),
      await s.api("GET", `/api/v1/notes/${uuid}`), // the second read comes from the record cache
      await fetch(`${s.base}/api/v1/notes?limit=3`, { headers: { cookie } }),
      await fetch(`${s.base}/api/v1/notes/${uuid}`, { headers: { cookie } }),
      await s.api("GET", `/api/v1/notes/${uuid}/history`),
    ];
    for (const r of answers) {
      expect(r.status).toBe(200);
      expect(r.headers.get("cache-control")).toMatch(/private|no-store/);
      expect(r.headers.get("vary") ?? "").toMatch(/authorization/i);
      expect(r.headers.get("vary") ?? "").toMatch(/cookie/i);
    }
    // Routes with a policy of their own keep it: a token is never stored.
    expect((await s.api("GET", "/api/v1/auth/token")).headers.get("cache-control")).toBe("no-store");
    const notModified = await s.api("GET", `/api/v1/notes/${uuid}`, undefined, { "if-none-match": answers[1].headers.get("etag")! });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("cache-control")).toMatch(/private/);
  });

  test("anonymous public answers stay cacheable by shared caches (revalidated), errors are not stored", async () => {
    const anon = await fetch(`${s.base}/api/v1/open`);
    expect(anon.status).toBe(200);
    const cc = anon.headers.get("cache-control") ?? "";
    expect(cc).not.toMatch(/private|no-store/);
    expect(cc).toMatch(/no-cache/);
    expect(anon.headers.get("vary") ?? "").toMatch(/authorization/i);
    const denied = await fetch(`${s.base}/api/v1/notes`);
    expect(denied.status).toBe(403);
    expect(denied.headers.get("cache-control")).toBe("no-store");
  });
});

describe("9. switching API access off and on again does not revive old tokens", () => {
  test("through the CLI and through the API", async () => {
    const u = await addUser(s.dir, "apiuser@example.com", PW, { api: true });
    const old = await tokenFor(s.base, "apiuser@example.com", PW);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: old })).status).toBe(200);
    expect((await cli(s.dir, ["user", "api", "apiuser@example.com", "--off"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: old })).status).toBe(401);
    expect((await cli(s.dir, ["user", "api", "apiuser@example.com", "--on"])).code).toBe(0);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: old })).status).toBe(401);
    const fresh = await tokenFor(s.base, "apiuser@example.com", PW);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: fresh })).status).toBe(200);
    expect((await s.apiJson("PUT", `/api/v1/users/${u.uuid}`, { api: false })).status).toBe(200);
    expect((await s.apiJson("PUT", `/api/v1/users/${u.uuid}`, { api: true })).status).toBe(200);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: fresh })).status).toBe(401);
    // Unrelated edits keep tokens alive, and nothing of the mechanism shows.
    const third = await tokenFor(s.base, "apiuser@example.com", PW);
    const edited = await s.apiJson("PUT", `/api/v1/users/${u.uuid}`, { name: "Renamed" });
    expect(Object.keys(edited.body!.users[u.uuid]).sort()).toEqual(["_created", "_created_by", "_modified", "_modified_by", "email", "name", "two_factor", "uuid"]);
    expect((await call(s.base, "GET", "/api/v1/auth/token", { token: third })).status).toBe(200);
    expect((await s.apiJson("PUT", `/api/v1/users/${u.uuid}`, { token_epoch: "x" })).status).toBe(422);
  });
});

describe("10. url fields refuse every scheme-relative form", () => {
  test("backslashes and control characters included; paths and absolute URLs still pass", async () => {
    for (const link of ["/\\evil.example", "\\\\evil.example", "/\t/evil.example", "/\n/evil.example", "\\/evil.example", "//evil.example", "/a\\b", "/x\u0000y"]) {
      const r = await s.apiJson("POST", "/api/v1/notes", { title: "l", link });
      expect([link, r.status]).toEqual([link, 422]);
      expect(r.body!.errors.link).toBeDefined();
    }
    for (const link of ["/about", "/a/b?c=d#e", "https://example.com/x?y=1", "mailto:a@example.com", "tel:+49123"]) {
      expect([link, (await s.apiJson("POST", "/api/v1/notes", { title: "l", link })).status]).toEqual([link, 201]);
    }
  });
});

describe("8. resd restore writes the database and data/ for the owner only", () => {
  test("data/ 700, resd.db and .env 600 straight after the restore", async () => {
    if (onPostgres) {
      // A PostgreSQL site's backup holds no database file of its own; the SQLite run covers it.
      expect(siteEnv(s.dir).RESD_DATABASE_URL).toBeDefined();
      return;
    }
    const out = join(mkdtempSync(join(tmpdir(), "resd-bk-")), "site.tar.gz");
    const b = await cli(s.dir, ["backup", "--out", out, "--with-secrets"]);
    expect(b.code).toBe(0);
    const into = mkdtempSync(join(tmpdir(), "resd-rs-"));
    const old = process.umask(0o022);
    try {
      const r = await cli(into, ["restore", out]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    } finally {
      process.umask(old);
    }
    const mode = (p: string) => statSync(join(into, p)).mode & 0o777;
    expect(mode("data")).toBe(0o700);
    expect(mode("data/resd.db")).toBe(0o600);
    expect(mode(".env")).toBe(0o600);
    if (existsSync(join(into, "data/files"))) expect(mode("data/files") & 0o077).toBe(0);
    rmSync(into, { recursive: true, force: true });
    rmSync(join(out, ".."), { recursive: true, force: true });
  });
});

describe("11. a weak token secret is refused", () => {
  const start = async (secret: string) => {
    const dir = makeSite();
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--dir", dir, "--port", "0", "--host", "127.0.0.1"], {
      cwd: dir, env: { ...process.env, ...siteEnv(dir), RESD_TOKEN_SECRET: secret }, stdout: "pipe", stderr: "pipe",
    });
    const timer = setTimeout(() => p.kill("SIGTERM"), 8000);
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true });
    return { code, err };
  };

  test("32 × 'a' and other low-variety keys stop the start with a way to make a good one", async () => {
    for (const secret of ["a".repeat(32), "ab".repeat(20), "passwordpasswordpasswordpassword", "0123456789".repeat(4)]) {
      const r = await start(secret);
      expect([secret, r.code]).toEqual([secret, 2]);
      expect(r.err).toMatch(/openssl rand/);
    }
  });

  test("random keys in base64 and hex pass", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    for (const secret of [Buffer.from(bytes).toString("base64url"), Buffer.from(bytes).toString("hex")]) {
      const dir = makeSite();
      const srv = await serve(dir, { env: { RESD_TOKEN_SECRET: secret } });
      expect((await fetch(`${srv.base}/api/v1/health`)).status).toBeLessThan(500);
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
