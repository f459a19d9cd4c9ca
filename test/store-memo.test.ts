/** The memo of list answers stays within its byte budget whatever the queries look like. */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { BoundedMemo, CommitMemo, keysOf, pagesByEnd, type FilterGroup, type FilterTag, type MemoTag } from "../src/core/store/memo";
import { SqliteStore } from "../src/core/store/sqlite";
import { compileList } from "../src/core/query/compile";
import { parseListParams } from "../src/core/query/parse";
import { buildDefinition } from "../src/core/definitions/load";

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

test("a long query is keyed by its digest: a 12 KB query costs the key bytes of a short one; keys of different parts differ", () => {
  expect(BoundedMemo.key("count", "x".repeat(12 * 1024)).length).toBeLessThanOrEqual(64);
  expect(BoundedMemo.key("count", "x".repeat(12 * 1024))).not.toBe(BoundedMemo.key("count", `${"x".repeat(12 * 1024 - 1)}y`));
  expect(BoundedMemo.key("count", "x".repeat(2 * 1024)).length).toBeLessThanOrEqual(64);
  for (const [a, b] of [[["a", "bc"], ["ab", "c"]], [["count", "x"], ["count", "x", ""]], [["p", "q".repeat(600)], ["p", `${"q".repeat(599)}r`]]]) {
    expect(BoundedMemo.key(...a)).not.toBe(BoundedMemo.key(...b));
  }
  // Short texts and digests never meet, whatever the text.
  const digest = BoundedMemo.key("count", "z".repeat(4096));
  expect(BoundedMemo.key(digest)).not.toBe(digest);
  expect(BoundedMemo.key("count", "x")).toBe(BoundedMemo.key("count", "x"));
});

test("the least recently used entries go once the budget is reached; oversized values are not kept", () => {
  const memo = new BoundedMemo(10_000);
  for (let i = 0; i < 1000; i++) {
    memo.set(`k${i}`, i, 100);
    if (i === 5) expect(memo.get("k0")).toBe(0); // used again: stays longest
    expect(memo.bytes).toBeLessThanOrEqual(10_000);
  }
  expect(memo.size).toBeGreaterThan(10);
  expect(memo.get("k999")).toBe(999);
  expect(memo.get("k1")).toBeUndefined();
  memo.set("big", "v", 5_000);
  expect(memo.get("big")).toBeUndefined();
  memo.clear();
  expect(memo.bytes).toBe(0);
});

test("a commit judges exactly the kept pages and totals, by filter: full pages of each order by where they end, the rest apart", async () => {
  const memo = new CommitMemo(60_000, () => 0);
  const filter = (key: string): FilterTag => ({ key, where: "", args: [], equalities: [], bytes: 0 });
  const asc = [{ expr: "year", desc: false }, { expr: "id", desc: false }];
  const page = (f: string, offset: number, limit: number, full = true, order: typeof asc | null = asc): MemoTag =>
    ({ kind: "rows", resource: "items", filter: filter(f), order: order ?? undefined, orderKey: JSON.stringify(order), offset, limit, full });
  const keep = (key: string, tag: MemoTag, bytes = 100) => memo.remember(key, async () => key, () => bytes, () => tag);
  await keep("p40", page("a", 40, 20));
  await keep("p0", page("a", 0, 20));
  await keep("p20", page("a", 20, 10));
  await keep("p20b", page("a", 20, 20));
  await keep("end", page("a", 60, 20, false));
  await keep("unordered", page("a", 0, 20, true, null));
  await keep("total", { kind: "count", resource: "items", filter: filter("a") });
  await keep("other", page("b", 0, 20));
  let judged: FilterGroup[] = [];
  const commit = () => {
    judged = [];
    memo.committed(new Map([["items", { newAbove: 0 }]]), (_r, _n, groups) => ((judged = groups), new Map()));
  };
  commit();
  const a = judged.find((g) => g.filter.key === "a")!;
  expect(judged.map((g) => g.filter.key).sort()).toEqual(["a", "b"]);
  expect([...a.counts]).toEqual(["total"]);
  expect([...a.partial].sort()).toEqual(["end", "unordered"]);
  expect(pagesByEnd(a.orders.get(JSON.stringify(asc))!).map((p) => `${p.key}:${p.end}`)).toEqual(["p0:20", "p20:30", "p20b:40", "p40:60"]);
  // A page that goes (evicted by the byte budget, or dropped by a write) leaves its group; the
  // last one leaves no group behind.
  for (let i = 0; i < 1000; i++) await keep(`filler${i}`, { kind: "any", resource: "other" }, 1000);
  commit();
  expect(judged).toEqual([]);
  await keep("p0", page("a", 0, 20));
  await keep("p20", page("a", 20, 20));
  commit();
  expect(judged.flatMap((g) => [...keysOf(g)]).sort()).toEqual(["p0", "p20"]);
  expect(pagesByEnd(judged[0].orders.get(JSON.stringify(asc))!).map((p) => p.key)).toEqual(["p0", "p20"]);
  memo.committed(new Map([["items", { newAbove: 0 }]]), () => new Map([["p0", "drop"]]));
  commit();
  expect(pagesByEnd(judged[0].orders.get(JSON.stringify(asc))!).map((p) => p.key)).toEqual(["p20"]);
  memo.committed(new Map([["items", "rewritten"]]), () => new Map());
  commit();
  expect(judged).toEqual([]);
});

