/**
 * Remembered pages and totals across this process's own commits: an insert keeps the answers it
 * cannot change and drops (or, for a total, adds to) the ones it can; any other write drops every
 * answer of its resource. Checked against a store that remembers nothing, on the same file (or the
 * same PostgreSQL database: the cases that do not look into SQLite itself run on both).
 *
 * Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL), e.g.
 * postgres://postgres@127.0.0.1:55432/postgres. Without one the file fails (it does not skip).
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/core/store/sqlite";
import { PgStore } from "../src/core/store/postgres";
import { databasesOn } from "./helpers/psql";
import { MAX_SQL_ORDERS } from "../src/core/store/sqlite-revise";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const dirs: string[] = [];
const open: (SqliteStore | PgStore)[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const databases = databasesOn(PG);
afterAll(() => {
  databases.dropAll();
});

// A fixed seed: a failure names the round, and the same round fails again.
let seed = 20261125;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

const def = buildDefinition("items", {
  fields: {
    title: { type: "text" },
    status: { type: "select", options: { new: "New", open: "Open", done: "Done" } },
    year: { type: "number" },
    rank: { type: "number" },
    tags: { type: "select", multi: true, options: { a: "A", b: "B", c: "C" } },
  },
  index: ["status,year", "year"],
} as never, null);

const titles = ["apple", "Apple", "APPLE", "banana", "Banana", "cherry", "éclair", "Zed", "", "🍎 apple", "\uFFFDx"];
function record(i: number): StoredRecord {
  const data: Record<string, unknown> = { title: pick(titles), status: pick(["new", "open", "done"]), year: 1990 + Math.floor(rand() * 5) };
  if (rand() < 0.7) data.rank = Math.floor(rand() * 4);
  if (rand() < 0.3) data.year = null;
  if (rand() < 0.5) data.tags = [pick(["a", "b", "c"])];
  return { uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: 1000 + i, _modified: 1000 + i, _created_by: null, _modified_by: null };
}

/**
 * A store of `def` in a folder of its own, with its database path, and `fresh`: a store without
 * cache on the same file, whose answers the remembered ones must equal. Both close after the test.
 */
async function openStore(): Promise<{ store: SqliteStore; path: string; fresh: SqliteStore }> {
  const dir = mkdtempSync(join(tmpdir(), "resd-revise-"));
  dirs.push(dir);
  const path = join(dir, "resd.db");
  const store = new SqliteStore(path);
  await store.syncSchema([def]);
  const fresh = new SqliteStore(path, { cacheMaxBytes: 0, readWorkers: 0 });
  open.push(fresh, store);
  return { store, path, fresh };
}

type AnyStore = SqliteStore | PgStore;

/** A PostgreSQL store of `def` in a database of its own, and `fresh`, a store without cache on it. */
async function openPg(): Promise<{ store: PgStore; fresh: PgStore }> {
  if (!PG) throw new Error("test/store-memo-revise.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_rev");
  const store = await PgStore.open(url);
  await store.syncSchema([def]);
  const fresh = await PgStore.open(url, { cacheMaxBytes: 0 });
  open.push(fresh, store);
  return { store, fresh };
}

const stores: [string, () => Promise<{ store: AnyStore; fresh: AnyStore }>][] = [["SQLite", openStore], ["PostgreSQL", openPg]];

/** Creates a record holding only a title, in a commit of its own. */
const addTitled = (store: AnyStore, title: string) => store.transaction(async (tx) => tx.insert("items", { ...record(0), data: JSON.stringify({ title }) }));

const sorts = ["", "year", "year|desc", "title|text|asc", "title|text|desc", "title", "rank|desc", "rank,year|desc", "_created|desc", "status,title"];
const filters = ["", "status:new", "status:!new", "year:1992", "title:Apple", "status:done,year:1991", "rank:", "rank:!", "tags:b", "status:open||done,year:!1990"];
// Several slices of each list, of different sizes: a new record reaches some of them and not others.
const queries = [
  ...sorts.flatMap((sort) => filters.flatMap((filter) =>
    ["0", "3", "9", "40"].map((offset) => ({ sort, filter, offset, limit: pick(["3", "7", "12"]) })))),
  // Runs of pages that follow each other (from the start, and from the middle of a list): new rows
  // move them rather than drop them.
  ...sorts.flatMap((sort) => filters.slice(0, 6).flatMap((filter) => {
    const limit = pick([2, 4, 5]);
    const from = pick([0, 0, 6]);
    return [0, 1, 2, 3].map((k) => ({ sort, filter, offset: String(from + k * limit), limit: String(limit) }));
  })),
];

