/**
 * A memo of read answers bounded by bytes, not entries: a long query is keyed by its SHA-256
 * digest (a 12 KB search must not be held once per cached answer), and entries not used lately go once
 * the estimated size of keys and values passes the budget (the CLOCK approximation of LRU: a use
 * only marks the entry; moving it to the end of the Map on every use cost 13 µs per lookup in a
 * Map of 10,000 entries in Bun, whose Map rehashes as the same key leaves and comes back).
 */
import type { SortKey, SqlValue, StoredRecord } from "./types";

const ENTRY_OVERHEAD = 160;
/** Estimated bytes of a cached row beyond its JSON text (uuid, times, object). */
const ROW_OVERHEAD = 240;
/** Estimated bytes a cached row holds. */
export const rowBytes = (r: StoredRecord): number => r.data.length * 2 + ROW_OVERHEAD;
/** Longest query text kept as its own key (characters); a longer one is keyed by its digest. */
const MAX_TEXT_KEY = 512;
/** Estimated bytes of a tag's objects (tag, filter, order, group and index entries), measured in the heap. */
const TAG_OVERHEAD = 480;
/** A stamp's estimated bytes: a parsed snapshot (its running transactions are few) and a row id. */
const STAMP_OVERHEAD = 256;

export class BoundedMemo {
  private readonly entries = new Map<string, { value: unknown; bytes: number; used: boolean }>();
  private used = 0;

  /** `onDrop` hears of every key that leaves (evicted, deleted or cleared), never of a replaced value. */
  constructor(readonly maxBytes: number, private readonly onDrop: (key: string) => void = () => {}) {}

  /**
   * What stands for a query's text in the memo: the text itself when short (most pages and totals;
   * hashing it cost 2.5 % of a server's time under random pages), else its SHA-256 digest. The two
   * never meet: a digest is base64, a text key starts with \u0001.
   */
  static key(...parts: string[]): string {
    let length = 0;
    for (const p of parts) length += p.length + 1;
    if (length <= MAX_TEXT_KEY) return `\u0001${parts.join("\0")}`;
    const h = new Bun.CryptoHasher("sha256");
    for (const p of parts) h.update(p).update("\0");
    return h.digest("base64");
  }

  get<T>(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    e.used = true;
    return e.value as T;
  }

  /** Keeps `value` unless it alone would take more than an eighth of the budget. */
  set(key: string, value: unknown, valueBytes: number): void {
    const bytes = valueBytes + key.length * 2 + ENTRY_OVERHEAD;
    if (bytes > this.maxBytes / 8) return;
    const old = this.entries.get(key);
    if (old) {
      this.used -= old.bytes;
      this.entries.delete(key);
    }
    // Oldest first (Map keeps insertion order); one used since it was last passed gets a second
    // chance at the end. A full pass clears every mark, so this ends.
    while (this.used + bytes > this.maxBytes && this.entries.size) {
      const [k, e] = this.entries.entries().next().value!;
      this.entries.delete(k);
      if (e.used) {
        e.used = false;
        this.entries.set(k, e);
        continue;
      }
      this.used -= e.bytes;
      this.onDrop(k);
    }
    this.entries.set(key, { value, bytes, used: false });
    this.used += bytes;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The value without counting it as a use. */
  peek(key: string): unknown {
    return this.entries.get(key)?.value;
  }

  /** A new value for a kept key: a revised total (same size), or a page whose rows moved (`grow` more bytes). */
  replace(key: string, value: unknown, grow = 0): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.value = value;
    e.bytes += grow;
    this.used += grow;
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.used -= e.bytes;
    this.onDrop(key);
  }

  clear(): void {
    for (const k of this.entries.keys()) this.onDrop(k);
    this.entries.clear();
    this.used = 0;
  }

  /** Estimated bytes held (keys, values and bookkeeping). */
  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * What an answer depends on, so that a commit of this process drops only what it may have changed:
 * - `any`: anything of the resource (dropped whenever it is written);
 * - `rows`: a page of the resource's records (see reviseAnswers: kept across inserts that leave it
 *   as it was, or moved); `before`: rows the store read just ahead of the page, its margin (a page
 *   that new rows push down takes its first rows from there instead of being read again);
 * - `count`: a total of the resource's records (inserts add their matches to it).
 * Pages and totals of one filter share a `filter` group: a commit looks at each group once.
 * An answer without a tag is dropped at every commit.
 */
