/**
 * Two PostgreSQL instances on one database, each keeping answers that the other's commits change:
 * - a commit whose rows took their ids before a commit heard of (and read) since, of this instance
 *   or another, is placed among the cached pages by its ids, not as the newest, and the pages stay
 *   in memory. Ids are taken at INSERT, not at COMMIT; the other commit's rows may sit above this
 *   one's in every page sorted with the row id last;
 * - another instance's creates, told with their rows, are revised into the kept pages and totals
 *   (not dropping them all), and every answer still equals a fresh read.
 */
import { expect, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { PG, pgStores } from "./helpers/pg-stores";
import { holdNotices } from "./helpers/hold-notices";

const { open, databases } = pgStores();

const items = buildDefinition("items", {
  fields: { title: { type: "text" }, year: { type: "number" }, status: { type: "select", options: { new: "New", open: "Open", done: "Done" } } },
  index: ["status,year", "year"],
} as never, null);
const row = (title: string, year: number): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify({ title, year }), _created: 1000, _modified: 1000, _created_by: null, _modified_by: null });

/** Two instances (`a`, `b`) and a store that keeps nothing, on a database of their own. */
async function instances(): Promise<{ a: PgStore; b: PgStore; fresh: PgStore }> {
  if (!PG) throw new Error("test/store-postgres-instances-order.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_inst");
  const a = await PgStore.open(url);
  await a.syncSchema([items]);
  const b = await PgStore.open(url);
  await b.syncSchema([items]);
  const fresh = await PgStore.open(url, { cacheMaxBytes: 0 });
  await fresh.syncSchema([items]);
  open.push(fresh, b, a);
  return { a, b, fresh };
}

/**
 * A transaction of `store` that inserts a row (its id taken: it is read back inside the
 * transaction) and waits to commit until `commit` is called; resolves once the row is in.
 */
async function heldInsert(store: PgStore): Promise<{ early: StoredRecord; commit: () => Promise<void> }> {
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  let inserted = () => {};
  const took = new Promise<void>((r) => (inserted = r));
  const early = row("same", 2000);
  const writing = store.transaction(async (tx) => {
    await tx.insert("items", early);
    expect(await tx.get("items", early.uuid)).not.toBeNull();
    inserted();
    await held;
  });
  await took;
  return { early, commit: async () => {
    release();
    await writing;
  } };
}

const titles = async (store: PgStore, sort: string) =>
  (await store.page("items", compileList(store.dialect, items, parseListParams({ sort, limit: "5" })))).map((r) => JSON.parse(r.data).title as string);