type Compiled = ReturnType<typeof compileList>;

/** The page and total of `c` from the store, beside a store that remembers nothing (`where` names the case). */
async function expectAsFresh(store: AnyStore, fresh: AnyStore, c: Compiled, where: string): Promise<void> {
  expect({ where, rows: (await store.page("items", c)).map((r) => r.uuid) }).toEqual({ where, rows: (await fresh.page("items", c)).map((r) => r.uuid) });
  expect({ where, total: await store.count("items", c) }).toEqual({ where, total: await fresh.count("items", c) });
}

/** Reads (and so remembers) the page and total of each query. */
async function readEach(store: AnyStore, compiled: { c: Compiled }[]): Promise<void> {
  for (const { c } of compiled) {
    await store.page("items", c);
    await store.count("items", c);
  }
}

for (const [kind, openKind] of stores) describe(kind, () => {
test("pages and totals remembered across inserts, updates and deletes equal a fresh read after every commit", async () => {
  const { store, fresh } = await openKind();
  let n = 0;
  await store.transaction(async (tx) => { for (let i = 0; i < 60; i++) await tx.insert("items", record(n++)); });
  const compiled = queries.map((q) => ({ q, c: compileList(store.dialect, def, parseListParams(q)) }));
  let keptAcrossInserts = 0;
  for (let round = 0; round < 35; round++) {
    await readEach(store, compiled);
    const before = store.memoBytes();
    const kind = rand();
    const uuids = (await fresh.page("items", compileList(store.dialect, def, parseListParams({ limit: "1000" })))).map((r) => r.uuid);
    if (kind < 0.7) {
      // Inserts, sometimes from several requests sharing one commit.
      await Promise.all(Array.from({ length: 1 + Math.floor(rand() * 3) }, () =>
        store.transaction(async (tx) => { for (let i = 0, k = 1 + Math.floor(rand() * 3); i < k; i++) await tx.insert("items", record(n++)); })));
      if (store.memoBytes() > 0) keptAcrossInserts++;
    } else if (kind < 0.85) {
      const uuid = pick(uuids);
      await store.transaction(async (tx) => {
        const row = (await tx.get("items", uuid))!;
        await tx.update("items", { ...row, data: record(0).data, _modified: row._modified + 1 });
      });
      expect(store.memoBytes()).toBeLessThan(before || 1);
    } else {
      await store.transaction(async (tx) => tx.delete("items", pick(uuids)));
    }
    for (const { q, c } of compiled) await expectAsFresh(store, fresh, c, `round ${round}: ${JSON.stringify(q)}`);
  }
  // The point of it all: most insert commits left answers in place.
  expect(keptAcrossInserts).toBeGreaterThan(15);
}, 120_000); // on PostgreSQL 32-49 s on 2 cores (35 rounds of fresh reads of every answer)

test("answers read now and then, across several commits of creates, equal a fresh read", async () => {
  const { store, fresh } = await openKind();
  let n = 0;
  await store.transaction(async (tx) => { for (let i = 0; i < 60; i++) await tx.insert("items", record(n++)); });
  const compiled = queries.map((q) => ({ q, c: compileList(store.dialect, def, parseListParams(q)) }));
  await readEach(store, compiled);
  for (let round = 0; round < 30; round++) {
    // One to four commits of creates, then a quarter of the answers read.
    for (let k = 0, commits = 1 + Math.floor(rand() * 4); k < commits; k++) {
      await store.transaction(async (tx) => { for (let i = 0, m = 1 + Math.floor(rand() * 4); i < m; i++) await tx.insert("items", record(n++)); });
    }
    // `fresh` is another connection: it notices the commits within a millisecond.
    await Bun.sleep(2);
    for (const { q, c } of compiled) if (rand() < 0.25) await expectAsFresh(store, fresh, c, `round ${round}: ${JSON.stringify(q)}`);
  }
  for (const { q, c } of compiled) await expectAsFresh(store, fresh, c, `at the end: ${JSON.stringify(q)}`);
}, 60_000);

test("an answer computed after a create joins the answers of its filter without the create counted twice", async () => {
  const { store, fresh } = await openKind();
  await store.transaction(async (tx) => { for (let i = 0; i < 20; i++) await tx.insert("items", { ...record(i), data: JSON.stringify({ title: `t${i}`, status: "open", year: 1990 }) }); });
  // A number field: its totals are remembered answers, not maintained counts.
  const total = compileList(store.dialect, def, parseListParams({ filter: "year:1990", limit: "0" }));
  const newest = compileList(store.dialect, def, parseListParams({ filter: "year:1990", sort: "_created|desc", limit: "5" }));
  expect(await store.count("items", total)).toBe(20);
  // A create, then the newest-first page of the same filter read for the first time (it holds the new record).
  await store.transaction(async (tx) => tx.insert("items", { ...record(50), _created: 9000, data: JSON.stringify({ title: "new", status: "open", year: 1990 }) }));
  await Bun.sleep(2);
  const page = (await store.page("items", newest)).map((r) => r.uuid);
  expect(page).toEqual((await fresh.page("items", newest)).map((r) => r.uuid));
  // The total counts the new record; the page, kept since, must not take it again.
  expect(await store.count("items", total)).toBe(21);
  expect((await store.page("items", newest)).map((r) => r.uuid)).toEqual(page);
});

test("an empty page (limit=0 or past the end) takes the next matching record; a create never fails for a cached answer", async () => {
  const { store } = await openKind();
  const add = (title: string) => addTitled(store, title);
  await add("a");
  const none = compileList(store.dialect, def, parseListParams({ sort: "title", limit: "0" }));
  const beyond = compileList(store.dialect, def, parseListParams({ sort: "title", limit: "5", offset: "1" }));
  const negated = compileList(store.dialect, def, parseListParams({ sort: "title", limit: "1", filter: "title:!zz" }));
  expect(await store.page("items", none)).toEqual([]);
  expect(await store.page("items", beyond)).toEqual([]);
  expect(await store.count("items", negated)).toBe(1);
  // Revising is not allowed to fail (it would drop every answer and say so on stderr).
  const complaints: unknown[] = [];
  const spoken = console.error;
  console.error = (...m: unknown[]) => void complaints.push(m);
  try {
    await add("b");
    await add("c");
  } finally {
    console.error = spoken;
  }
  expect(complaints).toEqual([]);
  expect((await store.page("items", beyond)).map((r) => JSON.parse(r.data).title)).toEqual(["b", "c"]);
  expect(await store.count("items", negated)).toBe(3);
});

test("full pages a new record moves into stay in memory, moved: newest first, and a sorted list it joins at the top", async () => {
  const { store, fresh } = await openKind();
  await store.transaction(async (tx) => { for (let i = 0; i < 40; i++) await tx.insert("items", record(i)); });
  const run = (sort: string) => [0, 5, 10, 15].map((offset) => compileList(store.dialect, def, parseListParams({ sort, limit: "5", offset: String(offset) })));
  const lists = [run("_created|desc"), run("year|desc")];
  const newestFirst = { where: "", args: [], orderBy: "ORDER BY id DESC", order: [{ expr: "id", desc: true }], limit: 5, offset: 0 };
  const all = [...lists.flat(), newestFirst];
  for (let round = 0; round < 6; round++) {
    for (const q of all) await store.page("items", q);
    const held = store.memoBytes();
    // At the top of every list: the newest record, of a year after all others.
    await store.transaction(async (tx) => tx.insert("items", { ...record(100 + round), _created: 5000 + round, data: JSON.stringify({ title: `top ${round}`, status: "new", year: 3000 + round }) }));
    // Moved, not dropped: the memo still holds about as much as before.
    expect(store.memoBytes()).toBeGreaterThan(held * 0.9);
    for (const q of all) {
      const where = `round ${round}: ${q.orderBy} offset ${q.offset}`;
      expect({ where, rows: (await store.page("items", q)).map((r) => r.uuid) }).toEqual({ where, rows: (await fresh.page("items", q)).map((r) => r.uuid) });
    }
    expect(JSON.parse((await store.page("items", lists[1][0]))[0].data).title).toBe(`top ${round}`);
  }
});

test("a run of pages deep in a newest-first list moves as new rows push it down, read again only once the rows kept ahead of it are spent", async () => {
  const { store, fresh } = await openKind();
  await store.transaction(async (tx) => { for (let i = 0; i < 60; i++) await tx.insert("items", record(i)); });
  // Every read of a page from the database, wherever the store sends it.
  let reads = 0;
  if (store instanceof PgStore) {
    const target = store as unknown as { listQuery: (...a: unknown[]) => Promise<unknown> };
    const real = target.listQuery.bind(store);
    target.listQuery = (...a) => { reads++; return real(...a); };
  } else {
    const route = (store as unknown as { route: { readAll: (...a: unknown[]) => Promise<unknown> } }).route;
    const real = route.readAll.bind(route);
    route.readAll = (...a) => { reads++; return real(...a); };
  }
  const run = [25, 30, 35, 40].map((offset) => compileList(store.dialect, def, parseListParams({ sort: "_created|desc", limit: "5", offset: String(offset) })));
  for (const q of run) await store.page("items", q);
  // PostgreSQL reads the pages after a deep page in its statement (read ahead): one read for four.
  expect(reads).toBe(store instanceof PgStore ? 1 : 4);
  reads = 0;
  for (let round = 1; round <= 25; round++) {
    await store.transaction(async (tx) => tx.insert("items", { ...record(100 + round), _created: 5000 + round }));
    for (const q of run) {
      const where = `round ${round}: offset ${q.offset}`;
      expect({ where, rows: (await store.page("items", q)).map((r) => r.uuid) }).toEqual({ where, rows: (await fresh.page("items", q)).map((r) => r.uuid) });
    }
  }
  // PostgreSQL reads 20 rows ahead of a page: the first page goes at the 21st new row and is read
  // again (with 20 rows ahead once more). SQLite keeps none ahead: the first page is read again
  // after every new row. Either way the pages after it take their first rows from the one before.
  // Before, every page of the run was read again after every new row: 100 reads.
  expect(reads).toBe(store instanceof PgStore ? 1 : 25);
});
});

