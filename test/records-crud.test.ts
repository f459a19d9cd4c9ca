import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminSite } from "./helpers/site";
import { notes, pages, settings, things } from "./fixtures/defs";

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes, pages, things, settings } }); });
afterAll(async () => { await s.cleanup(); });

const envelopeKeys = (b: Record<string, unknown>) => {
  expect(typeof b.code).toBe("number");
  expect(typeof b.success).toBe("boolean");
  expect(["ok", "error"]).toContain(b.status as string);
  expect(b.memory_usage).toMatch(/MB$/);
  expect(b.execution_time).toMatch(/ms$/);
};

describe("create", () => {
  test("201 RESOURCE_CREATED with the record keyed by resource and uuid", async () => {
    const r = await s.apiJson("POST", "/api/v1/notes", { title: "First", year: 2001, status: "new" });
    expect(r.status).toBe(201);
    envelopeKeys(r.body!);
    expect(r.body).toMatchObject({ code: 201, success: true, status: "ok", message: "RESOURCE_CREATED", count: 1 });
    const [uuid, rec] = Object.entries(r.body!.notes)[0] as [string, Record<string, unknown>];
    expect(rec).toMatchObject({ uuid, title: "First", year: 2001, status: "new" });
    expect(typeof rec._created).toBe("number");
    expect(rec._created_by).toBeString();
  });

  test("uuid from the path and from the body; 409 when it exists; mismatch 400", async () => {
    expect((await s.apiJson("POST", "/api/v1/notes/path-id", { title: "P" })).status).toBe(201);
    expect((await s.apiJson("POST", "/api/v1/notes", { uuid: "body-id", title: "B" })).status).toBe(201);
    const again = await s.apiJson("POST", "/api/v1/notes/path-id", { title: "P2" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 409, success: false, status: "error" });
    expect((await s.apiJson("POST", "/api/v1/notes", { uuid: "body-id", title: "B2" })).status).toBe(409);
    expect((await s.apiJson("POST", "/api/v1/notes/x1", { uuid: "x2", title: "B2" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/notes", { uuid: "bad id/../", title: "B2" })).status).toBe(400);
    expect((await s.apiJson("POST", "/api/v1/notes", { uuid: "export", title: "B2" })).status).toBe(400);
  });

  test("a record created without a uuid gets a UUIDv7: its time, in the order made, none twice (creates and imports)", async () => {
    const V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const msOf = (u: string) => { const m = V7.exec(u)!; return parseInt(m[1] + m[2], 16); };
    const before = Date.now();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(Object.keys((await s.apiJson("POST", "/api/v1/notes", { title: `v7 ${i}` })).body!.notes)[0]);
    const together = await Promise.all(Array.from({ length: 20 }, (_, i) => s.apiJson("POST", "/api/v1/notes", { title: `v7 at once ${i}` })));
    const form = new FormData();
    form.append("file", new Blob(["title\nimported a\nimported b\n"]), "notes.csv");
    const imp = await fetch(`${s.base}/api/v1/notes/import`, { method: "POST", headers: { authorization: `Bearer ${s.token}` }, body: form });
    expect(imp.status).toBe(200);
    const after = Date.now();
    const all = [...made, ...together.map((r) => Object.keys(r.body!.notes)[0])];
    const listed = await s.apiJson("GET", "/api/v1/notes?filter=title:imported a||imported b&limit=10");
    const imported = Object.keys(listed.body!.notes);
    expect(imported).toHaveLength(2);
    for (const u of [...all, ...imported]) {
      expect(u).toMatch(V7);
      expect(msOf(u)).toBeGreaterThanOrEqual(before);
      expect(msOf(u)).toBeLessThanOrEqual(after);
    }
    expect([...made].sort()).toEqual(made);
    expect(new Set([...all, ...imported]).size).toBe(all.length + 2);
  });

  test("system fields cannot be set by a client", async () => {
    const r = await s.apiJson("POST", "/api/v1/notes", { title: "Sys", _created: 5, _modified: 6, _created_by: "evil", _modified_by: "evil" });
    const rec = Object.values(r.body!.notes)[0] as Record<string, unknown>;
    expect(rec._created).not.toBe(5);
    expect(rec._created_by).not.toBe("evil");
    const u = await s.apiJson("PUT", `/api/v1/notes/${rec.uuid}`, { _created: 7, _created_by: "evil", title: "Sys2" });
    expect(u.body!.notes[rec.uuid as string]).toMatchObject({ _created: rec._created, _created_by: rec._created_by, title: "Sys2" });
  });

  test("malformed JSON 400, non-object 400, unknown resource 404", async () => {
    const bad = await s.apiJson("POST", "/api/v1/notes", "{not json");
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ message: "INVALID_DATA", success: false });
    expect((await s.apiJson("POST", "/api/v1/notes", "[1,2]")).status).toBe(400);
    const nf = await s.apiJson("GET", "/api/v1/nope");
    expect(nf.status).toBe(404);
    expect(nf.body).toMatchObject({ code: 404, message: "RESOURCE_NOT_FOUND", status: "error" });
    expect((await s.apiJson("GET", "/api/v1/.files_meta")).status).toBe(404);
  });
});

describe("read, update, delete", () => {
  test("read one: 200 with the list shape; 404 for a missing record", async () => {
    await s.apiJson("POST", "/api/v1/notes/read-me", { title: "Read" });
    const r = await s.apiJson("GET", "/api/v1/notes/read-me");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, count: 1, notes: { "read-me": { title: "Read" } } });
    expect(r.body!.total).toBeUndefined();
    expect(r.headers.get("last-modified")).toBeTruthy();
    const head = await s.api("HEAD", "/api/v1/notes/read-me");
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect((await s.apiJson("GET", "/api/v1/notes/missing")).status).toBe(404);
  });

  test("PUT changes only the given fields and answers the whole record", async () => {
    await s.apiJson("POST", "/api/v1/notes/upd", { title: "U", year: 1990, status: "open" });
    const r = await s.apiJson("PUT", "/api/v1/notes/upd", { year: 1991 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ message: "RESOURCE_UPDATED", notes: { upd: { title: "U", year: 1991, status: "open" } } });
    const p = await s.apiJson("PATCH", "/api/v1/notes/upd", { status: "done" });
    expect(p.body).toMatchObject({ message: "RESOURCE_UPDATED", notes: { upd: { year: 1991, status: "done" } } });
    expect((await s.apiJson("PUT", "/api/v1/notes/nobody", { year: 2000 })).status).toBe(404);
    expect((await s.apiJson("PUT", "/api/v1/notes/upd", { title: "" })).status).toBe(422);
  });

  test("upsert: an update of a missing record creates it", async () => {
    const r = await s.apiJson("PUT", "/api/v1/settings/site-name", { value: "resd" });
    expect(r.status).toBe(201);
    expect(r.body!.settings["site-name"].value).toBe("resd");
    const again = await s.apiJson("PUT", "/api/v1/settings/site-name", { value: "resd2" });
    expect(again.status).toBe(200);
  });

  test("bulk PUT keyed by uuid; one bad record changes nothing", async () => {
    await s.apiJson("POST", "/api/v1/notes/b1", { title: "B1", year: 2000 });
    await s.apiJson("POST", "/api/v1/notes/b2", { title: "B2", year: 2000 });
    const ok = await s.apiJson("PUT", "/api/v1/notes", { b1: { year: 2010 }, b2: { year: 2011 } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ message: "RESOURCE_UPDATED", count: 2, notes: { b1: { year: 2010 }, b2: { year: 2011 } } });
    const bad = await s.apiJson("PUT", "/api/v1/notes", { b1: { year: 2020 }, b2: { year: 5 } });
    expect(bad.status).toBe(422);
    expect(bad.body!.errors["b2.year"]).toBeString();
    const missing = await s.apiJson("PATCH", "/api/v1/notes", { b1: { year: 2020 }, ghost: { year: 2001 } });
    expect(missing.status).toBe(404);
    const after = await s.apiJson("GET", "/api/v1/notes/b1");
    expect(after.body!.notes.b1.year).toBe(2010);
  });

  test("DELETE one: 200 RESOURCE_DELETED, then 404", async () => {
    await s.apiJson("POST", "/api/v1/notes/del", { title: "D" });
    const r = await s.apiJson("DELETE", "/api/v1/notes/del");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ message: "RESOURCE_DELETED" });
    expect((await s.apiJson("DELETE", "/api/v1/notes/del")).status).toBe(404);
    expect((await s.apiJson("GET", "/api/v1/notes/del")).status).toBe(404);
  });

  test("DELETE the collection removes every record", async () => {
    await s.apiJson("POST", "/api/v1/things", { name: "one" });
    await s.apiJson("POST", "/api/v1/things", { name: "two" });
    const r = await s.apiJson("DELETE", "/api/v1/things");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ message: "RESOURCE_DELETED", count: 2 });
    expect((await s.apiJson("GET", "/api/v1/things")).body!.count).toBe(0);
  });

  test("an unsupported method gives 405 with the envelope", async () => {
    const r = await s.api("OPTIONS", "/api/v1/notes");
    expect(r.status).toBe(405);
    expect(await r.json()).toMatchObject({ code: 405, message: "METHOD_NOT_ALLOWED" });
    const h = await s.api("POST", "/api/v1/notes/x/history");
    expect(h.status).toBe(405);
  });
});

