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
    expect(Object.keys(filePut.properties).sort()).toEqual(["name", "title"]);
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
