/**
 * The change marks a PostgreSQL instance holds for its kept answers (src/core/store/postgres-marks.ts,
 * MarkBook): read once with their snapshot, then moved by each commit revised in as the database's
 * mark moved, never counting twice a commit the read saw already.
 */
import { expect, test } from "bun:test";
import { MarkBook } from "../src/core/store/postgres-marks";
import { parseSnapshot } from "../src/core/store/postgres-snapshot";

const mark = (ms: number, n: number) => ms + (n % 4096) / 4096;
/** A read that answers `row` once `go` is called (commits may be revised meanwhile). */
function slowRead(row: { ms: number | null; n: number | null; s: string }) {
  let go = () => {};
  const gate = new Promise<void>((r) => (go = r));
  let reads = 0;
  return { go, reads: () => reads, query: async () => { reads++; await gate; return [row]; } };
}
const none = async () => {};

test("a held mark moves with each commit revised in, by its time and one more count; a commit the read saw is not counted again", async () => {
  const book = new MarkBook();
  // The read saw transactions below 100 ended, except 97 (still running then).
  const read = slowRead({ ms: 5_000, n: 10, s: "97:100:97" });
  const value = book.read("items", "g", read.query, none);
  read.go();
  expect(await value).toBe(mark(5_000, 10));
  expect(book.get("items", "g")).toBe(mark(5_000, 10));
  book.fold(95, ["items"], new Map([["items", 4_000]])); // seen by the read
  expect(book.get("items", "g")).toBe(mark(5_000, 10));
  book.fold(97, ["items"], new Map([["items", 4_990]])); // running then: counted, an older time
  expect(book.get("items", "g")).toBe(mark(5_000, 11));
  book.fold(120, ["items", "notes"], new Map([["items", 6_000], ["notes", 1]])); // later; notes not held
  expect(book.get("items", "g")).toBe(mark(6_000, 12));
  expect(book.get("notes", "g")).toBeUndefined();
  // A commit whose mark is not known: read again.
  book.fold(121, ["items"], null);
  expect(book.get("items", "g")).toBeUndefined();
});

test("commits revised while the read runs count when the read did not see them; one of unknown mark leaves nothing held", async () => {
  const book = new MarkBook();
  const read = slowRead({ ms: null, n: null, s: "50:52:50" });
  const value = book.read("items", "g", read.query, none);
  // Asked again meanwhile: the same read.
  const again = book.read("items", "g", read.query, none);
  book.fold(50, ["items"], new Map([["items", 7_000]])); // running at the read: counts
  book.fold(51, ["items"], new Map([["items", 6_000]])); // ended before the read: in it already
  read.go();
  expect(await value).toBe(mark(7_000, 1));
  expect(await again).toBe(mark(7_000, 1));
  expect(read.reads()).toBe(1);
  expect(book.get("items", "g")).toBe(mark(7_000, 1));

  const unknown = slowRead({ ms: 8_000, n: 3, s: "60:60:" });
  const other = new MarkBook();
  const v = other.read("items", "g", unknown.query, none);
  other.fold(61, ["items"], null);
  unknown.go();
  await v;
  expect(other.get("items", "g")).toBeUndefined();
});

test("a read waits for this instance's commits its snapshot saw to be revised; a new generation holds nothing", async () => {
  const book = new MarkBook();
  let revised = () => {};
  const waiting = new Promise<void>((r) => (revised = r));
  let seen: string | null = null;
  const read = slowRead({ ms: 1_000, n: 2, s: "10:12:" });
  const value = book.read("items", "g1", read.query, (s) => ((seen = `${s.xmin}:${s.xmax}`), waiting));
  read.go();
  await Bun.sleep(5);
  expect(seen).toBe("10:12");
  let done = false;
  void value.then(() => (done = true));
  await Bun.sleep(5);
  expect(done).toBe(false);
  // Commit 11 (seen ended by the read) is revised meanwhile: in the read already.
  book.fold(11, ["items"], new Map([["items", 1_500]]));
  revised();
  expect(await value).toBe(mark(1_000, 2));
  expect(book.get("items", "g1")).toBe(mark(1_000, 2));
  // Another generation: the held marks are gone, and a read begun in the old one is not kept.
  const late = slowRead({ ms: 2_000, n: 5, s: "20:20:" });
  const old = book.read("notes", "g1", late.query, none);
  expect(book.get("items", "g2")).toBeUndefined();
  late.go();
  expect(await old).toBe(mark(2_000, 5));
  expect(book.get("notes", "g2")).toBeUndefined();
  expect(parseSnapshot("20:20:").xip.size).toBe(0);
});
