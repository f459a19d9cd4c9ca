// A record's creation is kept lazily: the record is its own creation state until it first changes,
// then the change writes the "create" entry from the record as it was. Seen from the API nothing
// is lost: every record's history starts with its creation, and entry 0 always names it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { adminSite, cli } from "./helpers/site";

const notes = { fields: { title: { type: "text", required: true }, year: { type: "number" } } };
const quiet = { history: false, fields: { title: { type: "text", required: true } } };

let s: Awaited<ReturnType<typeof adminSite>>;
beforeAll(async () => { s = await adminSite({ defs: { notes, quiet }, store: "sqlite" }); /* stored rows are read from the SQLite file */ });
afterAll(async () => { await s.cleanup(); });

type Entry = { id: number; action: string; at: number; user: string | null; record: Record<string, unknown> };
const history = async (uuid: string, res = "notes") => {
  const r = await s.apiJson("GET", `/api/v1/${res}/${uuid}/history`);
  expect(r.status).toBe(200);
  return r.body!.history as Entry[];
};
const create = async (body: Record<string, unknown>, res = "notes") => {
  const r = await s.apiJson("POST", `/api/v1/${res}`, body);
  expect(r.status).toBe(201);
  const [uuid, rec] = Object.entries(r.body![res])[0] as [string, Record<string, any>];
  return { uuid, rec };
};
/** Stored history rows of one record, read from the database file (the server's writes are committed). */
const storedRows = (uuid: string) => {
  const db = new Database(join(s.dir, "data", "resd.db"), { readonly: true });
  try {
    return db.query("SELECT action FROM _resd_history WHERE uuid = ? ORDER BY id").all(uuid).map((r) => (r as { action: string }).action);
  } finally {
    db.close();
  }
};

test("a new record's history is its creation, entry 0, with nothing stored", async () => {
  const { uuid, rec } = await create({ title: "first", year: 2001 });
  const h = await history(uuid);
  expect(h).toHaveLength(1);
  expect(h[0]).toMatchObject({ id: 0, action: "create", at: rec._created * 1000, record: { title: "first", year: 2001 } });
  expect(typeof h[0].user).toBe("string");
  expect(storedRows(uuid)).toEqual([]);
});

test("the first update writes the creation as it was, then the update; entry 0 still rolls back to it", async () => {
  const { uuid } = await create({ title: "before", year: 1999 });
  const zero = (await history(uuid))[0].id;
  expect((await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { title: "after" })).status).toBe(200);
  expect((await s.apiJson("PUT", `/api/v1/notes/${uuid}`, { year: 2020 })).status).toBe(200);
  const h = await history(uuid);
  expect(h.map((e) => e.action)).toEqual(["create", "update", "update"]);
  expect(h[0].record).toMatchObject({ title: "before", year: 1999 });
  expect(h[0].id).toBeGreaterThan(0);
  expect(h[1].id).toBeGreaterThan(h[0].id);
  expect(storedRows(uuid)).toEqual(["create", "update", "update"]);
  // An id read while the record was untouched keeps working after the creation was written out.
  const back = await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`, { entry: zero });
  expect(back.status).toBe(200);
  expect(back.body!.notes[uuid]).toMatchObject({ title: "before", year: 1999 });
  expect((await history(uuid)).map((e) => e.action)).toEqual(["create", "update", "update", "restore"]);
});

test("rolling an untouched record back to entry 0 works and writes its creation first", async () => {
  const { uuid } = await create({ title: "same" });
  const r = await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`, { entry: 0 });
  expect(r.status).toBe(200);
  expect(storedRows(uuid)).toEqual(["create", "restore"]);
});

test("deleting an untouched record keeps its creation; restore brings it back", async () => {
  const { uuid } = await create({ title: "short-lived", year: 2010 });
  expect((await s.apiJson("DELETE", `/api/v1/notes/${uuid}`)).status).toBe(200);
  const h = await history(uuid);
  expect(h.map((e) => e.action)).toEqual(["create", "delete"]);
  expect(h[0].record).toMatchObject({ title: "short-lived", year: 2010 });
  const back = await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`);
  expect(back.status).toBe(200);
  expect(back.body!.notes[uuid]).toMatchObject({ title: "short-lived", year: 2010 });
});

test("a record deleted and then created again under its uuid is not deleted: restore without an entry is refused and changes nothing", async () => {
  const { uuid } = await create({ title: "old life", year: 1999 });
  expect((await s.apiJson("DELETE", `/api/v1/notes/${uuid}`)).status).toBe(200);
  expect((await s.apiJson("POST", `/api/v1/notes/${uuid}`, { title: "new life", year: 2024 })).status).toBe(201);
  const refused = await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`);
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ code: 409, success: false, message: "RESOURCE_EXISTS" });
  const now = await s.apiJson("GET", `/api/v1/notes/${uuid}`);
  expect(now.body!.notes[uuid]).toMatchObject({ title: "new life", year: 2024 });
  // Rolling back to a named entry stays possible.
  const entries = await history(uuid);
  const beforeDelete = entries.find((e) => e.action === "delete")!;
  const back = await s.apiJson("POST", `/api/v1/notes/${uuid}/restore`, { entry: beforeDelete.id });
  expect(back.status).toBe(200);
  expect(back.body!.notes[uuid]).toMatchObject({ title: "old life", year: 1999 });
});

test("emptying a resource keeps each untouched record's creation and deletion", async () => {
  const a = await create({ title: "a" });
  const b = await create({ title: "b" });
  await s.apiJson("PUT", `/api/v1/notes/${b.uuid}`, { title: "b2" });
  expect((await s.apiJson("DELETE", "/api/v1/notes")).status).toBe(200);
  expect(storedRows(a.uuid)).toEqual(["create", "delete"]);
  expect(storedRows(b.uuid)).toEqual(["create", "update", "delete"]);
  expect((await history(a.uuid))[0].record).toMatchObject({ title: "a" });
  expect((await s.apiJson("POST", `/api/v1/notes/${a.uuid}/restore`)).status).toBe(200);
});

test("imported records start the same way: creation shown, nothing stored until a change", async () => {
  const file = join(s.dir, "in.csv");
  writeFileSync(file, "title,year\nimported one,1990\nimported two,1991\n");
  const r = await cli(s.dir, ["import", "notes", file, "--json"]);
  expect(r.code).toBe(0);
  const list = await s.apiJson("GET", "/api/v1/notes?search=imported%20one");
  const [uuid] = Object.keys(list.body!.notes);
  expect(storedRows(uuid)).toEqual([]);
  expect((await history(uuid)).map((e) => [e.id, e.action, e.record.title])).toEqual([[0, "create", "imported one"]]);
});

test("a resource without history has none, and no creation is made up", async () => {
  const { uuid } = await create({ title: "unrecorded" }, "quiet");
  expect(await history(uuid, "quiet")).toEqual([]);
  await s.apiJson("PUT", `/api/v1/quiet/${uuid}`, { title: "changed" });
  expect(storedRows(uuid)).toEqual([]);
  expect((await s.apiJson("POST", `/api/v1/quiet/${uuid}/restore`, { entry: 0 })).status).toBe(404);
});

test("a record that never existed has no history (404)", async () => {
  expect((await s.apiJson("GET", `/api/v1/notes/${crypto.randomUUID()}/history`)).status).toBe(404);
});