test("another process's commit: answers all older than it take its rows unjudged (the unstamped go); else each is judged by its stamp", async () => {
  const memo = new CommitMemo(60_000, () => 0);
  const filter = (key: string): FilterTag => ({ key, where: "", args: [], equalities: [], bytes: 0 });
  const asc = [{ expr: "year", desc: false }, { expr: "id", desc: false }];
  const page = (f: string, offset: number, resource = "items"): MemoTag =>
    ({ kind: "rows", resource, filter: filter(f), order: asc, orderKey: JSON.stringify(asc), offset, limit: 20, full: true });
  const keep = (key: string, tag: MemoTag, rank?: number) =>
    memo.remember(key, async () => key, () => 100, () => tag, undefined, () => (rank === undefined ? undefined : { rank }));
  const fill = async () => {
    await keep("a0", page("a", 0), 5);
    await keep("a20", page("a", 20), 7);
    await keep("b0", page("b", 0), 6);
    await keep("empty", page("b", 40));
    await keep("elsewhere", page("a", 0, "other"));
  };
  let judged: string[][] = [];
  let asked = 0;
  const commit = (takenUpTo: number, verdict: (rank: number | undefined) => "revise" | "keep" | "drop" = () => "revise") => {
    judged = [];
    memo.committed(new Map([["items", { newAbove: 0 }]]), (_r, _n, groups) => ((judged = groups.map((g) => keysOf(g).sort())), new Map()),
      { verdict: (stamp) => (asked++, verdict(stamp?.rank)), takenUpTo });
  };
  await fill();
  // Every stamp ranks at most 7: none is asked; the page without a stamp cannot tell, and goes.
  commit(7, () => { throw new Error("judged one by one"); });
  expect(asked).toBe(0);
  expect(judged.sort()).toEqual([["a0", "a20"], ["b0"]]);
  expect(memo.peek("empty")).toBeUndefined();
  // Another resource's unstamped page is not this commit's to drop.
  expect(memo.peek("elsewhere")).toBe("elsewhere");

  await fill();
  // One stamp (7) ranks above: each answer is judged. The one that saw the commit stays as it is,
  // out of the revision; its filter's other pages are revised; the others' groups untouched.
  commit(6, (rank) => (rank === undefined ? "drop" : rank > 6 ? "keep" : "revise"));
  expect(asked).toBe(4);
  expect(judged.sort()).toEqual([["a0"], ["b0"]]);
  expect(memo.peek("a20")).toBe("a20");
  expect(memo.peek("empty")).toBeUndefined();
});

