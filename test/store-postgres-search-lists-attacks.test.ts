/**
 * Attacks on search from kept trigram lists on PostgreSQL (src/core/store/postgres-gram-index.ts):
 * each test in the first group was a way a search answered from the lists differed from the
 * trigram index's answer (a store with cacheMaxBytes: 0), or a way the lists broke their budget,
 * until it was fixed. The second group held from the start.
 *
 * Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL), e.g.
 * postgres://postgres@127.0.0.1:55432/postgres. Without one the file fails (it does not skip).
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { PgStore } from "../src/core/store/postgres";
import { GramLists } from "../src/core/store/gram-lists";
import { PgGramIndex, type TextRow } from "../src/core/store/postgres-gram-index";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { ResourceDef } from "../src/core/definitions/types";
import type { StoredRecord } from "../src/core/store/types";
import { psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const open: { close(): Promise<void> }[] = [];
const databases: string[] = [];
afterEach(async () => {
  for (const s of open.splice(0).reverse()) await s.close();
});
afterAll(() => {
  for (const name of databases) psql(PG, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

const items = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" } } } as never, null);
const notes = buildDefinition("notes", { fields: { name: { type: "text" }, tags: { type: "select", multi: true, options: { a: "A", b: "B" } } } } as never, null);
/** No `title`: every visible field is searched (name, then extra once it is defined). */
const docs = buildDefinition("docs", { fields: { name: { type: "text" } } } as never, null);
const docsWide = buildDefinition("docs", { fields: { name: { type: "text" }, extra: { type: "text" } } } as never, null);
/** `notes` with a unique name: its index cannot be made over duplicate names. */
const notesUnique = buildDefinition("notes", { fields: { name: { type: "text" }, tags: { type: "select", multi: true, options: { a: "A", b: "B" } } }, unique: ["name"] } as never, null);
const defs: Record<string, ResourceDef> = { items, notes, docs };

let n = 0;
const row = (data: Record<string, unknown>): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: 1000 + ++n, _modified: 1000 + n, _created_by: null, _modified_by: null });

/**
 * A database of its own (`create`: what follows CREATE DATABASE, e.g. an ICU locale) with items,
 * notes and docs; `fresh` is a store on it that keeps nothing (no lists either).
 */
