/**
 * The order in which a PostgreSQL instance revises its cached answers after its own commits
 * (src/core/store/postgres-own.ts), on its own: commits revised in the order they were sent, a
 * COMMIT that never answers not holding the others past its patience, and rows whose ids are
 * lower than ones already revised (a transaction that ran beside later ones) dropping their
 * resource's answers rather than being placed as the newest.
 */
import { expect, test } from "bun:test";
import { CommitMemo, type ResourceWrite } from "../src/core/store/memo";
import { OwnCommits, TxWrites } from "../src/core/store/postgres-own";
import type { AddedRow } from "../src/core/store/postgres-revise";

const row = (id: number): AddedRow => ({ id, uuid: crypto.randomUUID(), data: "{}", _created: id, _modified: id, _created_by: null, _modified_by: null });
const creates = (resource: string, ...ids: number[]) => {
  const w = new TxWrites();
  for (const id of ids) w.add(resource, row(id));
  return w;
};

/** An OwnCommits whose revisions are written down: per revision, each resource's verdict. */
function own(patienceMs = 60_000) {
  const memo = new CommitMemo(1 << 20, () => 0);
  const revisions: Record<string, string>[] = [];
  const late = { n: 0 };
  const o = new OwnCommits(memo, (writes: Map<string, ResourceWrite>) => {
    revisions.push(Object.fromEntries([...writes].map(([r, w]) => [r, w === "rewritten" ? "rewritten" : "added"])));
    memo.committed(writes, () => new Map());
  }, patienceMs, () => late.n++);
  return { o, revisions, memo, late };
}

test("a commit acknowledged before one sent ahead of it waits for it, then both are revised in the order sent", async () => {
  const { o, revisions } = own();
  const first = o.sending(10, creates("a", 1));
  const second = o.sending(11, creates("b", 2));
  let secondDone = false;
  const waiting = o.committed(second).then(() => (secondDone = true));
  await Bun.sleep(5);
  expect(secondDone).toBe(false);
  expect(revisions).toEqual([]);
  await o.committed(first);
  await waiting;
  expect(revisions).toEqual([{ a: "added" }, { b: "added" }]);
});

test("a COMMIT that never answers holds the commits sent after it only until its patience runs out; its answers go", async () => {
  const { o, revisions, late } = own(80);
  const silent = o.sending(20, creates("a", 1));
  const next = o.sending(21, creates("b", 2));
  const t0 = performance.now();
  await o.committed(next);
  const waited = performance.now() - t0;
  expect(waited).toBeGreaterThanOrEqual(60);
  expect(waited).toBeLessThan(2000);
  // The one given up on counts as failed: its resource's answers are dropped, not revised.
  expect(revisions).toEqual([{ a: "rewritten" }, { b: "added" }]);
  expect(late.n).toBe(0);
  // It answers after all: what was kept since it was given up on may lack its rows, and goes
  // (as after another instance's commit) before its writer hears of it.
  await o.committed(silent);
  expect(late.n).toBe(1);
  expect(revisions).toEqual([{ a: "rewritten" }, { b: "added" }]);
});

test("rows with lower ids than rows already revised are not placed as the newest: the resource's answers go", async () => {
  const { o, revisions } = own();
  // T1 took id 5, T2 id 6; T2 commits first.
  const t1 = o.sending(30, creates("a", 5));
  await Promise.all([o.committed(o.sending(31, creates("a", 6))), o.committed(t1)]);
  const t3 = o.sending(32, creates("a", 7));
  const late = o.sending(33, creates("a", 4));
  await o.committed(t3);
  await o.committed(late);
  expect(revisions).toEqual([{ a: "added" }, { a: "added" }, { a: "added" }, { a: "rewritten" }]);
});

test("an import's rows are not kept one by one past what a revision would look at", () => {
  const w = creates("a", ...Array.from({ length: 1001 }, (_, i) => i + 1));
  expect(w.added.has("a")).toBe(false);
  expect(w.rewritten.has("a")).toBe(true);
  w.add("a", row(5000));
  expect(w.added.has("a")).toBe(false);
});

test("a transaction begun before another instance's commit was heard of is not placed: its resource's answers go", async () => {
  const { o, revisions } = own();
  const before = new TxWrites(o.others);
  before.add("a", row(5));
  o.othersCommitted();
  const after = new TxWrites(o.others);
  after.add("b", row(7));
  await o.committed(o.sending(40, before));
  await o.committed(o.sending(41, after));
  expect(revisions).toEqual([{ a: "rewritten" }, { b: "added" }]);
});
