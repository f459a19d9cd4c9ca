/**
 * PostgreSQL instances tell each other of their commits only when another resd process is there
 * (postgres-presence.ts): a commit asks as it commits. A process that arrives while a commit that
 * asked before it still runs keeps nothing until that commit has ended.
 */
import { expect, test } from "bun:test";
import { SQL } from "bun";
import { PgStore } from "../src/core/store/postgres";
import { Presence } from "../src/core/store/postgres-presence";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";
import type { StoredRecord } from "../src/core/store/types";
import { PG, pgStores } from "./helpers/pg-stores";

const { open, databases } = pgStores();

const items = buildDefinition("items", { fields: { title: { type: "text" } } } as never, null);
const row = (title: string, at = 1000): StoredRecord =>
  ({ uuid: crypto.randomUUID(), data: JSON.stringify({ title }), _created: at, _modified: at, _created_by: null, _modified_by: null });
const newest = (store: PgStore) =>
  store.page("items", compileList(store.dialect, items, parseListParams({ sort: "_created|desc", limit: "3" }))).then((rows) => rows.map((r) => JSON.parse(r.data).title as string));

async function database(): Promise<string> {
  if (!PG) throw new Error("test/store-postgres-presence.test.ts needs a PostgreSQL server: set RESD_TEST_POSTGRES_URL (bash scripts/postgres.sh start)");
  const url = databases.create("resd_presence");
  const setup = await PgStore.open(url);
  await setup.syncSchema([items]);
  await setup.close();
  return url;
}

/** A connection of a program that is not resd, hearing the commits channel. */
async function eavesdrop(url: string) {
  const sql = new SQL(url, { max: 1, connection: { application_name: "presence-test" } });
  const heard: string[] = [];
  const listening = await sql.listen("resd_commits", (payload) => heard.push(payload));
  return { heard, close: async () => { await listening.unlisten(); await sql.close(); } };
}

const create = (store: PgStore, title: string) => store.transaction(async (tx) => void (await tx.insert("items", row(title))));

test("once another process was seen, the commits of the next second tell without asking; then they ask again", () => {
  const question = "SELECT EXISTS (…) AS others";
  const p = new Presence(question);
  expect(p.statement(0)).toBe(question);
  p.answered(false, 0);
  expect(p.statement(10)).toBe(question);
  p.answered(true, 100);
  expect(p.statement(101)).toBeNull();
  expect(p.statement(1099)).toBeNull();
  expect(p.statement(1100)).toBe(question);
  // Behind a pooler there is nothing to ask: every commit tells.
  expect(new Presence().statement(0)).toBeNull();
});

test("alone, an instance tells no one of its commits; with another resd process there it does, and stops once that one has gone", async () => {
  const url = await database();
  const ear = await eavesdrop(url);
  try {
    const a = await PgStore.open(url);
    open.push(a);
    await a.syncSchema([items]);
    // Changes of the schema are told to anyone listening (they are made under a lock, rarely): only commits of records count here.
    await Bun.sleep(200);
    ear.heard.length = 0;
    await create(a, "alone");
    await Bun.sleep(300);
    expect(ear.heard).toEqual([]);

    const b = await PgStore.open(url);
    await b.syncSchema([items]);
    expect(await newest(b)).toEqual(["alone"]);
    await Bun.sleep(200);
    ear.heard.length = 0;
    await create(a, "with b");
    for (let i = 0; i < 40 && !ear.heard.length; i++) await Bun.sleep(50);
    expect(ear.heard.length).toBeGreaterThan(0);
    // b kept its page and was told of the create in time to revise it.
    expect(await newest(b)).toEqual(["with b", "alone"]);

    await b.close();
    // b's connections leave pg_stat_activity as their backends exit.
    let unheard = false;
    for (let i = 0; i < 30 && !unheard; i++) {
      const before = ear.heard.length;
      await create(a, `after b ${i}`);
      await Bun.sleep(150);
      unheard = ear.heard.length === before;
    }
    expect(unheard).toBe(true);
  } finally {
    await ear.close();
  }
});

test("a process arriving while another's commit that found no one is still running keeps nothing until it has ended", async () => {
  const url = await database();
  // A resd process's transaction that asked whether anyone was there before b came: it will commit without a notice.
  const other = new SQL(url, { max: 1, connection: { application_name: "resd/elsewhere/1/1" } });
  const tx = await other.reserve();
  try {
    await tx.unsafe("BEGIN");
    await tx.unsafe(`INSERT INTO "r:items" (uuid, data, _created, _modified) VALUES ($1, $2::text::json, 5000, 5000)`, [crypto.randomUUID(), JSON.stringify({ title: "unannounced" })]);

    const b = await PgStore.open(url);
    open.push(b);
    await b.syncSchema([items]);
    await create(b, "b's own");
    let ready = false;
    void b.ready(60_000).then(() => (ready = true));
    expect(await newest(b)).toEqual(["b's own"]);
    await Bun.sleep(300);
    expect(ready).toBe(false);

    await tx.unsafe("COMMIT");
    // Read at once: no notice came, and b's watch of the marks is a second away.
    expect(await newest(b)).toEqual(["unannounced", "b's own"]);
    await b.ready(5000);
    expect(ready).toBe(true);
    // Warm: its pages are kept again, and its own commits revise them.
    await create(b, "later");
    expect(await newest(b)).toEqual(["unannounced", "later", "b's own"]);
  } finally {
    tx.release();
    await other.close();
  }
});