export type MemoTag =
  | { kind: "any"; resource: string }
  | { kind: "rows"; resource: string; filter: FilterTag; order?: SortKey[]; orderKey: string; offset: number; limit: number; full: boolean; before?: StoredRecord[] }
  | { kind: "count"; resource: string; filter: FilterTag };

/**
 * A filter as SQL, and as plain equalities of fields to values when it is only that (then a new
 * row is judged without asking SQLite). `key` names the group.
 */
export type FilterTag = { key: string; where: string; args: SqlValue[]; equalities: { field: string; value: SqlValue }[] | null; bytes: number };

/**
 * The remembered answers of one filter, as a commit judges them: its totals; the pages that may
 * end the list (not full, or without an order: any new match changes them); and the full pages of
 * each order (by `orderKey`), which are slices of one list.
 */
export type FilterGroup = { filter: FilterTag; counts: Set<string>; partial: Set<string>; orders: Map<string, OrderPages> };

/** The tag of a filter; `equalities`: the dialect's reading of it as plain equalities. */
export function filterTag(q: { where: string; args: SqlValue[] }, equalities: (where: string, args: SqlValue[]) => FilterTag["equalities"]): FilterTag {
  const args = JSON.stringify(q.args);
  return { key: BoundedMemo.key(q.where, args), where: q.where, args: q.args, equalities: equalities(q.where, q.args), bytes: (q.where.length + args.length) * 2 };
}

type PageTag = Extract<MemoTag, { kind: "rows" }>;
/** A page kept among its order's full pages (else among the partial ones). */
const ordered = (tag: PageTag): tag is PageTag & { order: SortKey[] } => tag.full && tag.order !== undefined;

/**
 * The full pages of one filter in one order. `byEnd` lists them by where they end (the later a
 * page ends, the more new rows sort before its last row): worked out again only after a page came
 * or went, not at every commit.
 */
export type OrderPages = { order: SortKey[]; pages: Map<string, PageRef>; byEnd: PageRef[] | null };
/** A kept page: where it starts and ends in its list, and its margin (the rows just ahead of it, in order). */
export type PageRef = { key: string; offset: number; end: number; before: StoredRecord[] };

/** A group without the answers `keys` (a copy: the group itself stays as it is). */
function without(g: FilterGroup, keys: Set<string>): FilterGroup {
  const keep = (key: string) => !keys.has(key);
  return {
    filter: g.filter,
    counts: new Set([...g.counts].filter(keep)),
    partial: new Set([...g.partial].filter(keep)),
    orders: new Map([...g.orders].map(([k, o]) => [k, { order: o.order, pages: new Map([...o.pages].filter(([key]) => keep(key))), byEnd: null }])),
  };
}

/** Every key of a group, in an array of its own (the group may change while it is gone through). */
export function keysOf(g: FilterGroup): string[] {
  const keys = [...g.counts, ...g.partial];
  for (const o of g.orders.values()) for (const key of o.pages.keys()) keys.push(key);
  return keys;
}

/** Full pages of an order, by where they end (then where they start). */
export function pagesByEnd(o: OrderPages): PageRef[] {
  return (o.byEnd ??= [...o.pages.values()].sort((a, b) => a.end - b.end || a.offset - b.offset));
}

/**
 * RESD_CACHE_MAX_BYTES's default: a seventh holds single records (SQLite's RecordCache, 16 MiB);
 * of the rest, two thirds pages and totals (64 MiB), a third SQLite's kept search lists (GramLists).
 */
export const DEFAULT_CACHE_BYTES = 112 * 1024 * 1024;
/** The single records' share of the cache budget. */
export const recordShare = (cacheBytes: number) => Math.floor(cacheBytes / 7);
/** The memo's share of the cache budget. */
export const memoShare = (cacheBytes: number) => {
  const rest = cacheBytes - recordShare(cacheBytes);
  return rest - Math.floor(rest / 3);
};
/** The kept search lists' share of the cache budget: what the records and the memo leave. */
export const listShare = (cacheBytes: number) => cacheBytes - recordShare(cacheBytes) - memoShare(cacheBytes);

