/**
 * The OpenAPI document as a contract for generated clients: names no resource can collide with,
 * and entity tags that validate records and lists exactly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { adminSite } from "./helpers/site";

const simple = { fields: { title: { type: "text" } } };
let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { files: simple, token: simple, auth: simple, notes: simple, notes_uuid: simple } }); });
afterAll(async () => { await s.cleanup(); });

type Doc = { paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>; tags: { name: string }[] };

describe("collision-proof names", () => {
  test("resources named files, token and auth: operationIds and tags stay unique, the document valid", async () => {
    const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body as unknown as Doc;
    await SwaggerParser.validate(structuredClone(doc) as never);
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op?.operationId).filter(Boolean));
    expect(ids.length).toBeGreaterThan(40);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = doc.tags.map((t) => t.name);
    expect(new Set(tags).size).toBe(tags.length);
    for (const name of ["files", "token", "auth", "resd:auth", "resd:files"]) expect(tags).toContain(name);
    expect(ids).toContain("files.list");
    expect(ids).toContain("resd:files.list");
    expect(ids).toContain("resd:auth.create_token");
    // `create_with_uuid` of notes and `create` of notes_uuid no longer share a name.
    expect(ids).toContain("notes.create_with_uuid");
    expect(ids).toContain("notes_uuid.create");
  });
});

describe("every status the server sends is described", () => {
  test("replayed answers of many operations: each status is in the document for that operation", async () => {
    const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body as any;
    // Static segments first: /api/v1/notes/import is that operation, not a record called "import".
    const templates = Object.keys(doc.paths).sort((a, b) => a.split("{").length - b.split("{").length).map((t) => ({ t, re: new RegExp(`^${t.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+")}$`) }));
    const seen: { method: string; path: string; status: number }[] = [];
    const call = async (method: string, path: string, init: RequestInit = {}) => {
      const r = await fetch(s.base + path, { method, ...init, headers: { authorization: `Bearer ${s.token}`, ...(init.headers as Record<string, string>) } });
      seen.push({ method: method.toLowerCase(), path: path.split("?")[0], status: r.status });
      return r;
    };
    const json = (body: unknown) => ({ body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json" } });
    const created = await call("POST", "/api/v1/notes", json({ title: "replayed" }));
    const uuid = Object.keys(((await created.json()) as any).notes)[0];
    await call("POST", "/api/v1/notes", json({ title: "x", nope: 1 }));
    await call("POST", "/api/v1/notes", json("{ not json"));
    await call("POST", `/api/v1/notes/${uuid}`, json({ title: "dup" }));
    const list = await call("GET", "/api/v1/notes?limit=2");
    await call("GET", "/api/v1/notes?limit=2", { headers: { "if-none-match": list.headers.get("etag")! } });
    await call("GET", "/api/v1/notes?sort=nope");
    const one = await call("GET", `/api/v1/notes/${uuid}`);
    await call("GET", `/api/v1/notes/${uuid}`, { headers: { "if-none-match": one.headers.get("etag")! } });
    await call("GET", "/api/v1/notes/missing-one");
    await call("PUT", `/api/v1/notes/${uuid}`, json({ title: "changed" }));
    await call("PUT", `/api/v1/notes/${uuid}`, json({ title: 5 }));
    await call("PUT", "/api/v1/notes/missing-one", json({ title: "x" }));
    await call("GET", `/api/v1/notes/${uuid}/history`);
    await call("POST", `/api/v1/notes/${uuid}/restore`, json({}));
    await call("DELETE", `/api/v1/notes/${uuid}`);
    await call("DELETE", `/api/v1/notes/${uuid}`);
    await call("GET", "/api/v1/notes/export?format=csv");
    await call("GET", "/api/v1/notes/export?format=xml");
    const form = new FormData();
    form.append("file", new Blob(["title\nimported\n"]), "n.csv");
    await call("POST", "/api/v1/notes/import", { body: form });
    const up = new FormData();
    up.append("file", new Blob(["some bytes"], { type: "text/plain" }), "f.txt");
    const file = Object.keys(((await (await call("POST", "/api/v1/.files", { body: up })).json()) as any).files)[0];
    await call("PUT", `/api/v1/.files/${file}`, json({ size: 3 }));
    await call("GET", `/download/${file}`, { headers: { range: "bytes=2-4" } });
    await call("GET", `/download/${file}`, { headers: { range: "bytes=500-600" } });
    await call("GET", `/img/${file}/100w`);
    await call("GET", "/img/nope/100w");
    await call("POST", "/api/v1/auth/token", json({ email: "admin@example.com", password: "wrong" }));
    await call("GET", "/api/v1/.resources");
    await call("GET", "/api/v1/empty-resource");
    const missing: string[] = [];
    for (const r of seen) {
      const tpl = templates.find((x) => x.re.test(r.path) && doc.paths[x.t][r.method]);
      if (!tpl) { missing.push(`${r.method} ${r.path}: no operation`); continue; }
      if (!(String(r.status) in doc.paths[tpl.t][r.method].responses)) missing.push(`${r.method} ${tpl.t}: ${r.status}`);
    }
    expect(seen.length).toBeGreaterThan(25);
    expect(missing).toEqual([]);
  });
});

describe("schemas as strict as the server", () => {
  test("records require their system fields; inputs refuse unknown fields; the uuid parameter has the server's pattern", async () => {
    const doc = (await s.apiJson("GET", "/api/v1/openapi.json")).body as any;
    const rec = doc.components.schemas["notes.record"];
    expect(rec.required).toEqual(["uuid", "_created", "_modified", "_created_by", "_modified_by"]);
    const input = doc.components.schemas["notes.input"];
    expect(input.additionalProperties).toBe(false);
    const param = doc.paths["/api/v1/notes/{uuid}"].parameters[0];
    expect(new RegExp(param.schema.pattern).test("a-valid_uuid.1")).toBe(true);
    expect(new RegExp(param.schema.pattern).test("-no")).toBe(false);
    // What the schema refuses, the server refuses too; a record read back may be sent as it is.
    expect((await s.apiJson("POST", "/api/v1/notes", { title: "x", unknown: 1 })).status).toBe(422);
    const created = (await s.apiJson("POST", "/api/v1/notes", { title: "x" })).body!.notes;
    const [uuid, record] = Object.entries(created as Record<string, Record<string, unknown>>)[0];
    for (const k of Object.keys(record)) expect(Object.keys(input.properties)).toContain(k);
    expect((await s.apiJson("PUT", `/api/v1/notes/${uuid}`, record)).status).toBe(200);
    const filePut = doc.paths["/api/v1/.files/{uuid}"].put.requestBody.content["application/json"].schema;
    expect(Object.keys(filePut.properties).sort()).toEqual(["alt", "name", "title"]);
    expect(filePut.additionalProperties).toBe(false);
  });
});

describe("only what the caller can reach", () => {
  test("a session caller without API access gets no token operations; one with API access does", async () => {
    const { addUser } = await import("./helpers/access");
    await addUser(s.dir, "noapi@example.com", "noapi-password", { role: "admin" });
    const session = async (email: string, password: string) => {
      const r = await fetch(`${s.base}/api/v1/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
      return r.headers.get("set-cookie")!.split(";")[0];
    };
    const doc = async (cookie: string) => (await (await fetch(`${s.base}/api/v1/openapi.json`, { headers: { cookie } })).json()) as Doc;
    const without = await doc(await session("noapi@example.com", "noapi-password"));
    expect(Object.keys(without.paths)).not.toContain("/api/v1/auth/token");
    expect(without.tags.map((t) => t.name)).not.toContain("resd:auth");
    const withApi = await doc(await session("admin@example.com", "admin-password"));
    expect(Object.keys(withApi.paths)).toContain("/api/v1/auth/token");
  });
});

describe("entity tags", () => {
  test("a record read carries an ETag; If-None-Match answers 304 until the record changes, within the same second too", async () => {
    const uuid = Object.keys((await s.apiJson("POST", "/api/v1/notes", { title: "one" })).body!.notes)[0];
    const first = await s.api("GET", `/api/v1/notes/${uuid}`);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"[0-9a-z]+"$/);
    const again = await s.api("GET", `/api/v1/notes/${uuid}`, undefined, { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    expect(await again.text()).toBe("");
    await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { title: "two" }); // same second as the read
    const changed = await s.api("GET", `/api/v1/notes/${uuid}`, undefined, { "if-none-match": etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(((await changed.json()) as any).notes[uuid].title).toBe("two");
    // If-None-Match wins over If-Modified-Since, and * matches any current version.
    const star = await s.api("GET", `/api/v1/notes/${uuid}`, undefined, { "if-none-match": "*", "if-modified-since": "Thu, 01 Jan 1970 00:00:00 GMT" });
    expect(star.status).toBe(304);
  });

  test("a list carries an ETag that changes with every write of the resource and with the query", async () => {
    const a = await s.api("GET", "/api/v1/notes?limit=5");
    const etag = a.headers.get("etag")!;
    expect((await s.api("GET", "/api/v1/notes?limit=5", undefined, { "if-none-match": etag })).status).toBe(304);
    expect((await s.api("GET", "/api/v1/notes?limit=6", undefined, { "if-none-match": etag })).status).toBe(200);
    await s.apiJson("POST", "/api/v1/notes", { title: "another" });
    const b = await s.api("GET", "/api/v1/notes?limit=5", undefined, { "if-none-match": etag });
    expect(b.status).toBe(200);
    expect(b.headers.get("etag")).not.toBe(etag);
  });
});
