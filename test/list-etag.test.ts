/** What a list's ETag takes from its page (src/http/conditional.ts, rowsDigest): every row, by its uuid, `_modified` and data, in order. */
import { expect, test } from "bun:test";
import { rowsDigest } from "../src/http/conditional";
import type { StoredRecord } from "../src/core/store/types";

const rows = (n: number): StoredRecord[] => Array.from({ length: n }, (_, i) => ({
  uuid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, data: JSON.stringify({ title: `note ${i}` }),
  _created: 1_764_380_000_000 + i, _modified: 1_764_380_000_000 + i, _created_by: null, _modified_by: null,
}));

test("the same rows give the same digest in any array; a row added, gone, moved or written again (in the same second too) gives another", () => {
  const page = rows(20);
  const d = rowsDigest(page);
  expect(rowsDigest(page.map((r) => ({ ...r })))).toBe(d);
  const changed: StoredRecord[][] = [
    [...page, rows(21)[20]!],
    page.slice(1),
    [page[1]!, page[0]!, ...page.slice(2)],
    page.map((r, i) => (i === 7 ? { ...r, _modified: r._modified + 1 } : r)),
    page.map((r, i) => (i === 7 ? { ...r, _modified: r._modified + 2 ** 32 } : r)),
    page.map((r, i) => (i === 7 ? { ...r, data: `${r.data} ` } : r)),
    // Written again within the same second, its data as long as before (`_modified` has whole seconds).
    page.map((r, i) => (i === 7 ? { ...r, data: r.data.replace("note 7", "note X") } : r)),
    page.map((r, i) => (i === 7 ? { ...r, uuid: r.uuid.replace(/7$/, "8") } : r)),
  ];
  const digests = changed.map(rowsDigest);
  for (const other of digests) expect(other).not.toBe(d);
  expect(new Set(digests).size).toBe(digests.length);
  expect(rowsDigest([])).not.toBe(d);
});