/** What a commit of this process wrote to one resource: rows above `newAbove` only, or anything. */
export type ResourceWrite = { newAbove: number } | "rewritten";

/**
 * A commit's verdict on one answer it changed: drop it, or keep this value instead, `grow` bytes
 * larger than the one it replaces (a page's new margin counted in), with a page's new margin
 * `before` where it changed (others stay as they are).
 */
export type Revision = "drop" | { value: unknown; grow?: number; before?: StoredRecord[] };

export type Reviser = (resource: string, newAbove: number, groups: FilterGroup[], valueOf: (key: string) => unknown) => Map<string, Revision>;

/**
 * Whether an answer computed since commit `epoch` of this process (CommitMemo.commits) may be kept
 * as it is, kept only until its resource is written ("loose": it already holds a commit that has
 * not been revised into the kept answers), or not kept. Without one, an answer computed across a
 * commit is not kept.
 */
export type Settle<T> = (value: T, epoch: number) => "keep" | "loose" | "skip";

/** What a kept answer was read in (`remember`'s `stamp`), ranked: a later read never ranks lower. */
export type Stamp = { readonly rank: number };

/**
 * How a commit of another process is judged by the kept answers' stamps (CommitMemo.committed):
 * `verdict` says whether an answer stamped so takes the commit's rows ("revise"), holds them already
 * (it was read after the commit: "keep", left as it is) or cannot say (no stamp: "drop"). Every
 * answer whose stamp ranks at most `takenUpTo` takes them: when the newest kept stamp does, none is
 * judged one by one (going through some 400 pages at every commit of another instance cost 7 % of
 * an event loop).
 */
export type StampJudge = { verdict: (stamp: Stamp | undefined) => "revise" | "keep" | "drop"; takenUpTo: number };

/** When a miss began: the version of other processes' commits and this process's commits so far. */
export type MissStart = { version: number; epoch: number };

/**
 * Cached answers and what they depend on. A commit of another process or connection (`version()`
 * changes) drops every answer; a commit of this process (`committed`) drops the untagged ones and
 * lets a reviser judge the tagged ones of each resource it wrote.
 */
export class CommitMemo {
  private readonly memo: BoundedMemo;
  private memoVersion = -1;
  /** Bumped by every commit of this process: an answer computed across one is not kept. */
  private epoch = 0;
  private readonly tags = new Map<string, MemoTag>();
  /** Per resource: answers tagged `any`, and the groups of pages and totals by filter. */
  private readonly anyOf = new Map<string, Set<string>>();
  private readonly groupsOf = new Map<string, Map<string, FilterGroup>>();
  /** Kept answers without a tag: every commit drops them. */
  private readonly untagged = new Set<string>();
  /** What a kept answer was read in, where its caller said (`remember`'s `stamp`): judged when another instance's commit is revised. */
  private readonly stamps = new Map<string, Stamp>();
  /** The highest rank of a stamp kept since the answers were last cleared (it does not fall as answers go). */
  private topRank = -Infinity;
  /** Kept pages and totals without a stamp: a commit of another process drops them (they cannot tell whether they saw it). */
  private readonly unstamped = new Set<string>();
  /** Misses being computed, shared by requests that ask the same meanwhile. */
  private readonly inflight = new Map<string, { version: number; epoch: number; value: Promise<unknown> }>();

  constructor(maxBytes: number, private readonly version: () => number) {
    this.memo = new BoundedMemo(maxBytes, (key) => this.untag(key));
  }

  private untag(key: string): void {
    this.untagged.delete(key);
    this.stamps.delete(key);
    this.unstamped.delete(key);
    const tag = this.tags.get(key);
    if (!tag) return;
    this.tags.delete(key);
    if (tag.kind === "any") {
      this.anyOf.get(tag.resource)?.delete(key);
      return;
    }
    const groups = this.groupsOf.get(tag.resource);
    const g = groups?.get(tag.filter.key);
    if (!g) return;
    if (tag.kind === "count") g.counts.delete(key);
    else if (!ordered(tag)) g.partial.delete(key);
    else {
      const o = g.orders.get(tag.orderKey)!;
      o.pages.delete(key);
      o.byEnd = null;
      if (!o.pages.size) g.orders.delete(tag.orderKey);
    }
    if (!g.counts.size && !g.partial.size && !g.orders.size) groups!.delete(tag.filter.key);
  }