async function openPg(create = "", opts: { queryBudgetMs?: number } = {}): Promise<{ store: PgStore; fresh: PgStore; url: string }> {
  if (!PG) throw new Error("test/store-postgres-search-lists-attacks.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const name = `resd_gatk_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  psql(PG, `CREATE DATABASE ${name} ${create}`);
  databases.push(name);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const store = await PgStore.open(url.toString(), opts);
  open.push(store);
  await store.syncSchema([items, notes, docs]);
  const fresh = await PgStore.open(url.toString(), { cacheMaxBytes: 0 });
  open.push(fresh);
  await fresh.syncSchema([items, notes, docs]);
  return { store, fresh, url: url.toString() };
}

const query = (store: PgStore, resource: string, search: string, extra: Record<string, string> = {}) =>
  compileList(store.dialect, defs[resource]!, parseListParams({ search, limit: "50", ...extra }));

/** The page and total of a search, from the store and from the store that keeps nothing. */
async function expectAsFresh(store: PgStore, fresh: PgStore, search: string, resource = "items", extra: Record<string, string> = {}): Promise<string[]> {
  const c = query(store, resource, search, extra);
  const f = query(fresh, resource, search, extra);
  const got = { search, rows: (await store.page(resource, c)).map((r) => r.uuid), total: await store.count(resource, c) };
  const want = { search, rows: (await fresh.page(resource, f)).map((r) => r.uuid), total: await fresh.count(resource, f) };
  expect(got).toEqual(want);
  return got.rows;
}

/** Where lists must not be used (the database lowers text otherwise): a search starts no build that keeps any. */
async function notBuilt(store: PgStore, resource = "items"): Promise<void> {
  await store.page(resource, query(store, resource, "zzzq"));
  await Bun.sleep(500);
  expect(store.searchListBytes()).toBe(0);
}

/** Asks one search (which starts a build) and waits until the store holds lists. */
async function built(store: PgStore, resource = "items"): Promise<void> {
  await store.page(resource, query(store, resource, "zzzq"));
  for (let i = 0; i < 200 && store.searchListBytes() === 0; i++) await Bun.sleep(25);
  expect(store.searchListBytes()).toBeGreaterThan(0);
}

const titles = (k: number) => Array.from({ length: k }, (_, i) => `Record number ${i}`);

/** A session of its own that holds a lock until `release` (another instance's transaction, or a slow one). */
async function holder(url: string, lockSql: string, args: unknown[] = []): Promise<{ release(): Promise<void> }> {
  const sql = new SQL(url, { max: 1 });
  const db = await sql.reserve();
  await db.unsafe("BEGIN");
  await db.unsafe(lockSql, args as never[]);
  return {
    async release() {
      await db.unsafe("ROLLBACK");
      db.release();
      await sql.close();
    },
  };
}

/** Waits until some session of the database waits for a lock. */
async function someoneWaits(url: string): Promise<void> {
  const sql = new SQL(url, { max: 1 });
  try {
    for (let i = 0; i < 400; i++) {
      const [r] = (await sql.unsafe("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted")) as { n: number }[];
      if (r!.n > 0) return;
      await Bun.sleep(10);
    }
    throw new Error("nobody waited for the lock");
  } finally {
    await sql.close();
  }
}

describe("search lists on PostgreSQL: attacks that broke the invariant", () => {
  test("a create whose id is below one the build saw (another instance's create) is found: its append is not skipped", async () => {
    const { store, fresh, url } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(300)) await tx.insert("items", row({ title: t })); });
    const other = await PgStore.open(url);
    open.push(other);
    await other.syncSchema([items, notes, docs]);
    const [some] = await fresh.page("items", query(fresh, "items", "number 123"));
    // A lock held elsewhere (a slow transaction of another instance) holds this instance's write
    // after its create took its row id: a group of a create and an update, say.
    const lock = await holder(url, `SELECT 1 FROM "r:items" WHERE uuid = $1 FOR UPDATE`, [some!.uuid]);
    const mine = store.transaction(async (tx) => {
      await tx.insert("items", row({ title: "Record number omega" }));
      await tx.get("items", some!.uuid);
    });
    await someoneWaits(url);
    // Meanwhile another instance creates a record (a higher id) and tells this one.
    await other.transaction(async (tx) => tx.insert("items", row({ title: "Record number elsewhere" })));
    // Its notice, and the snapshot watch's look at the change marks (every second), drop what this
    // instance keeps; after them its lists are built: they hold the other instance's record, not
    // the waiting one, and nothing drops them.
    await Bun.sleep(2500);
    await built(store);
    await Bun.sleep(1500);
    await store.page("items", query(store, "items", "zzzq"));
    expect(store.searchListBytes()).toBeGreaterThan(0);
    await lock.release();
    await mine;
    // The writer has heard of its create; a search must find it, as the index does.
    expect((await expectAsFresh(store, fresh, "number omega")).length).toBe(1);
  });

  test("a create whose id is below those of this instance's own copy (insertMany, alone) that the build saw is found", async () => {
    const { store, fresh, url } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(300)) await tx.insert("items", row({ title: t })); });
    const [some] = await fresh.page("items", query(fresh, "items", "number 123"));
    const lock = await holder(url, `SELECT 1 FROM "r:items" WHERE uuid = $1 FOR UPDATE`, [some!.uuid]);
    const mine = store.transaction(async (tx) => {
      await tx.insert("items", row({ title: "Record number omega" }));
      await tx.get("items", some!.uuid);
    });
    await someoneWaits(url);
    // A copy of records in a transaction of its own (as `resd migrate --to` writes them): its rows
    // are not revised one by one, so OwnCommits does not learn their (higher) ids.
    await store.transaction(async (tx) => tx.insertMany("items", ["Record number copy 1", "Record number copy 2"].map((t) => row({ title: t }))), { alone: true });
    await built(store);
    await lock.release();
    await mine;
    expect((await expectAsFresh(store, fresh, "number omega")).length).toBe(1);
  });

  // ICU may lower one letter to several, and a Turkic locale lowers ASCII I to a dotless ı: the
  // JavaScript fold would miss records there, so the lists must not be built, whatever ICU's spelling.
  const icu: { name: string; locale: string; titles: string[]; term: string }[] = [
    // ICU lowers İ (and I + U+0307) to i + U+0307: the record holds the lowered term, but
    // JavaScript folds the term's İ to "i" alone ("ist"), which the record's fold lacks.
    { name: "ICU database (en): İstanbul written decomposed (I + U+0307, NFD) is found by the term İstanbul, as ILIKE (ICU lower) finds it",
      locale: "en", titles: ["Mistral wind", "\u0130stanbul, written decomposed".normalize("NFD")], term: "\u0130stanbul" },
    // Lithuanian lowers both Ì and I + U+0300 to i + U+0307 + U+0300; JavaScript folds the term's I to ASCII "i" alone.
    { name: "ICU database (lt): Ì is found by a term with I + U+0300, as ILIKE (Lithuanian lower adds a dot) finds it",
      locale: "lt", titles: ["Cabinet", "Kab\u00ccr"], term: "kabI\u0300r" },
    // PostgreSQL lowers "ISTANBUL" to "ıstanbul" here, which the record holds.
    { name: "ICU database with a Turkish locale spelled 'tur': ASCII I lowers to ı, the lists must not be used",
      locale: "tur", titles: ["Mistral wind", "\u0131stanbul with a dotless i"], term: "ISTANBUL" },
  ];
  for (const c of icu) {
    test(c.name, async () => {
      const { store, fresh } = await openPg(`TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${c.locale}' LOCALE 'C.UTF-8'`);
      await store.transaction(async (tx) => {
        for (const t of [...titles(200), ...c.titles]) await tx.insert("items", row({ title: t }));
      });
      await notBuilt(store);
      expect((await expectAsFresh(store, fresh, c.term)).length).toBe(1);
    });
  }

  test("a schema sync that fails leaves the search text changed: lists built over the old text are not used with it", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => {
      for (const t of titles(200)) await tx.insert("docs", row({ name: t }));
      await tx.insert("docs", row({ name: "Alpha", extra: "Record number 99999" }));
      // Two notes of one name: a unique index over names cannot be made.
      await tx.insert("notes", row({ name: "same" }));
      await tx.insert("notes", row({ name: "same" }));
    });
    await built(store, "docs");
    defs.docs = docsWide;
    try {
      // docs gains a search field, then the sync fails on notes and is rolled back (on both stores alike).
      await expect(store.syncSchema([docsWide, notesUnique])).rejects.toThrow(/unique|index/i);
      await expect(fresh.syncSchema([docsWide, notesUnique])).rejects.toThrow(/unique|index/i);
      expect(store.dialect.searchText.get("docs")).toBe(fresh.dialect.searchText.get("docs"));
      expect((await expectAsFresh(store, fresh, "number 99999", "docs")).length).toBe(1);
    } finally {
      defs.docs = docs;
    }
  });

  test("a commit given up on (past its patience) that lands after a build is found by its writer's next search", async () => {
    const { store, fresh, url } = await openPg("", { queryBudgetMs: 100 });
    await store.transaction(async (tx) => { for (const t of titles(300)) await tx.insert("items", row({ title: t })); });
    // The commit's change marks wait for a lock held elsewhere; an exclusive transaction (an import)
    // has no statement time limit, so its COMMIT stays unanswered past the store's patience (5.1 s).
    const lock = await holder(url, `SELECT 1 FROM _resd_changes WHERE resource = 'items' FOR UPDATE`);
    const late = store.transaction(async (tx) => tx.insert("items", row({ title: "Record number latecomer" })), { exclusive: "items" });
    await someoneWaits(url);
    await Bun.sleep(5400);
    // Given up on: its answers went. The lists are built now, in a snapshot the commit is not in.
    await built(store);
    await lock.release();
    await late;
    expect((await expectAsFresh(store, fresh, "number latecomer")).length).toBe(1);
  });

  test("a resource empty at its first search gets lists once it fills (not ten minutes later)", async () => {
    const { store, fresh } = await openPg();
    await store.page("items", query(store, "items", "zzzq"));
    await Bun.sleep(300);
    await store.transaction(async (tx) => { for (const t of titles(2000)) await tx.insert("items", row({ title: t })); });
    await expectAsFresh(store, fresh, "number 1999");
    for (let i = 0; i < 100 && store.searchListBytes() === 0; i++) {
      await store.page("items", query(store, "items", "zzzq"));
      await Bun.sleep(25);
    }
    expect(store.searchListBytes()).toBeGreaterThan(0);
  });

  test("a build keeps to its budget: text of many distinct trigrams is given up once its lists could not be kept", async () => {
    // No database: the index reads rows of random printable ASCII (hashes, tokens, code), as a
    // resource's search texts may be. Each row brings ~190 trigrams no row before it had.
    const budget = 1024 * 1024;
    const lists = new GramLists(budget, () => 0);
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    let read = 0;
    let finished!: () => void;
    const done = new Promise<void>((r) => (finished = r));
    const rss0 = process.memoryUsage().rss;
    let rssPeak = 0;
    async function* rows(): AsyncIterable<TextRow> {
      try {
        for (let id = 1; id <= 20_000; id++) {
          let t = "";
          for (let i = 0; i < 200; i++) t += String.fromCharCode(32 + (rnd() % 95));
          read++;
          if (id % 500 === 0) rssPeak = Math.max(rssPeak, process.memoryUsage().rss - rss0);
          yield { id, t, s: "10:10:" };
        }
      } finally {
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss - rss0);
        finished();
      }
    }
    const index = new PgGramIndex(lists, () => rows(), () => null, budget, () => true);
    expect(index.candidates("r", "abcdef")).toBeNull();
    await done;
    // A list costs LIST_OVERHEAD (160 bytes) besides its ids: 1 MiB holds ~6,500 lists, ~35 rows of
    // this text. The build read far more, holding every list meanwhile.
    const seen = { rowsRead: read, rssGrowthMiB: Math.round(rssPeak / 2 ** 20), budgetMiB: budget / 2 ** 20, kept: lists.heldBytes };
    expect(seen.kept).toBe(0);
    expect(seen.rowsRead).toBeLessThanOrEqual(500);
  });
});