async function until(ok: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

for (const sort of ["year|desc", "_created|desc", "title|text|asc,year|desc"]) {
  test(`a commit holding lower ids than another instance's rows seen since: pages stay exact (sort=${sort})`, async () => {
    const { a, b, fresh } = await instances();
    await a.transaction(async (tx) => {
      for (let i = 0; i < 12; i++) await tx.insert("items", row("same", 2000));
    });
    // B takes its row's id, and waits before committing.
    const { early, commit } = await heldInsert(b);
    // A commits a row with a higher id; B hears of it, and caches a page that holds it.
    const before = b.version();
    const late = row("same", 2000);
    await a.transaction(async (tx) => tx.insert("items", late));
    await until(() => b.version() !== before, "B to hear of A's commit");
    const seen = await titles(b, sort);
    expect(seen).toEqual(await titles(fresh, sort));
    await commit();
    // Revised by its id, not dropped (the page is all B keeps; text in a collation only PostgreSQL can order).
    if (sort !== "title|text|asc,year|desc") expect(b.memoBytes()).toBeGreaterThan(0);
    const want = (await fresh.page("items", compileList(fresh.dialect, items, parseListParams({ sort, limit: "5" })))).map((r) => r.uuid);
    const got = (await b.page("items", compileList(b.dialect, items, parseListParams({ sort, limit: "5" })))).map((r) => r.uuid);
    expect(got).toEqual(want);
    // What was asked: B's row sorts after A's later one wherever the row id decides.
    if (sort !== "title|text|asc,year|desc") expect(want.indexOf(late.uuid)).toBeLessThan(want.indexOf(early.uuid));
  });
}

// Newest first, and oldest first at the end of the list (offset 11 of 14: the two rows just
// before and after the lower id), where the lower id goes into the middle of the page.
for (const [sort, offset, limit] of [["year|desc", "0", "5"], ["_created|desc", "0", "5"], ["", "11", "2"], ["year", "11", "2"]]) {
  test(`another instance's commit holding lower ids than a commit of this instance revised since: placed by its id, pages kept and exact (sort=${sort}, offset ${offset})`, async () => {
    const { a, b, fresh } = await instances();
    await a.transaction(async (tx) => {
      for (let i = 0; i < 12; i++) await tx.insert("items", row("same", 2000));
    });
    await until(() => b.version() > 0, "B to hear of the first rows");
    for (let v = -1; v !== b.version(); await Bun.sleep(60)) v = b.version();
    const page = () => compileList(b.dialect, items, parseListParams({ sort, offset, limit }));
    const read = async (store: PgStore) => (await store.page("items", page())).map((r) => r.uuid);
    expect(await read(b)).toEqual(await read(fresh));
    // A takes its row's id and waits; B commits a row with a higher id, revised into its pages.
    const { early, commit } = await heldInsert(a);
    const late = row("same", 2000);
    await b.transaction(async (tx) => tx.insert("items", late));
    expect(await read(b)).toEqual(await read(fresh));
    // A commits; B hears of it with its row, whose id is below the one B revised in.
    const before = b.version();
    await commit();
    await until(() => b.version() > before, "B to hear of A's commit");
    // The page was revised, not dropped (it is all B keeps).
    expect(b.memoBytes()).toBeGreaterThan(0);
    const want = await read(fresh);
    expect(await read(b)).toEqual(want);
    expect(want).toContain(early.uuid);
    if (offset === "0") expect(want.indexOf(late.uuid)).toBeLessThan(want.indexOf(early.uuid));
    else expect(want).toEqual([expect.any(String), early.uuid]);
  });
}

const pageOf = (store: PgStore, sort: string, filter = "") => compileList(store.dialect, items, parseListParams({ sort, filter, limit: "5" }));
const uuids = async (store: PgStore, sort: string, filter = "") => (await store.page("items", pageOf(store, sort, filter))).map((r) => r.uuid);
async function settled(store: PgStore): Promise<void> {
  for (let v = -1; v !== store.version(); await Bun.sleep(60)) v = store.version();
}

test("answers read after another instance's commit and before its notice are kept as they are, not given its rows again", async () => {
  const { a, b, fresh } = await instances();
  await a.transaction(async (tx) => { for (let i = 0; i < 8; i++) await tx.insert("items", row("same", 2000)); });
  await settled(b);
  const release = holdNotices(a);
  const before = b.version();
  await a.transaction(async (tx) => tx.insert("items", row("same", 2000)));
  // B reads the page and the total with A's row already in them, then hears of it.
  const total = compileList(b.dialect, items, parseListParams({ filter: "year:2000", limit: "0" }));
  expect(await b.count("items", total)).toBe(9);
  const page = await uuids(b, "_created|desc");
  expect(page).toEqual(await uuids(fresh, "_created|desc"));
  release();
  await until(() => b.version() > before, "B to hear of A's commit");
  // They hold the row already: kept as they are (not dropped, not given it again).
  expect(b.memoBytes()).toBeGreaterThan(0);
  expect(await b.count("items", total)).toBe(9);
  expect(await uuids(b, "_created|desc")).toEqual(page);
});

test("another instance's rows are not placed as the newest in a page that saw a higher id", async () => {
  const { a, fresh } = await instances();
  const c = await PgStore.open(a.url);
  open.push(c);
  await a.transaction(async (tx) => { for (let i = 0; i < 8; i++) await tx.insert("items", row("same", 2000)); });
  // A takes an id and waits; C commits a row with a higher id; B starts (it heard of neither) and reads the page.
  const { early, commit } = await heldInsert(a);
  await c.transaction(async (tx) => tx.insert("items", row("same", 2000)));
  const b = await PgStore.open(a.url);
  open.unshift(b);
  expect(await uuids(b, "year|desc")).toEqual(await uuids(fresh, "year|desc"));
  const before = b.version();
  await commit();
  await until(() => b.version() > before, "B to hear of A's commit");
  expect(await uuids(b, "year|desc")).toEqual(await uuids(fresh, "year|desc"));
});

// A fixed seed: a failure names the round, and the same round fails again.
let seed = 20261128;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
let made = 0;
const random = (): StoredRecord => {
  const data = { title: pick(["apple", "Apple", "banana", "cherry", "éclair", "Zed", ""]), year: rand() < 0.2 ? null : 1990 + Math.floor(rand() * 4), status: pick(["new", "open", "done"]) };
  made++;
  return { uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: 1000 + (made % 7), _modified: 1000, _created_by: null, _modified_by: null };
};

const sorts = ["", "year", "year|desc", "_created|desc", "status,year|desc", "title|text|asc"];
const filters = ["", "status:new", "year:1991", "status:open||done,year:!1990"];
const queries = sorts.flatMap((sort) => filters.flatMap((filter) => [
  ...["0", "4", "30"].map((offset) => ({ sort, filter, offset, limit: "6" })),
  // A run of pages from the start: creates move them rather than drop them.
  ...[0, 1, 2].map((k) => ({ sort, filter, offset: String(k * 3), limit: "3" })),
]));

test("another instance's creates are revised into the kept pages and totals, which equal a fresh read after every round", async () => {
  const { a, b, fresh } = await instances();
  await a.transaction(async (tx) => { for (let i = 0; i < 50; i++) await tx.insert("items", random()); });
  const compiled = queries.map((q) => ({ q, c: compileList(b.dialect, items, parseListParams(q)) }));
  const readAll = async () => {
    for (const { c } of compiled) {
      await b.page("items", c);
      await b.count("items", c);
    }
  };
  let kept = 0;
  for (let round = 0; round < 25; round++) {
    await readAll();
    const before = b.version();
    const commits = 1 + Math.floor(rand() * 3);
    // A's commits (some at once), and now and then one of B's own beside them.
    const own = rand() < 0.3;
    // B reads all the while: some answers are read after a commit of A and before its notice.
    let writing = true;
    const reading = (async () => {
      while (writing) {
        const { c } = pick(compiled);
        await Promise.all([b.page("items", c), b.count("items", c)]);
        // Kept answers come back without a turn of the event loop: let the writers' timers run.
        await Bun.sleep(0);
      }
    })();
    await Promise.all([
      ...Array.from({ length: commits }, async () => {
        await Bun.sleep(Math.floor(rand() * 4));
        await a.transaction(async (tx) => { for (let i = 0, n = 1 + Math.floor(rand() * 3); i < n; i++) await tx.insert("items", random()); });
      }),
      ...(own ? [b.transaction(async (tx) => tx.insert("items", random()))] : []),
    ]);
    await Bun.sleep(Math.floor(rand() * 3));
    writing = false;
    await reading;
    // Concurrent transactions may share one commit: B has heard of them all once its version
    // moved and then stayed put a while (a notice arrives within milliseconds of its commit).
    await until(() => b.version() > before + (own ? 1 : 0), "B to hear of A's commits");
    for (let v = -1; v !== b.version(); await Bun.sleep(60)) v = b.version();
    if (b.memoBytes() > 0) kept++;
    for (const { q, c } of compiled) {
      const where = `round ${round}: ${JSON.stringify(q)}`;
      expect({ where, rows: (await b.page("items", c)).map((r) => r.uuid) }).toEqual({ where, rows: (await fresh.page("items", c)).map((r) => r.uuid) });
      expect({ where, total: await b.count("items", c) }).toEqual({ where, total: await fresh.count("items", c) });
    }
  }
  // The point of it: A's creates did not empty B's cache.
  expect(kept).toBeGreaterThan(15);
}, 120_000);

test("a kept page's statement (with its row ids and snapshot) is planned as the plain list's, and reads the sort's index: no output column shadows the order", async () => {
  const { a } = await instances();
  await a.transaction(async (tx) => { for (let i = 0; i < 2000; i++) await tx.insert("items", { ...random(), _created: 1000 + i }); });
  await a.query("ANALYZE \"r:items\"");
  const select = (a as unknown as { selectSql: (resource: string, q: unknown, kept: boolean) => Promise<[string, unknown[]]> }).selectSql.bind(a);
  // How the rows are found and ordered (the snapshot's subquery adds an InitPlan of its own).
  const plan = async (sql: string, args: unknown[]) =>
    (await a.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, args as never[])).map((r) => r["QUERY PLAN"])
      .filter((line) => /Scan|Sort|Limit/.test(line)).map((line) => line.replace(/\(cost=[^)]*\)/g, "").replaceAll('"r:items".', "").trim()).join("\n");
  for (const sort of ["", "year|desc", "_created|desc", "status,year|desc"]) {
    const q = compileList(a.dialect, items, parseListParams({ sort, limit: "20", offset: "40" }));
    const [kept, keptArgs] = await select("items", q, true);
    const [plain, plainArgs] = await select("items", q, false);
    const want = await plan(plain, plainArgs);
    expect({ sort, plan: await plan(kept, keptArgs) }).toEqual({ sort, plan: want });
    // And a sort by an indexed key reads its index: `_created`, selected as a float under its own
    // name, sorted by the float before (a sort of the whole table per page).
    if (sort !== "status,year|desc") expect({ sort, plan: want }).toEqual({ sort, plan: expect.stringContaining("Index Scan") });
  }
});