test("a store under thousands of distinct 12 KB filters keeps its memo under RESD_CACHE_MAX_BYTES and answers correctly", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-memo-"));
  dirs.push(dir);
  const budget = 512 * 1024;
  const store = new SqliteStore(join(dir, "resd.db"), { cacheMaxBytes: budget });
  const def = buildDefinition("notes", { fields: { title: { type: "text" }, body: { type: "textarea" } } } as never, null);
  await store.syncSchema([def]);
  await store.transaction(async (tx) => {
    for (let i = 0; i < 50; i++) {
      await tx.insert("notes", { uuid: crypto.randomUUID(), data: JSON.stringify({ title: `t${i % 5}`, body: "b".repeat(2000) }), _created: i, _modified: i, _created_by: null, _modified_by: null });
    }
  });
  const pad = "x".repeat(12 * 1024);
  let peak = 0;
  for (let i = 0; i < 3000; i++) {
    const q = compileList(store.dialect, def, parseListParams({ filter: `title:${i}${pad}`, limit: "20" }));
    expect(await store.count("notes", q)).toBe(0);
    expect(await store.page("notes", q)).toEqual([]);
    peak = Math.max(peak, store.memoBytes());
  }
  expect(peak).toBeGreaterThan(0);
  expect(peak).toBeLessThanOrEqual(budget);
  // Pages with rows count their text (about 8 KB a row here): 40 such pages cannot all stay.
  for (let i = 0; i < 40; i++) {
    const q = compileList(store.dialect, def, parseListParams({ filter: `title:t${i % 5}`, sort: "_created", offset: String(i % 8), limit: "20" }));
    expect((await store.page("notes", q)).length).toBe(10 - (i % 8));
    expect(store.memoBytes()).toBeLessThanOrEqual(budget);
  }
  // A commit drops the answers it changes: the pages of t0 (not full: the new record joins them);
  // the total of t0 gains the new record.
  const t0 = compileList(store.dialect, def, parseListParams({ filter: "title:t0" }));
  expect(await store.count("notes", t0)).toBe(10);
  const held = store.memoBytes();
  await store.transaction(async (tx) => tx.insert("notes", { uuid: crypto.randomUUID(), data: JSON.stringify({ title: "t0" }), _created: 99, _modified: 99, _created_by: null, _modified_by: null }));
  expect(store.memoBytes()).toBeLessThan(held);
  expect(await store.count("notes", t0)).toBe(11);
  // A change of an existing record drops every answer of its resource.
  await store.transaction(async (tx) => tx.delete("notes", (await store.page("notes", t0))[0].uuid));
  expect(store.memoBytes()).toBe(0);
  expect(await store.count("notes", t0)).toBe(10);
  await store.close();
});

test("a record read twice is kept until a commit of this process updates or deletes it, or another process commits; other records' writes and inserts leave it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "resd-memo-"));
  dirs.push(dir);
  const path = join(dir, "resd.db");
  const store = new SqliteStore(path);
  await store.syncSchema([buildDefinition("notes", { fields: { title: { type: "text" } } } as never, null)]);
  const row = (uuid: string, title: string) => ({ uuid, data: JSON.stringify({ title }), _created: 1, _modified: 1, _created_by: null, _modified_by: null });
  await store.transaction(async (tx) => { await tx.insert("notes", row("a", "a1")); await tx.insert("notes", row("b", "b1")); });
  const get = (uuid: string) => store.now!.get("notes", uuid);
  // A record goes in at its second read: from then on, the same object (no read of the file).
  const first = get("a");
  const a = get("a");
  expect(a).not.toBe(first);
  expect(get("a")).toBe(a);
  for (const uuid of ["b", "b", "c", "missing", "missing"]) get(uuid);
  expect(get("missing")).toBeNull();
  await store.transaction(async (tx) => { await tx.insert("notes", row("missing", "now here")); await tx.insert("notes", row("c", "c1")); });
  expect(get("a")).toBe(a);
  expect(get("missing")?.data).toBe(JSON.stringify({ title: "now here" })); // a miss was never kept
  await store.transaction(async (tx) => tx.update("notes", row("b", "b2")));
  expect(get("a")).toBe(a);
  expect(get("b")?.data).toBe(JSON.stringify({ title: "b2" }));
  get("a");
  await store.transaction(async (tx) => tx.update("notes", row("a", "a2")));
  expect(get("a")?.data).toBe(JSON.stringify({ title: "a2" }));
  const a2 = get("a");
  await store.transaction(async (tx) => tx.delete("notes", "a"));
  expect(get("a")).toBeNull();
  await store.transaction(async (tx) => tx.insert("notes", row("a", "a3")));
  expect(get("a")?.data).toBe(JSON.stringify({ title: "a3" }));
  expect(a2).not.toBe(get("a"));
  get("c");
  const c = get("c");
  expect(get("c")).toBe(c);
  await store.transaction(async (tx) => { await tx.deleteAll("notes", null); });
  expect(get("c")).toBeNull();
  await store.transaction(async (tx) => tx.insert("notes", row("d", "d1")));
  expect(get("d")?.data).toBe(JSON.stringify({ title: "d1" }));
  const d = get("d");
  expect(get("d")).toBe(d);
  // Another connection (another process) writes: the kept record goes (data_version, looked at every millisecond).
  const other = new Database(path);
  other.query(`UPDATE "r:notes" SET data = ? WHERE uuid = 'd'`).run(JSON.stringify({ title: "d by another process" }));
  other.close();
  await Bun.sleep(5);
  expect(get("d")?.data).toBe(JSON.stringify({ title: "d by another process" }));
  await store.close();
});
