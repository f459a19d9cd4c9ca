/**
 * Two PostgreSQL instances on one database: a commit of this instance whose rows took their ids
 * before another instance's commit that this instance has since heard of (and read) is not placed
 * among the cached pages as the newest. Ids are taken at INSERT, not at COMMIT; the other
 * instance's rows may sit above this one's in every page sorted with the row id last.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const open: PgStore[] = [];
const databases: string[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
afterAll(() => {
  for (const name of databases) psql(PG, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

const items = buildDefinition("items", { fields: { title: { type: "text" }, year: { type: "number" } } } as never, null);
const row = (title: string, year: number): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify({ title, year }), _created: 1000, _modified: 1000, _created_by: null, _modified_by: null });

/** Two instances (`a`, `b`) and a store that keeps nothing, on a database of their own. */
async function instances(): Promise<{ a: PgStore; b: PgStore; fresh: PgStore }> {
  if (!PG) throw new Error("test/store-postgres-instances-order.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const name = `resd_inst_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  psql(PG, `CREATE DATABASE ${name}`);
  databases.push(name);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const a = await PgStore.open(url.toString());
  await a.syncSchema([items]);
  const b = await PgStore.open(url.toString());
  await b.syncSchema([items]);
  const fresh = await PgStore.open(url.toString(), { cacheMaxBytes: 0 });
  await fresh.syncSchema([items]);
  open.push(fresh, b, a);
  return { a, b, fresh };
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
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let inserted = () => {};
    const took = new Promise<void>((r) => (inserted = r));
    const early = row("same", 2000);
    const writing = b.transaction(async (tx) => {
      await tx.insert("items", early);
      // Read back inside the transaction: the row is written (its id taken) before B waits.
      expect(await tx.get("items", early.uuid)).not.toBeNull();
      inserted();
      await held;
    });
    await took;
    // A commits a row with a higher id; B hears of it, and caches a page that holds it.
    const before = b.version();
    const late = row("same", 2000);
    await a.transaction(async (tx) => tx.insert("items", late));
    await until(() => b.version() !== before, "B to hear of A's commit");
    const seen = await titles(b, sort);
    expect(seen).toEqual(await titles(fresh, sort));
    release();
    await writing;
    const want = (await fresh.page("items", compileList(fresh.dialect, items, parseListParams({ sort, limit: "5" })))).map((r) => r.uuid);
    const got = (await b.page("items", compileList(b.dialect, items, parseListParams({ sort, limit: "5" })))).map((r) => r.uuid);
    expect(got).toEqual(want);
    // What was asked: B's row sorts after A's later one wherever the row id decides.
    if (sort !== "title|text|asc,year|desc") expect(want.indexOf(late.uuid)).toBeLessThan(want.indexOf(early.uuid));
  });
}
