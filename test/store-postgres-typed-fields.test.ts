/**
 * On PostgreSQL a number field is read as float8 and a field holding one string as text in code
 * point order; their indexes are on those typed expressions (an index on jsonb compared jsonb values
 * at every step of its tree: 40 µs per row and index on a create, against 7 typed). Values of
 * another type (a definition that changed a field's type) must not make a write or a list fail.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { SQL } from "bun";
import { PgStore } from "../src/core/store/postgres";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import { numbered } from "../src/core/store/postgres-dialect";
import { databasesOn } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const open: PgStore[] = [];
const databases = databasesOn(PG);
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
afterAll(() => databases.dropAll());

const v1 = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "text" } } } as never, null);
const v2 = buildDefinition("items", {
  fields: { title: { type: "text" }, year: { type: "number" }, status: { type: "select", options: { new: "New", open: "Open" } } },
  index: ["year", "status,year", "title"],
} as never, null);

let n = 0;
const create = (store: PgStore, data: Record<string, unknown>) =>
  store.transaction(async (tx) => {
    await tx.insert("items", { uuid: `u${++n}`, data: JSON.stringify(data), _created: n, _modified: n, _created_by: null, _modified_by: null });
  });
const titles = async (store: PgStore, params: Record<string, string>) =>
  (await store.page("items", compileList(store.dialect, v2, parseListParams({ limit: "50", ...params })))).map((r) => JSON.parse(r.data).title as string);

async function site(): Promise<{ store: PgStore; url: string }> {
  if (!PG) throw new Error("test/store-postgres-typed-fields.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_typed");
  const store = await PgStore.open(url, { cacheMaxBytes: 0 });
  open.push(store);
  return { store, url };
}

test("a field whose type changed: indexes build, writes and lists work, other types read as unset", async () => {
  const { store } = await site();
  await store.syncSchema([v1]);
  await create(store, { title: "word", year: "abc" });
  await create(store, { title: "digits", year: "12" });
  await create(store, { title: "object", year: { y: 1 } });
  // The field becomes a number, indexed: the old values are neither numbers nor refused.
  await store.syncSchema([v2]);
  await create(store, { title: "seven", year: 7, status: "open" });
  await create(store, { title: "three", year: 3, status: 5 });
  await create(store, { title: "none" });
  expect(await titles(store, { sort: "year" })).toEqual(["word", "digits", "object", "none", "three", "seven"]);
  expect(await titles(store, { sort: "year|desc" })).toEqual(["seven", "three", "none", "object", "digits", "word"]);
  expect(await titles(store, { filter: "year:7" })).toEqual(["seven"]);
  expect(await titles(store, { filter: "year:12" })).toEqual([]);
  expect(await titles(store, { filter: "year:", sort: "title" })).toEqual(["digits", "none", "object", "word"]);
  // A select holding a number (written before the field was a select) reads as its text.
  expect(await titles(store, { filter: "status:5" })).toEqual(["three"]);
  expect(await titles(store, { filter: "status:open||5", sort: "year|desc" })).toEqual(["seven", "three"]);
  expect(await store.count("items", compileList(store.dialect, v2, parseListParams({ filter: "year:3" })))).toBe(1);
});

test("text sorts in code point order (as SQLite's BINARY), whatever the database's collation; |text ignores case", async () => {
  const { store } = await site();
  await store.syncSchema([v2]);
  for (const title of ["b", "é", "B", "a", "Z", "10", "9"]) await create(store, { title });
  expect(await titles(store, { sort: "title" })).toEqual(["10", "9", "B", "Z", "a", "b", "é"]);
  expect(await titles(store, { sort: "title|desc" })).toEqual(["é", "b", "a", "Z", "B", "9", "10"]);
  // By the leading number: the titles without one count as 0, in the order they were written.
  expect(await titles(store, { sort: "title|numeric|asc" })).toEqual(["b", "é", "B", "a", "Z", "9", "10"]);
  expect((await titles(store, { sort: "title|text|asc" })).slice(0, 2)).toEqual(["10", "9"]);
  expect(await titles(store, { search: "é" })).toEqual(["é"]);
});

test("the indexes of number and text fields are on the typed values, and lists filtered and sorted by them use them", async () => {
  const { store, url } = await site();
  await store.syncSchema([v2]);
  const sql = new SQL({ url, max: 1 });
  try {
    const defs = ((await sql.unsafe(`SELECT indexdef FROM pg_indexes WHERE tablename = 'r:items' AND indexname LIKE 'it\\_%'`)) as { indexdef: string }[]).map((r) => r.indexdef);
    const year = defs.find((d) => d.includes("'year'") && !d.includes("'status'"))!;
    const statusYear = defs.find((d) => d.includes("'status'"))!;
    expect(year).toContain("double precision");
    expect(year).not.toContain("jsonb");
    expect(statusYear).toContain('COLLATE "C"');
    expect(statusYear).not.toContain("jsonb");
    for (let i = 0; i < 300; i++) await create(store, { title: `t${i}`, year: i % 30, status: i % 2 ? "open" : "new" });
    await sql.unsafe('ANALYZE "r:items"');
    const q = compileList(store.dialect, v2, parseListParams({ filter: "status:open", sort: "year|desc", limit: "5" }));
    const plan = ((await sql.unsafe(numbered(`EXPLAIN SELECT uuid FROM "r:items" ${q.where} ${q.orderBy} LIMIT 5`), q.args as never[])) as { "QUERY PLAN": string }[])
      .map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toContain("Index Scan");
    expect(plan).not.toContain("Sort");
  } finally {
    await sql.close();
  }
});

test("upgrading: the jsonb indexes of earlier versions give way to typed ones (named it_, which earlier versions never drop), and the other instances are not told", async () => {
  const { store, url } = await site();
  await store.syncSchema([v2]);
  const other = await PgStore.open(url, { cacheMaxBytes: 0 });
  open.push(other);
  await other.syncSchema([v2]);
  let told = 0;
  other.onSchemaChange(() => told++);
  const sql = new SQL({ url, max: 1 });
  const names = async () => ((await sql.unsafe(`SELECT indexname FROM pg_indexes WHERE tablename = 'r:items' ORDER BY 1`)) as { indexname: string }[]).map((r) => r.indexname);
  try {
    const typed = (await names()).filter((n) => n.startsWith("it_"));
    expect(typed.length).toBe(3); // year; status,year; title
    // As an earlier version left the database: its index on the jsonb of year, none typed.
    await sql.unsafe(`CREATE INDEX ix_earlier ON "r:items" (nullif((data->'year')::jsonb, 'null'::jsonb) NULLS FIRST, id)`);
    for (const n of typed) await sql.unsafe(`DROP INDEX "${n}"`);
    const changes = await store.syncSchema([v2]);
    expect(changes.map((c) => c.action).sort()).toEqual(["index-added", "index-added", "index-added", "index-dropped"]);
    expect((await names()).filter((n) => n.startsWith("it_"))).toEqual(typed);
    expect(await names()).not.toContain("ix_earlier");
    // A new definition is still told.
    const v3 = buildDefinition("items", { ...v2.raw, fields: { ...v2.raw.fields, note: { type: "text" } } } as never, null);
    await Bun.sleep(300);
    expect(told).toBe(0);
    await store.syncSchema([v3]);
    for (let i = 0; i < 50 && told === 0; i++) await Bun.sleep(20);
    expect(told).toBeGreaterThan(0);
  } finally {
    await sql.close();
  }
});