test("a deep page on PostgreSQL reads the four pages after it in its statement: they are served without reading, equal a fresh read, and move with new rows", async () => {
  const { store, fresh } = await openPg();
  await store.transaction(async (tx) => { for (let i = 0; i < 80; i++) await tx.insert("items", record(i)); });
  let reads = 0;
  const target = store as unknown as { listQuery: (...a: unknown[]) => Promise<unknown> };
  const real = target.listQuery.bind(store);
  target.listQuery = (...a) => { reads++; return real(...a); };
  const at = (offset: number, sort = "year|desc") => compileList(store.dialect, def, parseListParams({ sort, limit: "6", offset: String(offset) }));
  const check = async (offsets: number[], where: string) => {
    for (const o of offsets) {
      const q = at(o);
      expect({ where, o, rows: (await store.page("items", q)).map((r) => r.uuid) }).toEqual({ where, o, rows: (await fresh.page("items", q)).map((r) => r.uuid) });
    }
  };
  // Offset 24 is 4 pages deep: 30, 36, 42 and 48 come with it; 54 is read with 60 to 78 (the list
  // ends at 80: 78 holds 2 rows); past the end is read on its own.
  await check([24], "first");
  expect(reads).toBe(1);
  await check([30, 36, 42, 48], "read ahead");
  expect(reads).toBe(1);
  await check([54], "the next one");
  expect(reads).toBe(2);
  await check([60, 66, 72, 78], "to the end");
  expect(reads).toBe(2);
  await check([84], "past the end");
  expect(reads).toBe(3);
  // Shallow pages read alone: offset 12 is 2 pages deep.
  await check([12, 18], "shallow");
  expect(reads).toBe(5);
  // New rows at the top and in the middle: every kept page moves or goes, and still equals a fresh read.
  for (let round = 0; round < 4; round++) {
    await store.transaction(async (tx) => {
      await tx.insert("items", { ...record(200 + round), data: JSON.stringify({ title: `top ${round}`, status: "new", year: 3000 + round }) });
      await tx.insert("items", { ...record(300 + round), data: JSON.stringify({ title: `mid ${round}`, status: "open", year: 1992 }) });
    });
    await check([12, 18, 24, 30, 36, 42, 48, 54, 60, 66, 72, 78, 84], `round ${round}`);
  }
  // A page read ahead under another order is a page of that order only.
  await store.page("items", at(24, "year"));
  const q = at(30, "year");
  expect((await store.page("items", q)).map((r) => r.uuid)).toEqual((await fresh.page("items", q)).map((r) => r.uuid));
});

