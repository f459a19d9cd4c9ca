/**
 * A group of creates on PostgreSQL in one round trip (src/core/store/postgres-tx.ts): its rows are
 * written as literal values in the COMMIT's message, in a transaction opened ahead of the write.
 * - any text comes back exactly as it was sent (quotes, backslashes, what looks like an escape or a
 *   dollar quote, other scripts), and the rows of two resources in one group get their own ids;
 * - the transaction opened ahead does not stay open: it is rolled back when no write comes for a
 *   second, and when the store closes.
 */
import { expect, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { textLit } from "../src/core/store/postgres-dialect";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { psql } from "./helpers/psql";
import { PG, pgStores } from "./helpers/pg-stores";

const { open, databases } = pgStores();

const def = (name: string) => buildDefinition(name, { fields: { title: { type: "text" }, n: { type: "number" } } } as never, null);
const items = def("items");
const notes = def("notes");

async function store(): Promise<{ s: PgStore; url: string }> {
  if (!PG) throw new Error("test/store-postgres-commit-message.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_msg");
  const s = await PgStore.open(url);
  await s.syncSchema([items, notes]);
  open.push(s);
  return { s, url };
}

const row = (title: string, n: number, by: string | null = null): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify({ title, n }), _created: 1700000000 + n, _modified: 1700000000 + n, _created_by: by, _modified_by: by });

const TRICKY = [
  "it's", "''", "\\", "\\'", "E'x'", "a\\'); DROP TABLE \"r:items\"; --", "$$", "$q$ x $q$", "\\x41\\u0041\\n",
  "ünïcödé — 日本語 — 🙂", "line\nbreak\ttab\r", "\"quoted\"", "%_", "{\"json\": [1]}",
];

/** The first page of `resource`, highest n first, as the store answers it (cached or read), with the row ids a kept page places rows by. */
async function page(s: PgStore, resource: typeof items) {
  return (await s.page(resource.name, compileList(s.dialect, resource, parseListParams({ sort: "n|desc", limit: "3" })))).map((r) => [r.uuid, r.data, r.id]);
}

test("a group's creates come back exactly as sent, whatever their text, with the ids of their own resource", async () => {
  const { s, url } = await store();
  // A full first page of each resource kept before the writes: the group's rows sort ahead of its
  // rows, so it is revised (moved) with them, placed by their ids (equal keys within a resource).
  for (const resource of ["items", "notes"]) await s.transaction(async (tx) => {
    for (let i = 0; i < 4; i++) await tx.insert(resource, row("seed", -1));
  });
  expect(await page(s, items)).toHaveLength(3);
  expect(await page(s, notes)).toHaveLength(3);
  // Equal sort keys within a resource: the kept pages place the new rows by their ids alone.
  const rows = TRICKY.map((t, i) => ({ resource: i % 2 ? "notes" : "items", rec: row(t, i % 2, i % 3 ? `u'${i}\\` : null) }));
  // Written at once, so that they share groups (and so the COMMIT's message).
  await Promise.all(rows.map(({ resource, rec }) => s.transaction(async (tx) => tx.insert(resource, rec))));
  // The kept pages were revised with the rows and their ids, not dropped (another store opened on
  // the database below makes this one drop what it keeps: they are read now).
  const memo = s.memoBytes();
  const kept = { items: await page(s, items), notes: await page(s, notes) };
  expect(s.memoBytes()).toBe(memo);
  for (const { resource, rec } of rows) {
    const got = await s.get(resource, rec.uuid);
    expect(got).toMatchObject({ uuid: rec.uuid, data: rec.data, _created: rec._created, _created_by: rec._created_by, _modified_by: rec._modified_by });
    expect(JSON.parse(got!.data).title).toBe(TRICKY[rows.indexOf(rows.find((r) => r.rec === rec)!)]);
  }
  // All in one transaction (one group), so the rows went in the COMMIT's message: had it failed,
  // each write would have run again in a transaction of its own.
  expect(psql(url, `SELECT count(DISTINCT xmin::text) FROM (SELECT xmin, data FROM "r:items" UNION ALL SELECT xmin, data FROM "r:notes") x WHERE data->>'title' <> 'seed'`)).toBe("1");
  // The database holds the same text, and nothing else happened to it.
  expect(psql(url, `SELECT count(*) FROM "r:items"`)).toBe(String(rows.filter((r) => r.resource === "items").length + 4));
  expect(psql(url, `SELECT data->>'title' FROM "r:notes" WHERE uuid = '${rows[5]!.rec.uuid}'`)).toBe(TRICKY[5]);
  // The kept pages, revised with the group's rows, equal a fresh read.
  const fresh = await PgStore.open(url, { cacheMaxBytes: 0 });
  open.push(fresh);
  await fresh.syncSchema([items, notes]);
  for (const d of [items, notes]) {
    expect(kept[d.name as "items"]).toHaveLength(3);
    expect(kept[d.name as "items"]).toEqual(await page(fresh, d));
  }
});

test("a text literal means the same to PostgreSQL whatever standard_conforming_strings says; a NUL is refused", async () => {
  const { url } = await store();
  for (const setting of ["on", "off"]) {
    for (const t of TRICKY.filter((x) => !x.includes("\n") && !x.includes("\r"))) {
      expect(psql(url, `SET standard_conforming_strings = ${setting}; SELECT ${textLit(t)} = convert_from(decode('${Buffer.from(t).toString("base64")}', 'base64'), 'UTF8')`)).toBe("t");
    }
  }
  expect(() => textLit("a\0b")).toThrow(/NUL/);
});

/** This database's resd connections that sit in an open transaction. */
const openTransactions = (url: string) =>
  Number(psql(url, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`));

test("the transaction opened ahead for the next write is rolled back when none comes for a second, and when the store closes", async () => {
  const { s, url } = await store();
  await s.transaction(async (tx) => tx.insert("items", row("first", 1)));
  // One is open, ready for the next write: it holds an id, which holds back PostgreSQL's cleanup.
  expect(openTransactions(url)).toBe(1);
  await Bun.sleep(1500);
  expect(openTransactions(url)).toBe(0);
  // A write after the pause opens its own, and the next one ahead.
  await s.transaction(async (tx) => tx.insert("items", row("second", 2)));
  expect(openTransactions(url)).toBe(1);
  await s.close();
  open.splice(open.indexOf(s), 1);
  expect(openTransactions(url)).toBe(0);
  expect(psql(url, `SELECT string_agg(data->>'title', ',' ORDER BY id) FROM "r:items"`)).toBe("first,second");
});

test("where the server ends idle transactions sooner (idle_in_transaction_session_timeout), the one opened ahead waits less: a write after a pause still works", async () => {
  if (!PG) throw new Error("needs RESD_TEST_POSTGRES_URL");
  const url = databases.create("resd_idle");
  psql(url, `ALTER DATABASE ${new URL(url).pathname.slice(1)} SET idle_in_transaction_session_timeout = '400ms'`);
  const s = await PgStore.open(url);
  open.push(s);
  await s.syncSchema([items]);
  await s.transaction(async (tx) => tx.insert("items", row("first", 1)));
  // Rolled back after a quarter of the server's limit.
  await Bun.sleep(250);
  expect(openTransactions(url)).toBe(0);
  await s.transaction(async (tx) => tx.insert("items", row("second", 2)));
  // Past the server's limit: a transaction still waiting then would have lost its connection.
  await Bun.sleep(600);
  await s.transaction(async (tx) => tx.insert("items", row("third", 3)));
  expect(psql(url, `SELECT string_agg(data->>'title', ',' ORDER BY id) FROM "r:items"`)).toBe("first,second,third");
});
