/**
 * Search on PostgreSQL from kept trigram lists (src/core/store/postgres-gram-index.ts): every answer
 * must equal the trigram index's, on a store that keeps nothing, after each kind of write, with
 * text PostgreSQL folds differently from ASCII, with writes running beside a build, and after a
 * write of another instance.
 *
 * Needs a PostgreSQL server: RESD_TEST_POSTGRES_URL (else RESD_TEST_DATABASE_URL), e.g.
 * postgres://postgres@127.0.0.1:55432/postgres. Without one the file fails (it does not skip).
 */
import { afterAll, afterEach, describe, expect, spyOn, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { foldForSearch, WARM_ROWS } from "../src/core/store/postgres-gram-index";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { databasesOn, psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const open: PgStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
const databases = databasesOn(PG);
afterAll(() => {
  databases.dropAll();
});

const items = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" } } } as never, null);
// A list field makes the search text a function's (resd_search_text), which JavaScript does not write out.
const notes = buildDefinition("notes", { fields: { name: { type: "text" }, tags: { type: "select", multi: true, options: { a: "A", b: "B" } } } } as never, null);

let n = 0;
const row = (data: Record<string, unknown>): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify(data), _created: 1000 + ++n, _modified: 1000 + n, _created_by: null, _modified_by: null });

/** A database of its own with `items` and `notes`; `fresh` is a store on it that keeps nothing (no lists either). */
async function openPg(): Promise<{ store: PgStore; fresh: PgStore; url: string }> {
  if (!PG) throw new Error("test/store-postgres-search-lists.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_gram");
  const store = await PgStore.open(url);
  await store.syncSchema([items, notes]);
  const fresh = await PgStore.open(url, { cacheMaxBytes: 0 });
  await fresh.syncSchema([items, notes]);
  open.push(fresh, store);
  return { store, fresh, url: url };
}

const query = (store: PgStore, resource: "items" | "notes", search: string, limit = "50") =>
  compileList(store.dialect, resource === "items" ? items : notes, parseListParams({ search, limit }));

/** The page and total of a search, from the store and from the store that keeps nothing. */
async function expectAsFresh(store: PgStore, fresh: PgStore, search: string, resource: "items" | "notes" = "items"): Promise<string[]> {
  const c = query(store, resource, search);
  const got = { search, rows: (await store.page(resource, c)).map((r) => r.uuid), total: await store.count(resource, c) };
  const want = { search, rows: (await fresh.page(resource, c)).map((r) => r.uuid), total: await fresh.count(resource, c) };
  expect(got).toEqual(want);
  return got.rows;
}

/** Asks one search (which starts a build) and waits until the store holds lists. */
async function built(store: PgStore, resource: "items" | "notes" = "items"): Promise<void> {
  await store.page(resource, query(store, resource, "zzzq"));
  for (let i = 0; i < 200 && store.searchListBytes() === 0; i++) await Bun.sleep(25);
  expect(store.searchListBytes()).toBeGreaterThan(0);
}

const titles = (k: number) => Array.from({ length: k }, (_, i) => `Record number ${i}`);

