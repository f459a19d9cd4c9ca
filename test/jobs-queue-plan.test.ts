/**
 * The job claim must stay an index walk: with one OR query SQLite gathered and sorted the whole
 * backlog on every claim (1.3 ms at 20,000 queued jobs), which starved the worker under load.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/core/store/sqlite";
import { EXPIRED, QUEUED } from "../src/core/store/sqlite-jobs";

test("both claim queries are served in order by an index (no sort of the backlog)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-jobs-"));
  const store = new SqliteStore(join(dir, "resd.db"));
  for (const sql of [EXPIRED, QUEUED]) {
    const plan = (store.readDb.query(`EXPLAIN QUERY PLAN ${sql}`).all(Date.now()) as { detail: string }[]).map((r) => r.detail).join(" | ");
    expect(plan).toContain("USING INDEX");
    expect(plan).not.toContain("TEMP B-TREE");
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test("an expired lease is claimed before queued jobs, and queued jobs oldest first", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-jobs-"));
  const store = new SqliteStore(join(dir, "resd.db"));
  const now = Date.now();
  await store.transaction(async (tx) => {
    await tx.enqueueJob({ type: "t", resource: "r", action: "create", uuid: "later", payload: "{}", run_at: now - 10 });
    await tx.enqueueJob({ type: "t", resource: "r", action: "create", uuid: "first", payload: "{}", run_at: now - 20 });
    await tx.enqueueJob({ type: "t", resource: "r", action: "create", uuid: "future", payload: "{}", run_at: now + 60_000 });
  });
  const a = await store.jobs.claim(now, 1, 5); // a lease of 1 ms: it expires at once
  expect(a?.uuid).toBe("first");
  const b = await store.jobs.claim(now + 5, 60_000, 5);
  expect(b?.uuid).toBe("first"); // its worker is gone: taken again before the queue
  expect(b?.attempts).toBe(2);
  expect((await store.jobs.claim(now + 5, 60_000, 5))?.uuid).toBe("later");
  expect(await store.jobs.claim(now + 5, 60_000, 5)).toBeNull(); // "future" is not due
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test("an idle worker's poll writes nothing: no transaction, so cached answers and counts in flight are left alone", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-jobs-"));
  const store = new SqliteStore(join(dir, "resd.db"));
  const now = Date.now();
  // Every transaction is a commit of this process: it drops answers and makes a parallel count start over.
  let transactions = 0;
  const real = store.transaction.bind(store);
  store.transaction = ((fn, opts) => {
    transactions++;
    return real(fn, opts);
  }) as typeof store.transaction;
  expect(await store.jobs.claim(now, 60_000, 5)).toBeNull();
  expect(transactions).toBe(0);
  await real(async (tx) => tx.enqueueJob({ type: "t", resource: "r", action: "create", uuid: "due", payload: "{}", run_at: now + 1_000 }));
  expect(await store.jobs.claim(now, 60_000, 5)).toBeNull(); // queued, not due yet
  expect(transactions).toBe(0);
  expect((await store.jobs.claim(now + 2_000, 60_000, 5))?.uuid).toBe("due");
  expect(transactions).toBe(1);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
