/** The cache of records read one by one (src/core/store/record-cache.ts): bounded, and exact about what it keeps. */
import { expect, test } from "bun:test";
import { RecordCache } from "../src/core/store/record-cache";

const rec = (uuid: string, chars: number) => ({ uuid, data: JSON.stringify({ t: "x".repeat(chars) }), _created: 1, _modified: 1, _created_by: null, _modified_by: null });

/** Reads a record twice (it goes in at its second read); true when the third read did not load it. */
function readTwiceThenKept(cache: RecordCache, resource: string, row: ReturnType<typeof rec>): boolean {
  cache.read(resource, row.uuid, () => row);
  cache.read(resource, row.uuid, () => row);
  let loaded = false;
  cache.read(resource, row.uuid, () => { loaded = true; return row; });
  return !loaded;
}

test("the cache holds at most its bytes, also when large records take the slots of small ones; dropping all frees them", () => {
  const budget = 256 * 1024;
  const cache = new RecordCache(budget, 1 << 10);
  let kept = 0;
  for (let i = 0; i < 3000; i++) if (readTwiceThenKept(cache, "notes", rec(`small-${i}`, 10))) kept++;
  expect(kept).toBeGreaterThan(100);
  expect(cache.heldBytes).toBeLessThanOrEqual(budget);
  const full = cache.heldBytes;
  expect(full).toBeGreaterThan(budget / 2);
  let large = 0;
  for (let i = 0; i < 3000; i++) {
    if (readTwiceThenKept(cache, "notes", rec(`large-${i}`, 1500))) large++;
    expect(cache.heldBytes).toBeLessThanOrEqual(budget);
  }
  expect(large).toBeGreaterThan(0);
  cache.dropAll();
  expect(cache.heldBytes).toBe(0);
  expect(readTwiceThenKept(cache, "notes", rec("after", 10))).toBe(true);
});

test("a record is kept at its second read in a row from its slot, never above a sixty-fourth of the budget, and apart per resource", () => {
  const cache = new RecordCache(64 * 1024, 1 << 4);
  const a = rec("same-uuid", 10);
  let loads = 0;
  const load = () => { loads++; return a; };
  cache.read("notes", a.uuid, load);
  cache.read("notes", a.uuid, load);
  cache.read("notes", a.uuid, load);
  expect(loads).toBe(2);
  // The same uuid in another resource is another record.
  let other = 0;
  cache.read("cards", a.uuid, () => { other++; return a; });
  expect(other).toBe(1);
  expect(readTwiceThenKept(cache, "notes", rec("big", 2000))).toBe(false);
  // Emptying a resource drops its records, not another's.
  cache.committed(new Map([["notes", null]]));
  let again = 0;
  cache.read("notes", a.uuid, () => { again++; return a; });
  expect(again).toBe(1);
  expect(cache.read("notes", "missing", () => null)).toBeNull();
});
