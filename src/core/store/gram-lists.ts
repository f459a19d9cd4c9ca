/**
 * Row ids per search trigram, kept in memory between commits.
 *
 * FTS5 intersects doclists at ~20 ns per row id: three trigrams of 4,000 records each cost ~235 µs
 * per search, most of a search's time. Kept as sorted Int32Arrays, the same intersection is a few
 * microseconds. A list only has to be a superset of the records holding its trigram, because the
 * row-level condition of the search decides every candidate: so a create appends its new row ids
 * (read from the index's own text right after the commit), while an update or delete of a resource
 * drops that resource's lists, and a commit by another process drops them all.
 */

/** ASCII case folding, as the row-level search (`LIKE`) folds: only A-Z. */
const foldAscii = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/** Every trigram of `text` made of three ASCII characters, folded (the only ones a search plans with). */
export function asciiTrigrams(text: string): Set<string> {
  const t = foldAscii(text);
  const out = new Set<string>();
  for (let i = 0; i + 3 <= t.length; i++) {
    if (t.charCodeAt(i) < 0x80 && t.charCodeAt(i + 1) < 0x80 && t.charCodeAt(i + 2) < 0x80) out.add(t.slice(i, i + 3));
  }
  return out;
}

type List = { ids: Int32Array; length: number };

/** Overhead of one list beyond its ids (map entries, key, object). */
export const LIST_OVERHEAD = 160;
/** A create of more rows than this drops the resource's lists instead of reading the new rows' text. */
const MAX_APPENDED_ROWS = 1000;

export class GramLists {
  /** `${resource}\0${gram}` in least recently used order first. */
  private readonly lists = new Map<string, List>();
  private readonly grams = new Map<string, Set<string>>();
  /** Ticks at every change; per resource, the tick of its last change (a list read across one is not kept). */
  private clock = 0;
  private readonly changedAt = new Map<string, number>();
  private allChangedAt = 0;
  private bytes = 0;
  private seenVersion = -1;

  constructor(private readonly maxBytes: number, private readonly version: () => number) {}

  /** The ids of records holding `gram` (folded), oldest first, or undefined when not kept. */
  get(resource: string, gram: string): Int32Array | undefined {
    this.checkVersion();
    const key = `${resource}\u0000${gram}`;
    const list = this.lists.get(key);
    if (!list) return undefined;
    this.lists.delete(key);
    this.lists.set(key, list);
    return list.ids.subarray(0, list.length);
  }

  /** To pass to `put` with a list read now. */
  generation(resource: string): number {
    this.checkVersion();
    return Math.max(this.allChangedAt, this.changedAt.get(resource) ?? 0);
  }

  /**
   * Keeps a list read while `generation(resource)` was `gen`, unless a commit came in between, and
   * returns it as kept; undefined when it is not kept (too large, unsorted, or ids past 2^31).
   */
  put(resource: string, gram: string, ids: ArrayLike<number>, gen: number): Int32Array | undefined {
    if (this.generation(resource) !== gen) return undefined;
    return this.keep(resource, gram, ids);
  }

  private keep(resource: string, gram: string, ids: ArrayLike<number>): Int32Array | undefined {
    if (this.maxBytes <= 0) return undefined;
    for (let i = 0; i < ids.length; i++) if (ids[i]! > 0x7fffffff || (i > 0 && ids[i]! <= ids[i - 1]!)) return undefined;
    const key = `${resource}\u0000${gram}`;
    this.remove(key);
    const bytes = ids.length * 4 + LIST_OVERHEAD;
    if (bytes > this.maxBytes / 4) return undefined;
    const kept = Int32Array.from(ids);
    this.lists.set(key, { ids: kept, length: ids.length });
    let set = this.grams.get(resource);
    if (!set) this.grams.set(resource, (set = new Set()));
    set.add(gram);
    this.bytes += bytes;
    this.evict();
    return kept;
  }

  /** To pass to `putSettled` with lists read now. */
  allGeneration(): number {
    this.checkVersion();
    return this.allChangedAt;
  }

  /** Whether any list of `resource` is kept. */
  holds(resource: string): boolean {
    this.checkVersion();
    return (this.grams.get(resource)?.size ?? 0) > 0;
  }

