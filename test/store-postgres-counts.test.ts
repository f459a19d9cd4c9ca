/**
 * Maintained counts on PostgreSQL (postgres-counts.ts): the triggers append one delta per key and
 * statement, and the counts plus the deltas equal a recount of the table after any mix of grouped
 * creates, many rows in one statement, updates that change a key or not, deletes, rolled-back
 * transactions and deletes of everything. A database whose counts were kept by the per-row
 * trigger of earlier versions is moved to the statement triggers without a recount.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { PgStore } from "../src/core/store/postgres";
import { buildDefinition } from "../src/core/definitions/load";
import { countKey } from "../src/core/definitions/derived";
import { pgCountKey } from "../src/core/store/postgres-counts";
import type { StoredRecord } from "../src/core/store/types";
import { databasesOn, psql } from "./helpers/psql";

const PG = process.env.RESD_TEST_POSTGRES_URL || process.env.RESD_TEST_DATABASE_URL || "";
const databases = databasesOn(PG);
const open: PgStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
afterAll(() => databases.dropAll());

const def = buildDefinition("items", {
  fields: { status: { type: "select", options: { a: "A", b: "B", "it's": "C" } }, flag: { type: "boolean" }, n: { type: "number" } },
  index: ["status", "flag,n"],
} as never, null);

async function store(url?: string): Promise<PgStore> {
  if (!PG) throw new Error("test/store-postgres-counts.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const s = await PgStore.open(url ?? databases.create("resd_counts"), { cacheMaxBytes: 0 });
  await s.syncSchema([def]);
  open.push(s);
  return s;
}

/** A deterministic generator, so that a failure can be replayed. */
function rng(seed: number) {
  return () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
}

/** The counts as kept (counts plus deltas not folded yet), every key that is not zero. */
async function kept(s: PgStore): Promise<Record<string, number>> {
  const rows = await s.query<{ key: string; n: number }>(`SELECT key, sum(n)::float8 AS n FROM (
      SELECT key, n FROM _resd_counts WHERE resource = 'items' UNION ALL SELECT key, d FROM _resd_count_deltas WHERE resource = 'items') AS a
    GROUP BY key HAVING sum(n) <> 0 ORDER BY key`);
  return Object.fromEntries(rows.map((r) => [r.key, r.n]));
}