test("a write of another process still drops every answer", async () => {
  const { store, path } = await openStore();
  await store.transaction(async (tx) => { for (let i = 0; i < 10; i++) await tx.insert("items", record(i)); });
  const q = compileList(store.dialect, def, parseListParams({ sort: "year|desc", limit: "3" }));
  const first = await store.page("items", q);
  expect(await store.count("items", q)).toBe(10);
  const other = new SqliteStore(path, { readWorkers: 0 });
  const top = { ...record(99), data: JSON.stringify({ title: "top", status: "new", year: 3000 }) };
  await other.transaction(async (tx) => tx.insert("items", top));
  await other.close();
  await Bun.sleep(5); // the other process's commit is noticed within a millisecond
  const again = await store.page("items", q);
  expect(again[0].uuid).toBe(top.uuid);
  expect(again.slice(1).map((r) => r.uuid)).toEqual(first.slice(0, 2).map((r) => r.uuid));
  expect(await store.count("items", q)).toBe(11);
});

test("order by text compares as SQLite does (UTF-8 bytes), and newest-first pages take every new record", async () => {
  const { store } = await openStore();
  const add = (title: string) => addTitled(store, title);
  for (const t of ["a", "b", "🍎"]) await add(t);
  const byTitle = compileList(store.dialect, def, parseListParams({ sort: "title", limit: "3" }));
  const newestFirst = { where: "", args: [], orderBy: "ORDER BY id DESC", order: [{ expr: "id", desc: true }], limit: 2, offset: 0 };
  const titles = async (q: typeof byTitle) => (await store.page("items", q)).map((r) => JSON.parse(r.data).title);
  expect(await titles(byTitle)).toEqual(["a", "b", "🍎"]);
  expect(await titles(newestFirst)).toEqual(["🍎", "b"]);
  // U+FFFD sorts before U+1F34E in UTF-8 (EF… < F0…), after it in UTF-16 (FFFD > D83C).
  await add("\uFFFD");
  expect(await titles(byTitle)).toEqual(["a", "b", "\uFFFD"]);
  expect(await titles(newestFirst)).toEqual(["\uFFFD", "🍎"]);
});