describe("search lists on PostgreSQL: checks that held", () => {
  test("filters, sorts, offsets and totals through the few-candidates path; wildcards, separators and surrogates in terms", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => {
      for (const [i, t] of titles(1500).entries()) await tx.insert("items", row({ title: t, year: i % 7 }));
      for (const t of ["50% off_sale", "back\\slash abc", "emoji \ud83c\udf4e abc", "tab\u001fsep abc", "KELVIN \u212Aelvin abc", "abc"]) await tx.insert("items", row({ title: t, year: 3 }));
    });
    await built(store);
    const extras: Record<string, string>[] = [{}, { filter: "year:3" }, { filter: "year:!3" }, { sort: "year|desc" }, { sort: "year", offset: "5" }, { offset: "3", limit: "4" }];
    for (const extra of extras) {
      for (const t of ["number 12", "umber 14", "abc", "ABC", "\ud83c\udf4e abc", "kelvin", "50% off", "off_sale", "back\\slash", "sep abc", "1499"]) {
        await expectAsFresh(store, fresh, t, "items", extra);
      }
    }
  });

  test("ids past 2^31: the lists are not built (or go), answers stay right", async () => {
    const { store, fresh, url } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(100)) await tx.insert("items", row({ title: t })); });
    await built(store);
    psql(url, `ALTER SEQUENCE "r:items_id_seq" RESTART WITH 3000000000`);
    await store.transaction(async (tx) => tx.insert("items", row({ title: "Record number big one" })));
    expect(store.searchListBytes()).toBe(0);
    for (const t of ["number big", "number 42", "record"]) await expectAsFresh(store, fresh, t);
  });

  test("creates of non-string values in a text field, updates and deleteAll drop the lists; answers stay right", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(300)) await tx.insert("items", row({ title: t })); });
    await built(store);
    await store.transaction(async (tx) => tx.insert("items", row({ title: 1234567 })));
    expect(store.searchListBytes()).toBe(0);
    await expectAsFresh(store, fresh, "1234567");
    await store.transaction(async (tx) => tx.deleteAll("items", null as never));
    for (const t of ["number 12", "1234567"]) await expectAsFresh(store, fresh, t);
  });
});