/** The counts worked out here from the rows themselves, as countKey() spells each key. */
async function recount(s: PgStore): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const add = (key: string) => (out[pgCountKey(key)] = (out[pgCountKey(key)] ?? 0) + 1);
  for (const { data } of await s.query<{ data: string }>(`SELECT data::text AS data FROM "r:items"`)) {
    const d = JSON.parse(data) as { status?: string; flag?: boolean };
    add("");
    add(countKey("status", d.status ?? null));
    add(countKey("flag", d.flag === undefined ? null : d.flag ? 1 : 0));
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

test("counts plus deltas equal a recount after random grouped transactions, statements of many rows and deletes of everything", async () => {
  const s = await store();
  const rand = rng(7);
  const pick = <T,>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  let next = 0;
  const data = () => JSON.stringify({ ...(rand() < 0.9 ? { status: pick(["a", "b", "it's", ""]) } : {}), ...(rand() < 0.8 ? { flag: rand() < 0.5 } : {}), n: Math.floor(rand() * 5) });
  const rec = (uuid: string): StoredRecord => ({ uuid, data: data(), _created: 1, _modified: 1, _created_by: null, _modified_by: null });
  let live: string[] = [];
  for (let round = 0; round < 30; round++) {
    // Transactions at once share groups (one INSERT of many rows per group).
    const jobs: Promise<unknown>[] = Array.from({ length: 8 }, () => s.transaction(async (tx) => {
      for (let k = 0; k < 4; k++) {
        const r = rand();
        if (r < 0.5 || !live.length) await tx.insert("items", rec(`u${next++}`));
        // Half of the updates keep every counted key (only `n` moves): their deltas meet at zero.
        else if (r < 0.8) await tx.update("items", rand() < 0.5 ? rec(pick(live)) : { ...rec(pick(live)), data: JSON.stringify({ n: next }) });
        else await tx.delete("items", pick(live));
      }
      // Some fail after writing: their writes roll back, the rest of the group commits.
      if (rand() < 0.2) throw new Error("refused");
    }).catch(() => undefined));
    if (round % 7 === 3) jobs.push(s.transaction((tx) => tx.insertMany("items", Array.from({ length: 40 }, () => rec(`m${next++}`)))));
    if (round === 20) jobs.push(s.transaction((tx) => tx.deleteAll("items", null)));
    await Promise.all(jobs);
    live = (await s.query<{ uuid: string }>(`SELECT uuid FROM "r:items"`)).map((r) => r.uuid);
    expect({ round, counts: await kept(s) }).toEqual({ round, counts: await recount(s) });
  }
  expect(live.length).toBeGreaterThan(50);
  // A statement appends a delta per key it moved, not one per row and key: 100 rows, 3 keys.
  const r = Bun.spawnSync(["psql", s.url, "-qXtA", "-c", "BEGIN",
    "-c", `INSERT INTO "r:items" (uuid, data, _created, _modified) SELECT 'x' || i, '{"status":"a","flag":true}', 1, 1 FROM generate_series(1, 100) AS i`,
    "-c", "SELECT count(*) || ' ' || sum(d) FROM _resd_count_deltas WHERE xmin::text = pg_current_xact_id()::text", "-c", "ROLLBACK"], { stdout: "pipe", stderr: "pipe" });
  expect(r.stderr.toString()).toBe("");
  expect(r.stdout.toString().trim()).toBe("3 300");
  expect(await kept(s)).toEqual(await recount(s));
}, 120_000);

test("a database counted by the per-row trigger of earlier versions moves to the statement triggers without a recount", async () => {
  const url = databases.create("resd_counts_v1");
  const first = await store(url);
  for (let i = 0; i < 20; i++) await first.transaction((tx) => tx.insert("items", { uuid: `a${i}`, data: JSON.stringify({ status: i % 2 ? "a" : "b", flag: true }), _created: 1, _modified: 1, _created_by: null, _modified_by: null }));
  await first.close();
  open.splice(open.indexOf(first), 1);
  // What an earlier version left: its spec, and one trigger per row that appends a delta per key.
  const [fn] = psql(url, `SELECT tgname FROM pg_trigger WHERE tgrelid = '"r:items"'::regclass AND NOT tgisinternal AND tgname LIKE '%\\_i'`).split("\n");
  const base = fn!.slice(0, -2);
  for (const op of ["i", "u", "d"]) psql(url, `DROP TRIGGER "${base}_${op}" ON "r:items"`);
  psql(url, `CREATE OR REPLACE FUNCTION "${base}_v1"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      INSERT INTO _resd_count_deltas (resource, key, d) VALUES ('items', '', 1),
        ('items', 'status' || chr(31) || '''' || (NEW.data->>'status') || '''', 1), ('items', 'flag' || chr(31) || '1', 1);
      RETURN NULL; END $$`);
  psql(url, `CREATE TRIGGER "${base}" AFTER INSERT ON "r:items" FOR EACH ROW EXECUTE FUNCTION "${base}_v1"()`);
  psql(url, `UPDATE _resd_count_specs SET spec = '{"v":1,"fields":["status","flag"]}' WHERE resource = 'items'`);
  psql(url, `INSERT INTO "r:items" (uuid, data, _created, _modified) VALUES ('old', '{"status":"a","flag":true}', 1, 1)`);
  // Counts that a recount would change, to tell whether one ran.
  psql(url, `INSERT INTO _resd_counts (resource, key, n) VALUES ('items', 'status' || chr(31) || '''ghost''', 5)`);
  const s = await store(url);
  const triggers = psql(url, `SELECT tgname || ' ' || (tgtype & 1 = 0)::text FROM pg_trigger WHERE tgrelid = '"r:items"'::regclass AND NOT tgisinternal ORDER BY tgname`);
  // Three statement triggers (tgtype bit 0 clear: FOR EACH STATEMENT), the row trigger gone.
  expect(triggers.split("\n")).toEqual([`${base}_d true`, `${base}_i true`, `${base}_u true`]);
  expect(JSON.parse(psql(url, "SELECT spec FROM _resd_count_specs WHERE resource = 'items'"))).toEqual({ v: 2, fields: ["status", "flag"] });
  const ghost = pgCountKey(countKey("status", "ghost"));
  const counts = await kept(s);
  expect(counts[ghost]).toBe(5);
  delete counts[ghost];
  expect(counts).toEqual(await recount(s));
  await s.transaction((tx) => tx.insert("items", { uuid: "new", data: JSON.stringify({ status: "b" }), _created: 1, _modified: 1, _created_by: null, _modified_by: null }));
  await s.transaction((tx) => tx.delete("items", "old"));
  const after = await kept(s);
  delete after[ghost];
  expect(after).toEqual(await recount(s));
});