  /** The kept page `key` among its order's full pages. */
  private refOf(key: string): PageRef | undefined {
    const tag = this.tags.get(key);
    if (tag?.kind !== "rows") return undefined;
    return this.groupsOf.get(tag.resource)?.get(tag.filter.key)?.orders.get(tag.orderKey)?.pages.get(key);
  }

  private tag(key: string, tag: MemoTag | undefined): void {
    // A key kept again (its value replaced) leaves its old place in its group first.
    this.untag(key);
    if (!tag) {
      this.untagged.add(key);
      return;
    }
    this.tags.set(key, tag);
    if (tag.kind === "any") {
      let keys = this.anyOf.get(tag.resource);
      if (!keys) this.anyOf.set(tag.resource, (keys = new Set()));
      keys.add(key);
      return;
    }
    let groups = this.groupsOf.get(tag.resource);
    if (!groups) this.groupsOf.set(tag.resource, (groups = new Map()));
    let g = groups.get(tag.filter.key);
    if (!g) groups.set(tag.filter.key, (g = { filter: tag.filter, counts: new Set(), partial: new Set(), orders: new Map() }));
    if (tag.kind === "count") g.counts.add(key);
    else if (!ordered(tag)) g.partial.add(key);
    else {
      let o = g.orders.get(tag.orderKey);
      if (!o) g.orders.set(tag.orderKey, (o = { order: tag.order, pages: new Map(), byEnd: null }));
      o.pages.set(key, { key, offset: tag.offset, end: tag.offset + tag.limit, before: tag.before ?? [] });
      o.byEnd = null;
    }
  }

  private clear(): void {
    this.memo.clear();
    this.inflight.clear();
    this.tags.clear();
    this.anyOf.clear();
    this.groupsOf.clear();
    this.untagged.clear();
    this.stamps.clear();
    this.unstamped.clear();
    this.topRank = -Infinity;
  }

  /** Commits of this process so far. */
  get commits(): number {
    return this.epoch;
  }

  /** The kept answer of `key`, if any, without computing one: for a caller that cannot wait. */
  peek<T>(key: string): T | undefined {
    return this.version() === this.memoVersion ? this.memo.get<T>(key) : undefined;
  }

  /**
   * A memo of one answer, computed on a miss (once, however many ask meanwhile); `size` estimates
   * the bytes it holds, or null when it is not worth keeping; `tagOf` says what it depends on. An
   * answer computed across a commit is not kept, unless `settle` knows better (see Settle).
   */
  async remember<T>(key: string, compute: () => Promise<T>, size: (v: T) => number | null = () => 16, tagOf?: (v: T) => MemoTag, settle?: Settle<T>, stamp?: () => Stamp | undefined): Promise<T> {
    const version = this.version();
    if (version !== this.memoVersion) {
      this.clear();
      this.memoVersion = version;
    }
    const hit = this.memo.get<T>(key);
    if (hit !== undefined) return hit;
    const epoch = this.epoch;
    const running = this.inflight.get(key);
    if (running && running.version === version && running.epoch === epoch) return running.value as Promise<T>;
    const value = compute();
    this.inflight.set(key, { version, epoch, value });
    try {
      const v = await value;
      this.keep(key, v, { version, epoch }, size(v), tagOf && (() => tagOf(v)), settle, stamp);
      return v;
    } finally {
      if (this.inflight.get(key)?.value === value) this.inflight.delete(key);
    }
  }

  /** Where a miss being computed now stands: answers read alongside it are judged from there. */
  begun(): MissStart {
    return { version: this.version(), epoch: this.epoch };
  }

  /**
   * Keeps an answer that the statement of a miss begun at `at` read alongside it (the pages after a
   * page, read ahead), judged as that miss is; an answer kept already stays as it is.
   */
  alongside<T>(key: string, value: T, at: MissStart, bytes: number | null, tag: MemoTag, settle: Settle<T>, stamp?: () => Stamp | undefined): void {
    if (at.version !== this.memoVersion || this.memo.has(key)) return;
    this.keep(key, value, at, bytes, () => tag, settle, stamp);
  }