  /**
   * `put` for a list whose reader judged the commits of this process across the read itself (on
   * PostgreSQL, by its snapshot): only a drop of every list since `allGeneration()` was `gen` keeps
   * it out. False when the lists went meanwhile (the rest of a batch read with it is of no use).
   */
  putSettled(resource: string, gram: string, ids: ArrayLike<number>, gen: number): boolean {
    if (this.allGeneration() !== gen) return false;
    this.keep(resource, gram, ids);
    return true;
  }

  /**
   * After a commit of this process: a resource that only gained rows (ids above `newAbove`) has them
   * added to the lists of the trigrams their search text holds (`newRows` reads that text); any
   * other write drops the resource's lists. A new id usually goes at a list's end; one below ids
   * already listed (on PostgreSQL, commits end out of id order) is put in its place.
   */
  committed(resource: string, newAbove: number | null, newRows: (above: number, limit: number) => { id: number; text: string }[]): void {
    this.changedAt.set(resource, ++this.clock);
    const kept = this.grams.get(resource);
    if (!kept?.size) return;
    const rows = newAbove === null ? null : newRows(newAbove, MAX_APPENDED_ROWS + 1);
    if (rows === null || rows.length > MAX_APPENDED_ROWS || rows.some((r) => r.id > 0x7fffffff)) {
      this.drop(resource);
      return;
    }
    for (const row of rows) {
      for (const gram of asciiTrigrams(row.text)) {
        if (!kept.has(gram)) continue;
        const list = this.lists.get(`${resource}\u0000${gram}`)!;
        const at = placeOf(list, row.id);
        if (at < list.length && list.ids[at] === row.id) continue;
        if (list.length === list.ids.length) {
          const grown = new Int32Array(Math.max(8, list.ids.length * 2));
          grown.set(list.ids);
          this.bytes += (grown.length - list.ids.length) * 4;
          list.ids = grown;
        }
        if (at < list.length) list.ids.copyWithin(at + 1, at, list.length);
        list.ids[at] = row.id;
        list.length++;
      }
    }
    this.evict();
  }

  /** Drops one resource's lists. */
  private drop(resource: string): void {
    this.changedAt.set(resource, ++this.clock);
    for (const gram of [...(this.grams.get(resource) ?? [])]) this.remove(`${resource}\u0000${gram}`);
  }

  /** Drops every list (a schema change, or another process's commit). */
  dropAll(): void {
    for (const key of [...this.lists.keys()]) this.remove(key);
    this.allChangedAt = ++this.clock;
  }

  /** Estimated bytes held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  private checkVersion(): void {
    const v = this.version();
    if (v === this.seenVersion) return;
    this.seenVersion = v;
    this.dropAll();
  }

  /** Least recently used lists go first. */
  private evict(): void {
    for (const oldest of this.lists.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(oldest);
    }
  }

  private remove(key: string): void {
    const list = this.lists.get(key);
    if (!list) return;
    this.lists.delete(key);
    this.bytes -= list.ids.length * 4 + LIST_OVERHEAD;
    const sep = key.indexOf("\u0000");
    this.grams.get(key.slice(0, sep))?.delete(key.slice(sep + 1));
  }
}

/** Where `id` goes in a sorted list: the number of its ids below `id` (the end, most often, is tried first). */
function placeOf(list: List, id: number): number {
  if (list.length === 0 || list.ids[list.length - 1]! < id) return list.length;
  let lo = 0;
  let hi = list.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list.ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Ids held by every list (each sorted ascending), ascending. */
export function intersect(lists: ArrayLike<number>[]): number[] {
  if (!lists.length) return [];
  const [first, second, ...rest] = [...lists].sort((a, b) => a.length - b.length);
  if (!second) {
    const only: number[] = new Array(first!.length);
    for (let i = 0; i < first!.length; i++) only[i] = first![i]!;
    return only;
  }
  let out = meet(first!, second);
  for (const list of rest) {
    if (!out.length) break;
    out = meet(out, list);
  }
  return out;
}

/** Ids in both sorted `a` (the shorter) and `b`: a merge when they are alike in length, else a search in `b` per id of `a`. */
function meet(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  const out: number[] = [];
  if (a.length * 16 < b.length) {
    let lo = 0;
    for (let i = 0; i < a.length; i++) {
      const id = a[i]!;
      let hi = b.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (b[mid]! < id) lo = mid + 1;
        else hi = mid;
      }
      if (lo < b.length && b[lo] === id) out.push(id);
    }
    return out;
  }
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    const id = a[i]!;
    while (j < b.length && b[j]! < id) j++;
    if (j < b.length && b[j] === id) out.push(id);
  }
  return out;
}
