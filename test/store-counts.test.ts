/**
 * Maintained counts (no triggers: kept at COMMIT from what the transaction wrote) equal a recount,
 * and the search index holds exactly the table's rows, after any mix of inserts, updates, deletes,
 * rolled-back jobs and deletes of everything, in shared group commits.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/core/store/sqlite";
import { buildDefinition } from "../src/core/definitions/load";

const dir = mkdtempSync(join(tmpdir(), "resd-counts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const def = buildDefinition("items", {
  fields: { status: { type: "select", options: { a: "A", b: "B", c: "C" } }, flag: { type: "boolean" }, n: { type: "number" } },
  index: ["status", "flag,n"],
} as never, null);

/** A deterministic generator, so that a failure can be replayed. */
function rng(seed: number) {
  return () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
}

test("counts equal COUNT(*) per value after random concurrent transactions", async () => {
  const s = new SqliteStore(join(dir, "resd.db"));
  await s.syncSchema([def]);
  const rand = rng(42);
  const pick = <T,>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const live: string[] = [];
  let next = 0;
  const data = () => JSON.stringify({ ...(rand() < 0.9 ? { status: pick(["a", "b", "c", ""]) } : {}), ...(rand() < 0.8 ? { flag: rand() < 0.5 } : {}), n: Math.floor(rand() * 5) });
  const rec = (uuid: string) => ({ uuid, data: data(), _created: 1, _modified: 1, _created_by: null, _modified_by: null });
  for (let round = 0; round < 40; round++) {
    const jobs = Array.from({ length: 8 }, () => s.transaction(async (tx) => {
      for (let k = 0; k < 5; k++) {
        const r = rand();
        if (r < 0.45 || !live.length) {
          const u = `u${next++}`;
          await tx.insert("items", rec(u));
          live.push(u);
        } else if (r < 0.8) {
          await tx.update("items", rec(pick(live)));
        } else {
          const u = live.splice(Math.floor(rand() * live.length), 1)[0];
          await tx.delete("items", u);
        }
      }
      // Some jobs fail after writing: their writes roll back, the rest of the batch commits.
      if (rand() < 0.2) throw new Error("refused");
    }).catch(() => undefined));
    if (round === 25) jobs.push(s.transaction((tx) => tx.deleteAll("items", null)).then(() => undefined));
    await Promise.all(jobs);
    // The bookkeeping of what is live is approximate after rollbacks: ask the table.
    live.splice(0, live.length, ...(s.writeDb.query(`SELECT uuid FROM "r:items"`).all() as { uuid: string }[]).map((x) => x.uuid));
  }
  const db = s.writeDb;
  const kept = db.query("SELECT key, n FROM _resd_counts WHERE resource = 'items' AND n != 0 ORDER BY key").all();
  const recount = db.query(`SELECT k.value AS key, count(*) AS n FROM "r:items" AS t, json_each(json_array('', 'status' || char(0) || quote(json_extract(t.data, '$.status')), 'flag' || char(0) || quote(json_extract(t.data, '$.flag')))) AS k GROUP BY k.value ORDER BY key`).all();
  expect((db.query(`SELECT count(*) AS n FROM "r:items"`).get() as { n: number }).n).toBeGreaterThan(50);
  expect(kept).toEqual(recount);
  // The search index holds exactly the rows of the table (ids and text), however they were written.
  const indexed = db.query(`SELECT rowid AS id FROM "s:items" ORDER BY rowid`).all();
  expect(indexed).toEqual(db.query(`SELECT id FROM "r:items" ORDER BY id`).all());
  for (const { id, n } of db.query(`SELECT id, json_extract(data, '$.n') AS n FROM "r:items"`).all() as { id: number; n: number }[]) {
    expect(db.query(`SELECT rowid FROM "s:items" WHERE "s:items" MATCH ? AND rowid = ?`).get(`"${n}"`, id) ?? db.query(`SELECT 1 FROM "s:items" WHERE rowid = ? AND text LIKE ?`).get(id, `%${n}%`)).not.toBeNull();
  }
  // No trigger on the record table: they made every insert ~3x slower.
  expect(db.query("SELECT name FROM sqlite_master WHERE type = 'trigger'").all()).toEqual([]);
  await s.close();
});

test("a transaction alone (no savepoint) that fails leaves nothing; one that inserts then updates its rows counts them once", async () => {
  const s = new SqliteStore(join(dir, "alone.db"));
  await s.syncSchema([def]);
  const rec = (uuid: string, status: string) => ({ uuid, data: JSON.stringify({ status, n: 1 }), _created: 1, _modified: 1, _created_by: null, _modified_by: null });
  await s.transaction(async (tx) => { await tx.insert("items", rec("old", "a")); });
  const failed = s.transaction(async (tx) => {
    await tx.insert("items", rec("x", "a"));
    await tx.update("items", rec("old", "b"));
    throw new Error("refused");
  }, { alone: true });
  await expect(failed).rejects.toThrow("refused");
  await s.transaction(async (tx) => {
    await tx.insert("items", rec("y", "a"));
    await tx.update("items", rec("y", "c"));
    await tx.update("items", rec("old", "c"));
  }, { alone: true });
  const db = s.writeDb;
  expect(db.query(`SELECT uuid, json_extract(data, '$.status') AS s FROM "r:items" ORDER BY uuid`).all()).toEqual([{ uuid: "old", s: "c" }, { uuid: "y", s: "c" }]);
  expect(db.query("SELECT key, n FROM _resd_counts WHERE resource = 'items' AND n != 0 AND key NOT LIKE 'flag%' ORDER BY key").all())
    .toEqual([{ key: "", n: 2 }, { key: "status\u0000'c'", n: 2 }]);
  expect(db.query(`SELECT rowid AS id FROM "s:items" ORDER BY rowid`).all()).toEqual(db.query(`SELECT id FROM "r:items" ORDER BY id`).all());
  expect(db.inTransaction).toBe(false);
  await s.close();
});

test("an update refused by a unique index, in a commit shared with others, leaves the counts as they were", async () => {
  const s = new SqliteStore(join(dir, "unique.db"));
  await s.syncSchema([buildDefinition("items", {
    fields: { code: { type: "text" }, status: { type: "select", options: { a: "A", b: "B" } } }, unique: ["code"], index: ["status"],
  } as never, null)]);
  const rec = (uuid: string, code: string, status: string) => ({ uuid, data: JSON.stringify({ code, status }), _created: 1, _modified: 1, _created_by: null, _modified_by: null });
  await s.transaction(async (tx) => { await tx.insert("items", rec("a", "A", "a")); await tx.insert("items", rec("b", "B", "a")); });
  const results = await Promise.allSettled([
    s.transaction((tx) => tx.update("items", rec("b", "A", "b"))),
    s.transaction((tx) => tx.insert("items", rec("c", "C", "a"))),
  ]);
  expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
  const db = s.writeDb;
  expect(db.query("SELECT key, n FROM _resd_counts WHERE resource = 'items' AND n != 0 ORDER BY key").all())
    .toEqual([{ key: "", n: 3 }, { key: "status\u0000'a'", n: 3 }]);
  await s.close();
});
