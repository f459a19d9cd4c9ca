/**
 * What another process's commits that wrote no records leave in this instance's caches: its kept
 * pages and search lists stay, and only what depends on anything (sessions, by the store's version)
 * is read again.
 * - Opening the database runs the internal migrations and the definitions' sync under the schema
 *   lock: when neither changed anything, nothing is told (every CLI command and every instance's
 *   start used to drop every other instance's caches, and a search-list build under way with them).
 * - A session written on another instance (touched, signed out, purged) is told as a commit of no
 *   records.
 */
import { expect, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { PG, pgStores } from "./helpers/pg-stores";

const { open, databases } = pgStores();

const items = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" } }, index: ["year"] } as never, null);
const changed = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" }, note: { type: "text" } }, index: ["year", "note"] } as never, null);
const row = (title: string, year: number): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify({ title, year }), _created: 1000, _modified: 1000, _created_by: null, _modified_by: null });

/** A store with 2,000 items, a page of them kept and its search lists built; `reads` counts its list queries. */
async function keeping(): Promise<{ store: PgStore; url: string; reads: () => number; page: () => Promise<string[]> }> {
  if (!PG) throw new Error("test/store-postgres-quiet-notices.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_quiet");
  const store = await PgStore.open(url);
  open.push(store);
  await store.syncSchema([items]);
  await store.transaction(async (tx) => {
    for (let i = 0; i < 2000; i++) await tx.insert("items", row(`Record number ${i}`, 1900 + (i % 100)));
  });
  let reads = 0;
  const target = store as unknown as { listQuery: (...a: unknown[]) => Promise<unknown> };
  const real = target.listQuery.bind(store);
  target.listQuery = (...a) => {
    reads++;
    return real(...a);
  };
  const q = compileList(store.dialect, items, parseListParams({ sort: "year|desc", limit: "10" }));
  const page = async () => (await store.page("items", q)).map((r) => JSON.parse(r.data).title as string);
  // The search lists are built when a search asks for them.
  await store.page("items", compileList(store.dialect, items, parseListParams({ search: "number 1234", limit: "10" })));
  for (let i = 0; i < 200 && store.searchListBytes() === 0; i++) await Bun.sleep(25);
  expect(store.searchListBytes()).toBeGreaterThan(0);
  await page();
  const before = reads;
  await page();
  expect(reads).toBe(before);
  return { store, url, reads: () => reads, page };
}

/** Long enough for a notice, and for the snapshot watch's two looks (it counts commits nobody told of). */
const settle = () => Bun.sleep(2500);

test("another process that opens the database and syncs the same definitions leaves the kept pages and search lists; one that changes a definition drops the pages", async () => {
  const { url, store, reads, page } = await keeping();
  const first = await page();
  const kept = reads();
  const lists = store.searchListBytes();
  // A CLI command or a new instance: migrations and the definitions' sync, nothing to change.
  const cli = await PgStore.open(url);
  await cli.syncSchema([items]);
  await cli.close();
  await settle();
  expect(await page()).toEqual(first);
  expect(reads()).toBe(kept);
  expect(store.searchListBytes()).toBe(lists);
  // A definition that changes the table (a new index): this one's answers may mean something else now.
  const other = await PgStore.open(url);
  open.push(other);
  await other.syncSchema([changed]);
  const deadline = Date.now() + 5000;
  while (reads() === kept && Date.now() < deadline) {
    await page();
    await Bun.sleep(20);
  }
  expect(reads()).toBeGreaterThan(kept);
});

test("a session written on another instance moves this one's version (what depends on sessions is read again) and leaves its kept pages and search lists", async () => {
  const { url, store, reads, page } = await keeping();
  const other = await PgStore.open(url);
  open.push(other);
  await other.syncSchema([items]);
  const session = { id: "s".repeat(43), user: "u1", pfp: "p", created: Date.now(), seen: Date.now(), expires: Date.now() + 60_000 };
  await other.access.putSession(session);
  expect(await store.access.getSession(session.id)).toEqual(session);
  await settle();
  const kept = reads();
  const lists = store.searchListBytes();
  for (const write of [() => other.access.touchSession(session.id, session.seen + 1, session.expires + 1), () => other.access.deleteSession(session.id)]) {
    const version = store.version();
    await write();
    const deadline = Date.now() + 5000;
    while (store.version() === version && Date.now() < deadline) await Bun.sleep(10);
    expect(store.version()).not.toBe(version);
    await page();
  }
  expect(await store.access.getSession(session.id)).toBeNull();
  await settle();
  await page();
  expect(reads()).toBe(kept);
  expect(store.searchListBytes()).toBe(lists);
});