test("past the work a commit may spend on them, cached filters are dropped, never left stale", async () => {
  const { store, fresh } = await openStore();
  await store.transaction(async (tx) => { for (let i = 0; i < 30; i++) await tx.insert("items", record(i)); });
  // 60 filters SQLite must judge (negations), each with a page in insertion order and a total.
  const qs = Array.from({ length: 60 }, (_, i) => compileList(store.dialect, def, parseListParams({ filter: `title:!x${i}`, limit: "5" })));
  for (const q of qs) {
    await store.page("items", q);
    await store.count("items", q);
  }
  const held = store.memoBytes();
  await store.transaction(async (tx) => tx.insert("items", record(99)));
  expect(store.memoBytes()).toBeGreaterThan(0);
  expect(store.memoBytes()).toBeLessThan(held);
  for (const q of qs) {
    expect((await store.page("items", q)).map((r) => r.uuid)).toEqual((await fresh.page("items", q)).map((r) => r.uuid));
    expect(await store.count("items", q)).toBe(await fresh.count("items", q));
  }
});

test("past the orders a commit may ask SQLite about, their pages are dropped, never left stale", async () => {
  const { store, fresh } = await openStore();
  const titled = (i: number) => ({ ...record(i), data: JSON.stringify({ title: `t${String(i).padStart(3, "0")}`, status: "new", year: 1990 + (i % 5), rank: i % 4 }) });
  await store.transaction(async (tx) => { for (let i = 0; i < 30; i++) await tx.insert("items", titled(i)); });
  // 90 orders led by a text collation: only SQLite can place a new record in them.
  const keys = ["status", "year", "rank", "_created", "_modified"].flatMap((k) => [k, `${k}|desc`]);
  const sorts = keys.flatMap((a) => keys.filter((b) => b.split("|")[0] !== a.split("|")[0]).map((b) => `title|text|asc,${a},${b}`));
  expect(sorts.length).toBeGreaterThan(MAX_SQL_ORDERS);
  const qs = sorts.map((sort) => compileList(store.dialect, def, parseListParams({ sort, limit: "5" })));
  for (const q of qs) await store.page("items", q);
  const held = store.memoBytes();
  // Sorts after every kept page in all of them: judged one by one, every page would stay.
  await store.transaction(async (tx) => tx.insert("items", { ...titled(99), data: JSON.stringify({ title: "t999", status: "new" }) }));
  expect(store.memoBytes()).toBeGreaterThan(0);
  expect(store.memoBytes()).toBeLessThan(held);
  for (const q of qs) expect((await store.page("items", q)).map((r) => r.uuid)).toEqual((await fresh.page("items", q)).map((r) => r.uuid));
});


