/** The per-caller OpenAPI document, validated with a real validator, and the offline Swagger UI. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { adminSite } from "./helpers/site";
import { addUser, call, tokenFor } from "./helpers/access";

const books = {
  fields: {
    title: { type: "text", required: true },
    year: { type: "number", min: 1450, max: 2100 },
    status: { type: "select", options: { new: "New", done: "Done" } },
    tags: { type: "select", multi: true, options: { a: "A", b: "B" } },
    note: { type: "text" },
    pin: { type: "text" },
    summary: { type: "textarea", i18n: true },
    author: { type: "select", resource: "users" },
  },
  languages: ["en", "de"],
  hidden: "note",
  encrypt: "pin",
};
const private_ = { fields: { title: { type: "text" } } };
let s: Awaited<ReturnType<typeof adminSite>>;
let readerToken = "";

beforeAll(async () => {
  s = await adminSite({ defs: { books, private: private_ } });
  await s.apiJson("POST", "/api/v1/roles", { name: "bookreader", permissions: ["view-books", "view-.files"] });
  await addUser(s.dir, "br@example.com", "br-pw-long-1", { role: "bookreader", api: true });
  readerToken = await tokenFor(s.base, "br@example.com", "br-pw-long-1");
});
afterAll(async () => { await s.cleanup(); });

type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, any> } };

describe("GET /api/v1/openapi.json", () => {
  test("anonymous request refused with 401", async () => {
    const r = await call(s.base, "GET", "/api/v1/openapi.json");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, message: "UNAUTHORIZED" });
  });

  test("the admin's document is valid OpenAPI 3.0.3 with every resource, the token and the file endpoints", async () => {
    const r = await call(s.base, "GET", "/api/v1/openapi.json", { token: s.token });
    expect(r.status).toBe(200);
    const doc = r.body as unknown as Doc;
    expect(doc.openapi).toBe("3.0.3");
    expect(doc.info.version).toBe("1");
    await SwaggerParser.validate(structuredClone(doc) as never);
    // The validator is real: a broken copy is rejected.
    const broken = structuredClone(doc) as Doc;
    (broken.paths["/api/v1/books"].get as Record<string, unknown>).responses = "none";
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow();
    for (const p of ["/api/v1/books", "/api/v1/books/{uuid}", "/api/v1/books/export", "/api/v1/books/import", "/api/v1/private", "/api/v1/users", "/api/v1/roles", "/api/v1/auth/token", "/api/v1/.files", "/api/v1/.files/{uuid}", "/api/v1/books/{uuid}/history", "/api/v1/books/{uuid}/restore", "/api/v1/books/import-document", "/img/{uuid}/{spec}", "/download/{uuid}"]) {
      expect(doc.paths).toHaveProperty([p]);
    }
    expect(Object.keys(doc.paths["/api/v1/books"]).sort()).toEqual(["delete", "get", "post", "put"]);
    expect(Object.keys(doc.paths["/api/v1/books/{uuid}"]).sort()).toEqual(["delete", "get", "parameters", "patch", "post", "put"]);
  });

  test("schemas come from the field types: enums, required, min/max, i18n; hidden fields omitted", async () => {
    const doc = (await call(s.base, "GET", "/api/v1/openapi.json", { token: s.token })).body as unknown as Doc;
    const rec = doc.components.schemas["books.record"];
    expect(rec.properties.year).toMatchObject({ type: "number", minimum: 1450, maximum: 2100 });
    expect(rec.properties.status).toMatchObject({ type: "string", enum: ["new", "done"] });
    expect(rec.properties.tags).toMatchObject({ type: "array", items: { enum: ["a", "b"] } });
    expect(Object.keys(rec.properties.summary.properties)).toEqual(["en", "de"]);
    expect(rec.properties).not.toHaveProperty("note");
    expect(rec.properties).not.toHaveProperty("pin");
    expect(doc.components.schemas["books.input"].required).toEqual(["title"]);
    const user = doc.components.schemas["users.record"];
    for (const f of ["password", "api", "salt"]) expect(user.properties).not.toHaveProperty(f);
    expect(user.properties).toHaveProperty("email");
  });

  test("a limited caller sees only what it may use", async () => {
    const r = await call(s.base, "GET", "/api/v1/openapi.json", { token: readerToken });
    expect(r.status).toBe(200);
    const doc = r.body as unknown as Doc;
    await SwaggerParser.validate(structuredClone(doc) as never);
    expect(Object.keys(doc.paths).sort()).toEqual(["/api/v1/.deleted/{resource}", "/api/v1/.files", "/api/v1/.files-unused", "/api/v1/.files-usage", "/api/v1/.files/{uuid}", "/api/v1/.resources", "/api/v1/.system-messages", "/api/v1/auth/token", "/api/v1/books", "/api/v1/books/{uuid}", "/api/v1/books/{uuid}/history", "/api/v1/empty-resource", "/api/v1/mcp", "/api/v1/realtime", "/api/v1/realtime/{client_id}", "/api/v1/session/2fa", "/api/v1/session/2fa/confirm", "/api/v1/session/2fa/disable", "/api/v1/session/2fa/enrol", "/api/v1/session/2fa/recovery-codes", "/api/v1/session/api-keys", "/api/v1/session/api-keys/{id}", "/api/v1/session/email-change", "/api/v1/session/email-change/confirm", "/api/v1/session/password", "/api/v1/session/password-reset", "/api/v1/session/password-reset/confirm", "/api/v1/users/{uuid}", "/download/{uuid}", "/img/{uuid}/{spec}"]);
    expect(Object.keys(doc.paths["/api/v1/books"])).toEqual(["get"]);
    expect(Object.keys(doc.paths["/api/v1/books/{uuid}"]).sort()).toEqual(["get", "parameters"]);
    // Its own user record, with only the self_edit fields.
    expect(Object.keys(doc.paths["/api/v1/users/{uuid}"]).sort()).toEqual(["parameters", "patch", "put"]);
    expect(doc.components.schemas).not.toHaveProperty(["private.record"]);
    expect(JSON.stringify(doc)).not.toContain("/api/v1/private");
  });

  test("the document also works with the session cookie", async () => {
    const login = await call(s.base, "POST", "/api/v1/session", { body: { email: "br@example.com", password: "br-pw-long-1" } });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    expect((await call(s.base, "GET", "/api/v1/openapi.json", { headers: { cookie } })).status).toBe(200);
  });
});

describe("Swagger UI", () => {
  test("the page loads /api/v1/openapi.json and its assets are served locally (no network needed)", async () => {
    const page = await fetch(`${s.base}/swagger`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const srcs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(srcs.sort()).toEqual(["/swagger/page.css", "/swagger/page.js", "/swagger/swagger-ui-bundle.js", "/swagger/swagger-ui.css"]);
    const bodies: Record<string, string> = {};
    for (const src of srcs) {
      const a = await fetch(s.base + src);
      expect(a.status).toBe(200);
      bodies[src] = await a.text();
    }
    // Swagger UI itself, embedded (no network needed).
    expect(bodies["/swagger/swagger-ui-bundle.js"].length).toBeGreaterThan(10_000);
    expect(bodies["/swagger/swagger-ui.css"].length).toBeGreaterThan(10_000);
    // The page's own script (a file: the page's policy allows no inline script).
    expect(bodies["/swagger/page.js"]).toContain('fetch("/api/v1/openapi.json"');
    expect(bodies["/swagger/page.js"]).toContain('fetch("/api/v1/session"'); // the sign-in form for visitors without a session
  });
});
