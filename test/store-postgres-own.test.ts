/**
 * The order in which a PostgreSQL instance revises its cached answers after its own commits
 * (src/core/store/postgres-own.ts), on its own: commits revised in the order they were sent, a
 * COMMIT that never answers not holding the others past its patience, and rows whose ids are
 * lower than ones already revised (a transaction that ran beside later ones) revised in all the
 * same (kept pages carry ids to place them by: store-postgres-instances-order).
 */
import { expect, test } from "bun:test";
import { CommitMemo, type ResourceWrite } from "../src/core/store/memo";
import { OwnCommits, TxWrites } from "../src/core/store/postgres-own";
import type { AddedRow } from "../src/core/store/postgres-revise";
import { Announcer, noticeFrom, noticePayloads, parseNotice, type ToldCommit } from "../src/core/store/postgres-announce";

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
  /** Each added write's `newAbove`, in order. */
  const above: number[] = [];
  const late = { n: 0 };
  const o = new OwnCommits(memo, (writes: Map<string, ResourceWrite>) => {
    revisions.push(Object.fromEntries([...writes].map(([r, w]) => [r, w === "rewritten" ? "rewritten" : "added"])));
    for (const w of writes.values()) if (w !== "rewritten") above.push(w.newAbove);
    memo.committed(writes, () => new Map());
  }, patienceMs, () => late.n++);
  return { o, revisions, memo, late, above };
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

test("rows with lower ids than rows already revised are revised in, each commit's lowest id told", async () => {
  const { o, revisions, above } = own();
  // T1 took id 5, T2 id 6; T2 commits first.
  const t1 = o.sending(30, creates("a", 5));
  await Promise.all([o.committed(o.sending(31, creates("a", 6))), o.committed(t1)]);
  const t3 = o.sending(32, creates("a", 7));
  const late = o.sending(33, creates("a", 4));
  await o.committed(t3);
  await o.committed(late);
  expect(revisions).toEqual([{ a: "added" }, { a: "added" }, { a: "added" }, { a: "added" }]);
  expect(above).toEqual([4, 5, 6, 3]);
});

test("an import's rows are not kept one by one past what a revision would look at", () => {
  const w = creates("a", ...Array.from({ length: 1001 }, (_, i) => i + 1));
  expect(w.added.has("a")).toBe(false);
  expect(w.rewritten.has("a")).toBe(true);
  w.add("a", row(5000));
  expect(w.added.has("a")).toBe(false);
});

test("the snapshot watch counts the marks of other instances' commits told of by notices, whichever comes first", () => {
  // Before the notice: the look sees 2 marks nobody explained yet; the notice pays them back.
  const early = own().o;
  expect(early.othersMarked("10:10:", 100)).toBe(false);
  expect(early.othersMarked("12:12:", 102)).toBe(false);
  early.toldOf(11, 2);
  expect(early.othersMarked("12:12:", 102)).toBe(false);
  // After the notice: the look counts them as told.
  const late = own().o;
  expect(late.othersMarked("10:10:", 100)).toBe(false);
  late.toldOf(10, 1);
  late.toldOf(11, 2);
  expect(late.othersMarked("12:12:", 103)).toBe(false);
  // A notice lost: the marks are still owed at the next look.
  const lost = own().o;
  expect(lost.othersMarked("10:10:", 100)).toBe(false);
  expect(lost.othersMarked("12:12:", 101)).toBe(false);
  expect(lost.othersMarked("12:12:", 101)).toBe(true);
  expect(lost.othersMarked("12:12:", 101)).toBe(false);
  // Part of it told: still owed.
  const part = own().o;
  expect(part.othersMarked("10:10:", 100)).toBe(false);
  expect(part.othersMarked("13:13:", 103)).toBe(false);
  part.toldOf(11, 1);
  expect(part.othersMarked("13:13:", 103)).toBe(true);
  // Counted at the first look already (its notice came later): nothing owed.
  const first = own().o;
  expect(first.othersMarked("12:12:", 100)).toBe(false);
  first.toldOf(11, 1);
  expect(first.othersMarked("12:12:", 100)).toBe(false);
  // A commit running at the first look, told of before it ended: counted when a look sees it ended.
  const running = own().o;
  expect(running.othersMarked("11:12:11", 100)).toBe(false);
  running.toldOf(11, 1);
  expect(running.othersMarked("13:13:", 101)).toBe(false);
});