describe("PostgreSQL, with reads running beside the commits", () => {
  test("many writers at once while pages and totals are read: each writer's create is in the totals it reads next, and every kept answer equals a fresh read at the end", async () => {
    const { store, fresh } = await openPg();
    let n = 0;
    await store.transaction(async (tx) => { for (let i = 0; i < 60; i++) await tx.insert("items", record(n++)); });
    // Pages and totals JavaScript can revise (plain sorts, equality filters), in many slices: most
    // reads miss, so many run while a commit is on its way (they may or may not see it).
    const plainSorts = ["", "year", "year|desc", "rank|desc", "rank,year|desc", "_created|desc", "status,title", "title|desc"];
    const equalities = ["", "status:new", "year:1992", "title:Apple", "status:done,year:1991", "rank:2", "year:1990,rank:1"];
    const readQuery = () => compileList(store.dialect, def, parseListParams({ sort: pick(plainSorts), filter: pick(equalities), offset: String(Math.floor(rand() * 30)), limit: String(1 + Math.floor(rand() * 8)) }));
    const read: Compiled[] = [];
    const everything = compileList(store.dialect, def, parseListParams({ limit: "0" }));
    let created = 0;
    let deleting = 0;
    let writing = true;
    const readers = Array.from({ length: 6 }, async () => {
      while (writing) {
        const c = readQuery();
        read.push(c);
        await Promise.all([store.page("items", c), store.count("items", c)]);
      }
    });
    // First creates and deletes (a delete drops every answer of the resource), then creates alone.
    const writers = Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 40; i++) {
        if (i < 20 && rand() < 0.1) {
          const [victim] = await fresh.page("items", compileList(store.dialect, def, parseListParams({ limit: "1", offset: String(Math.floor(rand() * 40)) })));
          if (!victim) continue;
          // Counted before it commits: the floor below stays a floor while it runs.
          deleting++;
          if (!(await store.transaction(async (tx) => tx.delete("items", victim.uuid)))) deleting--;
          continue;
        }
        await store.transaction(async (tx) => tx.insert("items", record(n++)));
        created++;
        // Every create told to its writer is in what anyone reads from then on.
        const floor = 60 + created - deleting;
        expect(await store.count("items", everything)).toBeGreaterThanOrEqual(floor);
      }
    });
    await Promise.all(writers);
    writing = false;
    await Promise.all(readers);
    expect(await store.count("items", everything)).toBe(60 + created - deleting);
    expect(read.length).toBeGreaterThan(100);
    for (const [i, c] of read.entries()) await expectAsFresh(store, fresh, c, `read ${i}: ${c.where} ${JSON.stringify(c.args)} ${c.orderBy} ${c.offset}/${c.limit}`);
  }, 120_000);

  test("a transaction that took a lower id commits after a later one: the pages it reaches hold its record", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => { for (let i = 0; i < 4; i++) await tx.insert("items", record(i)); });
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let inserted = () => {};
    const began = new Promise<void>((r) => (inserted = r));
    const early = { ...record(10), data: JSON.stringify({ title: "early" }) };
    const held = store.transaction(async (tx) => {
      await tx.insert("items", early);
      inserted();
      await gate;
    }, { alone: true });
    await began;
    await store.transaction(async (tx) => tx.insert("items", record(11)));
    const byId = compileList(store.dialect, def, parseListParams({ limit: "5" }));
    const newest = compileList(store.dialect, def, parseListParams({ sort: "_created|desc", limit: "5" }));
    for (const c of [byId, newest]) await store.page("items", c);
    release();
    await held;
    for (const c of [byId, newest]) {
      expect((await store.page("items", c)).map((r) => r.uuid)).toEqual((await fresh.page("items", c)).map((r) => r.uuid));
    }
    expect((await store.page("items", byId)).map((r) => r.uuid)).toContain(early.uuid);
  }, 30_000);

  test("the snapshot watch does not take this instance's own commits for another's: answers stay across its looks", async () => {
    const { store } = await openPg();
    await store.transaction(async (tx) => { for (let i = 0; i < 30; i++) await tx.insert("items", record(i)); });
    const compiled = queries.slice(0, 40).map((q) => compileList(store.dialect, def, parseListParams(q)));
    for (const c of compiled) await store.page("items", c);
    for (let i = 0; i < 5; i++) await store.transaction(async (tx) => tx.insert("items", record(100 + i)));
    const held = store.memoBytes();
    expect(held).toBeGreaterThan(0);
    // Two looks of the watch (one a second), each seeing the snapshot and the marks moved by the creates.
    await Bun.sleep(2300);
    await store.page("items", compiled[0]);
    expect(store.memoBytes()).toBeGreaterThanOrEqual(held);
  }, 30_000);
});