describe("conditional reads", () => {
  test("If-Modified-Since gives 304 until the record or the list changes (deletes included)", async () => {
    await s.apiJson("POST", "/api/v1/pages/home", { title: { en: "Home" } });
    await Bun.sleep(1100); // leave the second of the write, so the read's Last-Modified is exact
    const one = await s.api("GET", "/api/v1/pages/home");
    const lm = one.headers.get("last-modified")!;
    expect((await s.api("GET", "/api/v1/pages/home", undefined, { "if-modified-since": lm })).status).toBe(304);
    const list = await s.api("GET", "/api/v1/pages");
    const llm = list.headers.get("last-modified")!;
    const cached = await s.api("GET", "/api/v1/pages", undefined, { "if-modified-since": llm });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe("");
    await s.apiJson("PUT", "/api/v1/pages/home", { title: { en: "Home 2" } });
    expect((await s.api("GET", "/api/v1/pages/home", undefined, { "if-modified-since": lm })).status).toBe(200);
    // A change within the same second as a read is never hidden by a 304.
    await s.apiJson("POST", "/api/v1/pages/p2", { title: { en: "Two" } });
    const fresh = await s.api("GET", "/api/v1/pages");
    const flm = fresh.headers.get("last-modified")!;
    await s.apiJson("DELETE", "/api/v1/pages/p2");
    expect((await s.api("GET", "/api/v1/pages", undefined, { "if-modified-since": flm })).status).toBe(200);
    expect((await s.api("GET", "/api/v1/pages", undefined, { "if-modified-since": llm })).status).toBe(200);
  });
});