describe("search from kept trigram lists on PostgreSQL", () => {
  test("answers equal the trigram index's after a build, creates (appended), updates, deletes and a schema change", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(3000)) await tx.insert("items", row({ title: t, year: 1 })); });
    await built(store);
    const terms = ["number 1234", "number 77", "2999", "ber 5", "RECORD NUMBER 42", "nothing here", "umber 1", "cord"];
    for (const t of terms) await expectAsFresh(store, fresh, t);

    // Creates are appended to the lists: each is found at once, by a trigram only it holds too.
    const held = store.searchListBytes();
    for (const t of ["Record number 12345 qqx", "Quixotic zebra 4242", "record NUMBER 77 Qqx"]) {
      await store.transaction(async (tx) => tx.insert("items", row({ title: t })));
      expect(store.searchListBytes()).toBeGreaterThanOrEqual(held);
      for (const s of ["qqx", "zebra 4242", "number 77", "12345", "QUIXOTIC"]) await expectAsFresh(store, fresh, s);
    }
    expect((await expectAsFresh(store, fresh, "qqx")).length).toBe(2);
    // Several creates in one commit, one of them without a title.
    await store.transaction(async (tx) => {
      await tx.insert("items", row({ title: "Vwxyz one" }));
      await tx.insert("items", row({ year: 5 }));
      await tx.insert("items", row({ title: "Vwxyz two", year: null }));
    });
    expect((await expectAsFresh(store, fresh, "vwxyz")).length).toBe(2);

    // An update or delete drops the resource's lists; the answers stay right, and lists come back.
    const [first] = await store.page("items", query(store, "items", "number 2999"));
    await store.transaction(async (tx) => tx.update("items", { ...first, data: JSON.stringify({ title: "Renamed Ploughshare" }), _modified: 9999 }));
    expect(store.searchListBytes()).toBe(0);
    for (const t of ["number 2999", "ploughshare", "qqx"]) await expectAsFresh(store, fresh, t);
    const [gone] = await store.page("items", query(store, "items", "zebra 4242"));
    await store.transaction(async (tx) => tx.delete("items", gone.uuid));
    expect((await expectAsFresh(store, fresh, "zebra 4242")).length).toBe(0);

    // A schema change drops the lists too (on a second instance: this one rebuilds only after a while).
    const second = await PgStore.open(fresh.url);
    open.push(second);
    await second.syncSchema([items, notes]);
    await built(second);
    await second.syncSchema([buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" }, extra: { type: "text" } } } as never, null), notes]);
    expect(second.searchListBytes()).toBe(0);
    for (const t of terms) await expectAsFresh(second, fresh, t);
  });

  test("text PostgreSQL lowers to ASCII (KELVIN SIGN, dotted I, fullwidth and accented letters) is found as ILIKE finds it, built and appended", async () => {
    const { store, fresh } = await openPg();
    const odd = ["\u212Aelvin scale", "\u0130stanbul", "ISTANBUL", "caf\u00e9 Cr\u00e8me", "\uff21\uff22\uff23 wide", "stra\u00dfe", "\ud83c\udf4e apple", "Mixed \u212Aelvin \u0130nn"];
    await store.transaction(async (tx) => {
      for (const t of titles(500)) await tx.insert("items", row({ title: t }));
      for (const t of odd) await tx.insert("items", row({ title: t }));
    });
    await built(store);
    const terms = ["kelvin", "KELVIN", "istanbul", "\u0130stanbul", "café", "CAFÉ", "crème", "abc", "\uff41\uff42\uff43", "strasse", "straße", "apple", "inn", "elvin sc"];
    const before = await Promise.all(terms.map((t) => expectAsFresh(store, fresh, t)));
    // The same texts again, appended to the kept lists this time.
    for (const t of odd) await store.transaction(async (tx) => tx.insert("items", row({ title: `${t} again` })));
    expect(store.searchListBytes()).toBeGreaterThan(0);
    for (const [i, t] of terms.entries()) expect((await expectAsFresh(store, fresh, t)).length).toBeGreaterThanOrEqual(before[i].length);
    expect((await expectAsFresh(store, fresh, "kelvin")).length).toBeGreaterThan(0);
  });

  test("folding: characters are lowered one at a time, to one character", () => {
    expect(foldForSearch("ABC def")).toBe("abc def");
    expect(foldForSearch("\u212Aelvin")).toBe("kelvin");
    expect(foldForSearch("\u0130stanbul")).toBe("istanbul");
    expect(foldForSearch("\ud83c\udf4e X")).toBe("\ud83c\udf4e x");
  });

  test("a resource whose search text JavaScript cannot write out: creates drop its lists, answers stay right", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => { for (let i = 0; i < 300; i++) await tx.insert("notes", row({ name: `Note ${i}`, tags: i % 2 ? ["a"] : [] })); });
    await built(store, "notes");
    await expectAsFresh(store, fresh, "note 123", "notes");
    await store.transaction(async (tx) => tx.insert("notes", row({ name: "Note 123 second", tags: ["b"] })));
    expect(store.searchListBytes()).toBe(0);
    expect((await expectAsFresh(store, fresh, "note 123", "notes")).length).toBe(2);
  });

  test("creates beside a build and searches beside both: every search of a created title finds it, and kept lists hold every record", async () => {
    const { store, fresh } = await openPg();
    await store.transaction(async (tx) => tx.insertMany("items", titles(50_000).map((t) => row({ title: t }))));
    let k = 0;
    let started = false;
    const writer = async () => {
      for (let i = 0; i < 30; i++) {
        const title = `Fresh ${String(++k).padStart(3, "0")}x${crypto.randomUUID().slice(0, 6)}`;
        await store.transaction(async (tx) => tx.insert("items", row({ title })));
        // The writer has heard of its create: a search finds it.
        const found = await store.page("items", query(store, "items", title));
        expect({ title, found: found.length }).toEqual({ title, found: 1 });
        // The build starts (with a search) once creates are landing, and reads while more land.
        if (k >= 6 && !started) {
          started = true;
          await store.page("items", query(store, "items", "number 42"));
        }
      }
    };
    await Promise.all([writer(), writer(), writer()]);
    // A build that saw commits it could not account for is not kept; one that is must hold them all.
    for (const t of ["fresh 0", "fresh 01", "fresh 07", "number 49999", "number 4", "resh"]) await expectAsFresh(store, fresh, t);
    const all = await fresh.page("items", compileList(store.dialect, items, parseListParams({ search: "fresh", limit: "100" })));
    expect(all.length).toBe(90);
    for (const r of all) {
      const title = (JSON.parse(r.data) as { title: string }).title;
      expect((await store.page("items", query(store, "items", title.toUpperCase()))).map((x) => x.uuid)).toEqual([r.uuid]);
    }
  });

  test("a server's start builds the lists of resources of 10,000 records or more, before any search; closing stops a build quietly", async () => {
    const { store, fresh, url } = await openPg();
    await store.transaction(async (tx) => tx.insertMany("items", titles(WARM_ROWS + 2000).map((t) => row({ title: t }))));
    await store.transaction(async (tx) => tx.insertMany("notes", Array.from({ length: 50 }, (_, i) => row({ name: `Note ${i}` }))));
    psql(url, "ANALYZE");
    // A second instance starts as a server does: no search has been asked there.
    const server = await PgStore.open(url);
    open.push(server);
    await server.syncSchema([items, notes]);
    expect(server.searchListBytes()).toBe(0);
    server.warmSearch();
    for (let i = 0; i < 400 && server.searchListBytes() === 0; i++) await Bun.sleep(25);
    expect(server.searchListBytes()).toBeGreaterThan(0);
    for (const t of ["number 11999", "number 4", "note 7"]) await expectAsFresh(server, fresh, t);
    // notes (50 records) got no lists: its creates find none to append to, and drop none.
    await server.transaction(async (tx) => tx.insert("notes", row({ name: "Note 7b" })));
    expect(server.searchListBytes()).toBeGreaterThan(0);
    await expectAsFresh(server, fresh, "note 7", "notes");

    // A third one closes while its start's build reads: close waits for the cursor, says nothing.
    const errors = spyOn(console, "error");
    try {
      const leaving = await PgStore.open(url);
      await leaving.syncSchema([items, notes]);
      leaving.warmSearch();
      await Bun.sleep(30);
      const t0 = performance.now();
      await leaving.close();
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
    }
  });

  test("a create by another instance is found by this one's next search (its notice drops the lists)", async () => {
    const { store, fresh, url } = await openPg();
    await store.transaction(async (tx) => { for (const t of titles(2000)) await tx.insert("items", row({ title: t })); });
    await built(store);
    const other = await PgStore.open(url);
    open.push(other);
    await other.syncSchema([items, notes]);
    await other.transaction(async (tx) => tx.insert("items", row({ title: "Elsewhere 31337" })));
    let found: StoredRecord[] = [];
    for (let i = 0; i < 100 && !found.length; i++) {
      found = await store.page("items", query(store, "items", "31337"));
      if (!found.length) await Bun.sleep(20);
    }
    expect(found.length).toBe(1);
    await expectAsFresh(store, fresh, "elsewhere");
  });
});