test("notices carry commits with their rows in payloads within the bound; a commit too large, or one not told in detail, is told as a plain notice", () => {
  const commit = (xid: number, n: number, rewritten?: string): ToldCommit => ({
    xid, marks: rewritten ? 2 : 1,
    writes: { items: Array.from({ length: n }, (_, i) => ({ ...row(xid * 100 + i), data: JSON.stringify({ title: `t "${i}" é` }), _created_by: i % 2 ? "u" : null })), ...(rewritten ? { [rewritten]: null } : {}) },
  });
  const commits = [commit(1, 3), commit(2, 2, "notes"), commit(3, 40)];
  const payloads = noticePayloads("inst", commits, 2000);
  expect(payloads.every((p) => Buffer.byteLength(p) <= 2000)).toBe(true);
  // The 40 rows of commit 3 fit in no payload of 2,000 bytes: a plain notice says that something committed.
  expect(payloads.at(-1)).toBe("inst");
  const told = payloads.map(parseNotice);
  expect(told.every((t) => t.from === "inst")).toBe(true);
  expect(told.flatMap((t) => t.commits ?? [])).toEqual([commits[0], commits[1]]);
  expect(told.at(-1)!.commits).toBeNull();
  // Split over payloads when they do not fit in one, in order.
  const many = Array.from({ length: 30 }, (_, i) => commit(10 + i, 2));
  const split = noticePayloads("inst", many, 2000);
  expect(split.length).toBeGreaterThan(1);
  expect(split.flatMap((p) => parseNotice(p).commits ?? [])).toEqual(many);
  // A commit that is not told in detail (no rows known), and a payload of another version.
  expect(noticePayloads("inst", [null, null], 2000)).toEqual(["inst"]);
  expect(parseNotice("inst|not json")).toEqual({ from: "inst", commits: null });
  for (const odd of ['{"a":1}', "[[1,1,{\"items\":[[1]]}]]", '[[1,1,{"items":[]}]]', '[[1.5,1,{}]]', '[[1,1,[]]]', "[null]"]) {
    expect(parseNotice(`inst|${odd}`)).toEqual({ from: "inst", commits: null });
  }
  expect(parseNotice("schema:inst")).toEqual({ from: "schema:inst", commits: null });
});

test("a commit's notice and the realtime messages queued in the same turn go in one statement, the notice first; what comes while it is sent goes in the next", async () => {
  const statements: string[][] = [];
  let answer = Promise.withResolvers<void>();
  const a = new Announcer(async (payloads) => {
    statements.push(payloads);
    await answer.promise;
  }, "inst", (e) => { throw e; });
  const commit: ToldCommit = { xid: 7, marks: 1, writes: { items: [row(1)] } };
  a.announce(commit);
  const said = a.say(['[{"m":1}]']);
  a.announce(null);
  // Nothing is sent before the turn ends: the realtime messages of the commit are still to come.
  expect(statements).toEqual([]);
  await Bun.sleep(0);
  expect(statements.length).toBe(1);
  expect(statements[0]!.length).toBe(3);
  expect(parseNotice(statements[0]![0]!).commits).toEqual([commit]);
  expect(statements[0]!.slice(1)).toEqual(['inst [{"m":1}]', "inst"]);
  // While that statement is under way, later ones wait and then go together.
  a.say(['[{"m":2}]']);
  a.announce(null);
  await Bun.sleep(0);
  expect(statements.length).toBe(1);
  const first = answer;
  answer = Promise.withResolvers<void>();
  first.resolve();
  await said;
  await Bun.sleep(0);
  expect(statements.length).toBe(2);
  expect(statements[1]).toEqual(['inst [{"m":2}]', "inst"]);
  answer.resolve();
  await a.settled();
});

test("noticeFrom names the instance of a notice without reading its rows", () => {
  expect(noticeFrom("inst")).toBe("inst");
  expect(noticeFrom('inst|[[1,1,{"items":[[1,"u","{}",1,1,null,null]]}]]')).toBe("inst");
  expect(noticeFrom("schema:inst")).toBe("schema:inst");
});
