/** The SQLite store's transaction guarantees: group commit, per-request rollback, recovery. */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { SqliteStore } from "../src/core/store/sqlite";
import { buildDefinition } from "../src/core/definitions/load";

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

async function store() {
  const dir = mkdtempSync(join(tmpdir(), "resd-store-"));
  dirs.push(dir);
  const s = new SqliteStore(join(dir, "resd.db"));
  await s.syncSchema([buildDefinition("items", { fields: { n: { type: "number" } } } as never, null)]);
  return s;
}
const row = (uuid: string, n = 1) => ({ uuid, data: `{"n":${n}}`, _created: 1, _modified: 1, _created_by: null, _modified_by: null });

test("concurrent transactions share a commit, and a failing one rolls back alone", async () => {
  const s = await store();
  const results = await Promise.allSettled([
    s.transaction(async (tx) => tx.insert("items", row("a"))),
    s.transaction(async (tx) => { await tx.insert("items", row("b")); throw new Error("refused"); }),
    s.transaction(async (tx) => tx.insert("items", row("c"))),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(await s.get("items", "a")).not.toBeNull();
  expect(await s.get("items", "b")).toBeNull();
  expect(await s.get("items", "c")).not.toBeNull();
  await s.close();
});

test("in a busy turn, writes commit as soon as three quarters of the last busy turn's are queued; a lone write waits for the turn's end", async () => {
  const s = await store();
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const write = (uuid: string) => s.transaction(async (tx) => tx.insert("items", row(uuid)));
  await Promise.all(Array.from({ length: 8 }, (_, i) => write(`busy${i}`)));
  await nextTurn();
  // 8 writes last turn: the sixth of this one starts a commit at once, before the turn ends.
  let turnEnded = false;
  setImmediate(() => { turnEnded = true; });
  await Promise.all(Array.from({ length: 6 }, (_, i) => write(`early${i}`)));
  expect(turnEnded).toBe(false);
  await nextTurn();
  await write("quiet");
  await nextTurn();
  // One write last turn: a lone write waits for the end of the turn, where others may join it.
  turnEnded = false;
  setImmediate(() => { turnEnded = true; });
  await write("lone");
  expect(turnEnded).toBe(true);
  for (const uuid of ["busy7", "early5", "quiet", "lone"]) expect(await s.get("items", uuid)).not.toBeNull();
  await s.close();
});

test("a failure of the savepoint machinery itself settles every request and leaves the writer usable", async () => {
  const s = await store();
  const db = s.writeDb;
  const exec = db.exec.bind(db);
  db.exec = ((sql: string) => {
    if (sql.startsWith("ROLLBACK TO")) throw new Error("disk I/O error");
    return exec(sql);
  }) as typeof db.exec;
  const results = await Promise.allSettled([
    s.transaction(async (tx) => tx.insert("items", row("x"))),
    s.transaction(async () => { throw new Error("boom"); }),
    s.transaction(async (tx) => tx.insert("items", row("y"))),
  ]);
  db.exec = exec;
  expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
  expect(((results[0] as PromiseRejectedResult).reason as { status: number }).status).toBe(500);
  expect(await s.get("items", "x")).toBeNull(); // the whole batch was rolled back
  expect(db.inTransaction).toBe(false);
  await s.transaction(async (tx) => tx.insert("items", row("z")));
  expect(await s.get("items", "z")).not.toBeNull();
  await s.close();
});

test("a uuid that exists is a 409, a duplicate unique value a 422", async () => {
  const s = await store();
  await s.syncSchema([buildDefinition("items", { fields: { n: { type: "number" } }, unique: ["n"] } as never, null)]);
  await s.transaction(async (tx) => tx.insert("items", row("a")));
  const dup = await s.transaction(async (tx) => tx.insert("items", row("a", 2))).catch((e) => e);
  expect(dup.status).toBe(409);
  const uniq = await s.transaction(async (tx) => tx.insert("items", row("b"))).catch((e) => e);
  expect(uniq.status).toBe(422);
  expect(uniq.extra.errors.n).toContain("already used");
  await s.close();
});

test("a write waits for another process's write lock without blocking reads, then commits", async () => {
  const s = await store();
  await s.transaction(async (tx) => tx.insert("items", row("early")));
  const other = new Database(s.path);
  other.exec("PRAGMA busy_timeout=0; BEGIN IMMEDIATE"); // like a long CLI import
  const write = s.transaction(async (tx) => tx.insert("items", row("late", 2)));
  const t0 = performance.now();
  expect(await s.get("items", "early")).not.toBeNull(); // reads answer while the write waits
  expect(performance.now() - t0).toBeLessThan(100);
  await Bun.sleep(300);
  expect(await s.get("items", "late")).toBeNull();
  other.exec("COMMIT");
  other.close();
  await write;
  expect(await s.get("items", "late")).not.toBeNull();
  await s.close();
});
