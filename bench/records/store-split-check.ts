/**
 * A quick check of the SQLite store's hot paths, in process (issue 32: sqlite.ts split into parts,
 * no change of speed allowed). A store on a temp file with 50,000 records, then:
 *   (a) 200,000 store.get of random uuids (the record cache holds most after the first pass);
 *   (b) 20,000 store.page, limit 20, at random offsets over the whole list (deep pages go to the
 *       read workers), and 20,000 at random offsets below 1,000 (answered in place, then remembered);
 *   (c) 5,000 single-record inserts, each in its own store.transaction, 8 at a time (group commit).
 *
 *   bun bench/records/store-split-check.ts
 *
 * To measure another checkout, copy this file and point STORE_SRC at that checkout's src folder:
 *   STORE_SRC=/tmp/before/src bun /tmp/store-split-check.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const src = process.env.STORE_SRC ? resolve(process.env.STORE_SRC) : resolve(import.meta.dir, "../../src");
const { SqliteStore } = await import(`${src}/core/store/sqlite.ts`);
const { compileList } = await import(`${src}/core/query/compile.ts`);
const { parseListParams } = await import(`${src}/core/query/parse.ts`);
const { buildDefinition } = await import(`${src}/core/definitions/load.ts`);

const RECORDS = 50_000;
const GETS = 200_000;
const PAGES = 20_000;
const INSERTS = 5_000;
const CONCURRENT = 8;

// A fixed seed: every run (before and after) reads the same uuids and offsets.
let seed = 20261127;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const def = buildDefinition("items", {
  fields: { title: { type: "text" }, status: { type: "select", options: { new: "New", open: "Open", done: "Done" } }, year: { type: "number" } },
  index: ["status,year"],
}, null);
let made = 0;
const record = () => {
  const i = made++;
  const data = JSON.stringify({ title: `item ${i} ${rand().toString(36).slice(2, 8)}`, status: ["new", "open", "done"][i % 3], year: 1990 + (i % 30) });
  return { uuid: crypto.randomUUID(), data, _created: 1_700_000_000 + i, _modified: 1_700_000_000 + i, _created_by: null, _modified_by: null };
};

const dir = mkdtempSync(join(tmpdir(), "resd-split-check-"));
const store = new SqliteStore(join(dir, "resd.db"));
try {
  await store.syncSchema([def]);
  const uuids: string[] = [];
  for (let i = 0; i < RECORDS; i += 1000) {
    const recs = Array.from({ length: Math.min(1000, RECORDS - i) }, record);
    for (const r of recs) uuids.push(r.uuid);
    await store.transaction(async (tx: { insertMany(resource: string, recs: unknown[]): Promise<void> }) => tx.insertMany("items", recs));
  }

  const ms = (t0: number) => performance.now() - t0;
  const picks = Array.from({ length: GETS }, () => uuids[Math.floor(rand() * uuids.length)]);
  let t0 = performance.now();
  for (const u of picks) if (!(await store.get("items", u))) throw new Error(`missing ${u}`);
  const getMs = ms(t0);

  const pageAt = (offset: number) => compileList(store.dialect, def, parseListParams({ limit: "20", offset: String(offset) }));
  const deep = Array.from({ length: PAGES }, () => pageAt(Math.floor(rand() * (RECORDS - 20))));
  const shallow = Array.from({ length: PAGES }, () => pageAt(Math.floor(rand() * 980)));
  t0 = performance.now();
  for (const q of deep) if ((await store.page("items", q)).length !== 20) throw new Error("short page");
  const deepMs = ms(t0);
  t0 = performance.now();
  for (const q of shallow) if ((await store.page("items", q)).length !== 20) throw new Error("short page");
  const shallowMs = ms(t0);

  let left = INSERTS;
  const client = async () => {
    while (left-- > 0) {
      const rec = record();
      await store.transaction(async (tx: { insert(resource: string, rec: unknown): Promise<void> }) => tx.insert("items", rec));
    }
  };
  t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENT }, client));
  const insertMs = ms(t0);

  const per = (total: number, n: number) => `${((total * 1000) / n).toFixed(2)} µs/op`;
  console.log(`(a) ${GETS} get:                     ${getMs.toFixed(0)} ms (${per(getMs, GETS)})`);
  console.log(`(b) ${PAGES} page, any offset:       ${deepMs.toFixed(0)} ms (${per(deepMs, PAGES)})`);
  console.log(`    ${PAGES} page, offset < 1,000:   ${shallowMs.toFixed(0)} ms (${per(shallowMs, PAGES)})`);
  console.log(`(c) ${INSERTS} inserts, ${CONCURRENT} at a time: ${insertMs.toFixed(0)} ms (${((INSERTS * 1000) / insertMs).toFixed(0)} tx/s)`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