  private keep<T>(key: string, v: T, at: MissStart, bytes: number | null, tagOf?: () => MemoTag, settle?: Settle<T>, stamp?: () => Stamp | undefined): void {
    const verdict = bytes === null || this.version() !== at.version || this.memoVersion !== at.version ? "skip"
      : settle ? settle(v, at.epoch) : this.epoch === at.epoch ? "keep" : "skip";
    if (bytes === null || verdict === "skip") return;
    let tag = tagOf?.();
    // Ahead of the answers kept (it saw a commit not revised yet): kept until the resource is written.
    if (verdict === "loose" && tag && tag.kind !== "any") tag = { kind: "any", resource: tag.resource };
    const stamped = stamp?.();
    // A tag holds its filter's text and its bookkeeping, a stamp its snapshot: they count towards the budget too.
    this.memo.set(key, v, bytes + (tag ? TAG_OVERHEAD + (tag.kind !== "any" ? tag.filter.bytes : 0) : 0) + (stamped !== undefined ? STAMP_OVERHEAD : 0));
    if (this.memo.has(key)) {
      this.tag(key, tag);
      if (stamped !== undefined) {
        this.stamps.set(key, stamped);
        if (stamped.rank > this.topRank) this.topRank = stamped.rank;
      } else if (tag && tag.kind !== "any") this.unstamped.add(key);
    }
  }

  /**
   * A commit of this process: untagged answers go, answers of resources it did not write stay, and
   * `revise` judges the pages and totals of each resource that only gained rows. Runs right after
   * the commit, before any writer hears of it, so nobody reads an answer from before their own write.
   * A commit of another process comes with a `judge` (see StampJudge).
   */
  committed(writes: Map<string, ResourceWrite>, revise: Reviser, judge?: StampJudge): void {
    this.epoch++;
    this.inflight.clear();
    for (const key of [...this.untagged]) this.memo.delete(key);
    for (const [resource, w] of writes) {
      for (const key of [...(this.anyOf.get(resource) ?? [])]) this.memo.delete(key);
      const groups = this.groupsOf.get(resource);
      if (!groups?.size) continue;
      if (w === "rewritten") {
        for (const g of [...groups.values()]) for (const key of keysOf(g)) this.memo.delete(key);
        continue;
      }
      // Another process's commit that some kept answer may have seen: each is judged by its stamp.
      // Else all take its rows, bar the unstamped, which cannot tell.
      const oneByOne = judge !== undefined && this.topRank > judge.takenUpTo;
      if (judge && !oneByOne) for (const key of [...this.unstamped]) if (this.tags.get(key)?.resource === resource) this.memo.delete(key);
      let revised = [...groups.values()];
      if (judge && oneByOne) {
        const held = new Set<string>();
        const holding = new Set<FilterGroup>();
        for (const g of revised) {
          for (const key of keysOf(g)) {
            const verdict = judge.verdict(this.stamps.get(key));
            if (verdict === "drop") this.memo.delete(key);
            else if (verdict === "keep") {
              held.add(key);
              holding.add(g);
            }
          }
        }
        revised = [...groups.values()];
        // Answers holding the rows already stay out of the revision: a run of pages is cut there.
        if (held.size) revised = revised.map((g) => (holding.has(g) ? without(g, held) : g));
      }
      if (!revised.length) continue;
      const verdicts = revise(resource, w.newAbove, revised, (key) => this.memo.peek(key));
      for (const [key, verdict] of verdicts) {
        if (verdict === "drop") this.memo.delete(key);
        else {
          this.memo.replace(key, verdict.value, verdict.grow);
          if (verdict.before) this.refOf(key)!.before = verdict.before;
        }
      }
    }
  }

  /** Drops every answer (a schema change: the SQL of every answer may mean something else now). */
  dropAll(): void {
    this.epoch++;
    this.clear();
  }

  /** Estimated bytes held now. */
  get bytes(): number {
    return this.memo.bytes;
  }
}
