/**
 * Which remembered pages and totals of a resource still hold after a commit of this process that
 * only added rows to it (see CommitMemo.committed), whatever the database. Most creates land
 * outside the pages people read (a new record sorts last by id, or into a year no page shows), so
 * dropping every answer at every commit made the pages of a site under writes cost a query each.
 *
 * - A filter no new row matches leaves its pages and totals as they are.
 * - A total gains the new rows that match its filter.
 * - A page that is not full takes any match. A full page stays when every matching new row sorts
 *   after its last row.
 * - A full page a new row reaches is moved rather than dropped when the rows kept ahead of it (the
 *   pages before it without a gap, and the margin of the first of them) hold what moves into it:
 *   the new rows are placed among the kept rows and every page takes its slice of the result. New
 *   rows that sort before all the kept rows push the pages down by as many rows, each taking its
 *   first rows from what is kept ahead of it. A newest-first list under creates, or a sorted one
 *   whose first pages new records keep joining, then stays in memory instead of being read again
 *   after every commit, as long as its margin lasts.
 * Anything in doubt is dropped: many new rows at once, a value only the database can compare.
 *
 * How a database compares and matches is its `RowJudge` (sqlite-revise.ts, postgres-revise.ts).
 */
import { keysOf, pagesByEnd, rowBytes, type FilterGroup, type FilterTag, type OrderPages, type Revision } from "./memo";
import type { SortKey, StoredRecord } from "./types";

/** More new rows than this (an import) are not worth checking answer by answer: they all go. */
export const MAX_NEW_ROWS = 1000;
/**
 * Work one commit may spend judging filters (new rows × filters judged here, and filters asked of
 * the database); past it, the answers of the remaining filters are dropped unjudged. Without a
 * bound, thousands of cached filters made every create hold the event loop for up to seconds.
 */
const MAX_CHECKS = 20_000;
const MAX_SQL_FILTERS = 16;
/**
 * Orders a commit may ask the database about (collations, casts: one statement each); past it, the
 * reached pages of the remaining ones are dropped unjudged. Any caller may cache pages in as many
 * such orders as it likes.
 */
export const MAX_SQL_ORDERS = 64;

export type Budget = { checks: number; queries: number; orders: number };

/**
 * A new row: its row id, its parsed fields and its stored columns. Where kept rows carry no id
 * (SQLite, whose commits end in id order), a new row's id counts as larger than every kept row's.
 */
export type Fresh = { id: number; data: Record<string, unknown>; row: StoredRecord };

/** A sort key's value when JavaScript can compare it as the database does. */
export type Plain = null | number | string | boolean;
export const UNKNOWN = Symbol("unknown");
export type KeyReader = (row: StoredRecord, data: () => Record<string, unknown>) => Plain | typeof UNKNOWN;

/** How one database matches and orders rows, as far as JavaScript can tell without asking it. */
export interface RowJudge {
  /** The reader of one sort expression (UNKNOWN for what only the database can say). */
  keyReader(expr: string): KeyReader;
  /** The database's order of two non-UNKNOWN values of one key, NULL first. */
  compare(a: Plain, b: Plain): number;
  /** Ids of the new rows `filter` matches, or null when it cannot say (the filter's answers go). */
  matches(filter: FilterTag, fresh: Fresh[], budget: Budget): number[] | null;
  /**
   * Whether any of `matched` sorts no later than the row `last` in `order`, asked of the database;
   * absent where it cannot be asked (the page counts as reached).
   */
  sortsNoLaterBySql?(order: SortKey[], matched: Fresh[], last: StoredRecord, budget: Budget): boolean;
  /**
   * Kept pages carry their rows' ids (StoredRecord.id), and new rows keep theirs when placed: where
   * commits end out of id order, a new row is not always the newest among equal keys.
   */
  readonly rowIds?: boolean;
}

/**
 * A reader of one dialect's filters as plain equalities: per filter text, the fields of its
 * conditions in order, or null when a condition is anything else (`fieldOf` reads one condition).
 * A handful of filter shapes per resource, read on every page and total that misses the cache:
 * each is worked out once.
 */
export function equalityReader(fieldOf: (cond: string) => string | null): (where: string) => readonly string[] | null {
  const shapes = new Map<string, readonly string[] | null>();
  return (where) => {
    if (!where) return [];
    const known = shapes.get(where);
    if (known !== undefined) return known;
    let fields: string[] | null = [];
    for (const cond of where.replace(/^WHERE /, "").split(" AND ")) {
      const field = fieldOf(cond);
      if (field === null) {
        fields = null;
        break;
      }
      fields.push(field);
    }
    if (shapes.size >= 1000) shapes.clear();
    shapes.set(where, fields);
    return fields;
  };
}

/** Charges a filter's judging to the commit's budget: false once it is spent. */
export function charge(budget: Budget, fresh: Fresh[], filter: FilterTag): boolean {
  budget.checks -= fresh.length * Math.max(1, filter.equalities?.length ?? 1);
  return budget.checks >= 0;
}

/**
 * A kept row's stored JSON, parsed once: the last rows of full pages are compared with new rows at
 * every commit, and rows are shared between answers and never changed.
 */
const parsed = new WeakMap<StoredRecord, Record<string, unknown>>();
function dataOf(row: StoredRecord): Record<string, unknown> {
  let d = parsed.get(row);
  if (!d) parsed.set(row, (d = JSON.parse(row.data) as Record<string, unknown>));
  return d;
}

type Page = { key: string; offset: number; end: number; rows: StoredRecord[]; last: StoredRecord; before: StoredRecord[] };

/**
 * How a new row sorts against row `b` on the order's keys: below 0 before, above 0 after, 0 when
 * nothing tells them apart, or only the row ids and `b` carries none; undefined when a key is not
 * plain (only the database can say).
 */
function compareKeys(judge: RowJudge, order: SortKey[], a: Fresh, b: StoredRecord, bData: () => Record<string, unknown>): number | undefined {
  for (const { expr, desc } of order) {
    if (expr === "id") return b.id === undefined ? 0 : desc ? b.id - a.id : a.id - b.id;
    const read = judge.keyReader(expr);
    const x = read(a.row, () => a.data);
    const y = read(b, bData);
    if (x === UNKNOWN || y === UNKNOWN) return undefined;
    const c = judge.compare(x, y);
    if (c !== 0) return desc ? -c : c;
  }
  return 0;
}

/** The row id key of an order, if it has one (it is the last). */
const idKey = (order: SortKey[]) => order.find((k) => k.expr === "id");

/**
 * Does a new row sort no later than an existing row `last`? Judged here when every key is plain,
 * else undefined. The last key is the row id; where `last` carries none, the new row's is larger.
 */
function newSortsNoLater(judge: RowJudge, order: SortKey[], fresh: Fresh, last: StoredRecord, lastData: () => Record<string, unknown>): boolean | undefined {
  const c = compareKeys(judge, order, fresh, last, lastData);
  return c === undefined ? undefined : c !== 0 ? c < 0 : (idKey(order)?.desc ?? true);
}

/** The verdicts on the answers of `groups` after a commit that added `fresh` (all new rows of the resource). */
export function reviseAnswers(judge: RowJudge, fresh: Fresh[], groups: FilterGroup[], valueOf: (key: string) => unknown): Map<string, Revision> {
  const out = new Map<string, Revision>();
  if (!fresh.length) return out;
  if (fresh.length > MAX_NEW_ROWS) {
    for (const g of groups) for (const key of keysOf(g)) out.set(key, "drop");
    return out;
  }
  const byId = new Map(fresh.map((f) => [f.id, f]));
  const budget: Budget = { checks: MAX_CHECKS, queries: MAX_SQL_FILTERS, orders: MAX_SQL_ORDERS };
  for (const g of groups) {
    const matched = judge.matches(g.filter, fresh, budget);
    if (matched === null) {
      for (const key of keysOf(g)) out.set(key, "drop");
      continue;
    }
    if (!matched.length) continue;
    for (const key of g.counts) out.set(key, { value: (valueOf(key) as number) + matched.length });
    // Not full (the end of the list, `limit=0` included), or in no order: a match may join it.
    for (const key of g.partial) out.set(key, "drop");
    const rows = matched.map((id) => byId.get(id)!);
    for (const pages of g.orders.values()) reached(judge, rows, pages, valueOf, budget, out);
  }
  return out;
}

/**
 * Full pages of one filter and order that a matching new row reaches: moved (see movedPages) or
 * dropped, into `out`; the others stay as they are.
 */
function reached(judge: RowJudge, matched: Fresh[], o: OrderPages, valueOf: (key: string) => unknown, budget: Budget, out: Map<string, Revision>): void {
  const { order } = o;
  const refs = pagesByEnd(o);
  if (!refs.length) return;
  const pageAt = (i: number): Page | null => {
    const rows = valueOf(refs[i].key) as StoredRecord[] | undefined;
    return rows?.length ? { key: refs[i].key, offset: refs[i].offset, end: refs[i].end, rows, last: rows[rows.length - 1], before: refs[i].before } : null;
  };
  // In row id order, without ids to compare: new rows come after every full page, or (newest
  // first) before all of them.
  let lo = 0;
  if (order.length === 1 && !judge.rowIds) {
    if (!order[0].desc) return;
  } else {
    // The pages of one filter and order are slices of one list: the later a page's last row, the
    // more new rows sort before it. The first page a new row reaches is found by halving.
    const isReached = (i: number) => {
      const p = pageAt(i);
      // A page not kept any more (it cannot be) counts as reached.
      if (!p) return true;
      const lastData = () => dataOf(p.last);
      let unknown = false;
      for (const m of matched) {
        const v = newSortsNoLater(judge, order, m, p.last, lastData);
        if (v === true) return true;
        if (v === undefined) unknown = true;
      }
      // Only the database can say: asked if it can be, else the page counts as reached (it goes).
      return unknown ? (judge.sortsNoLaterBySql?.(order, matched, p.last, budget) ?? true) : false;
    };
    // Most creates reach no kept page (they sort past the pages people read): the last page tells.
    if (!isReached(refs.length - 1)) return;
    let hi = refs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (isReached(mid)) hi = mid;
      else lo = mid + 1;
    }
  }
  const pages: Page[] = [];
  for (let i = 0; i < refs.length; i++) {
    const p = pageAt(i);
    if (p) pages.push(p);
    else out.set(refs[i].key, "drop");
  }
  const moved = movedPages(judge, order, matched, pages);
  for (let i = lo; i < refs.length; i++) if (!out.has(refs[i].key)) out.set(refs[i].key, moved.get(refs[i].key) ?? "drop");
}

/** The order of two new rows: by their keys, the row id last (plain keys only, else undefined). */
function newBeforeNew(judge: RowJudge, order: SortKey[], a: Fresh, b: Fresh): boolean | undefined {
  const c = compareKeys(judge, order, a, b.row, () => b.data);
  if (c !== 0) return c === undefined ? undefined : c < 0;
  const id = idKey(order);
  return id ? (id.desc ? a.id > b.id : a.id < b.id) : false;
}

/**
 * New values of the full pages of one filter and order that the new rows reach, where they can be
 * worked out from the kept rows themselves: per run of pages that follow each other without a gap,
 * from the margin of its first page on. The run's rows and the new rows are merged (each new row's
 * place found by halving, comparing plain keys here; anything else leaves the run's pages to be
 * dropped), and every page takes its slice and keeps as much of its margin as is still known. New
 * rows that sort before the run's first kept row, past the list's start, push the run down: a page
 * whose first rows are no longer known goes.
 */
function movedPages(judge: RowJudge, order: SortKey[], matched: Fresh[], pages: Page[]): Map<string, Revision> {
  const out = new Map<string, Revision>();
  const byOffset = [...pages].sort((a, b) => a.offset - b.offset);
  let i = 0;
  while (i < byOffset.length) {
    const run = [byOffset[i]];
    while (i + 1 < byOffset.length && byOffset[i + 1].offset === run[run.length - 1].end) run.push(byOffset[++i]);
    i++;
    const margin = run[0].before;
    const rows = margin.length ? [...margin, ...run.flatMap((p) => p.rows)] : run.flatMap((p) => p.rows);
    const start = run[0].offset - margin.length;
    // Each new row's place: the number of kept rows it sorts after.
    const places: { fresh: Fresh; at: number }[] = [];
    let known = true;
    for (const m of matched) {
      let lo = 0;
      let hi = rows.length;
      while (lo < hi && known) {
        const mid = (lo + hi) >> 1;
        const before = newSortsNoLater(judge, order, m, rows[mid], () => dataOf(rows[mid]));
        if (before === undefined) known = false;
        else if (before) hi = mid;
        else lo = mid + 1;
      }
      if (!known) break;
      places.push({ fresh: m, at: lo });
    }
    if (!known) continue;
    // Past the list's start, a new row before the first kept row lands somewhere ahead of the run.
    const ahead = start > 0 ? places.filter((p) => p.at === 0).length : 0;
    const entering = places.filter((p) => p.at < rows.length && !(start > 0 && p.at === 0));
    if (!entering.length && !ahead) continue;
    let ordered = true;
    entering.sort((a, b) => {
      if (a.at !== b.at) return a.at - b.at;
      const before = newBeforeNew(judge, order, a.fresh, b.fresh);
      if (before === undefined) ordered = false;
      return before ? -1 : 1;
    });
    if (!ordered) continue;
    // merged[k] is the row at offset base + k of the list after the commit.
    const merged: StoredRecord[] = [];
    let next = 0;
    for (let k = 0; k <= rows.length; k++) {
      while (next < entering.length && entering[next].at === k) merged.push(stored(entering[next++].fresh, judge.rowIds));
      if (k < rows.length) merged.push(rows[k]);
    }
    const base = start + ahead;
    // Each page's change in size from running sums of the bytes before and after (a run is up to a
    // thousand rows; summing every page's rows again cost more than the merge).
    const old = new Float64Array(rows.length + 1);
    const now = new Float64Array(merged.length + 1);
    for (let k = 0; k < rows.length; k++) old[k + 1] = old[k] + rowBytes(rows[k]);
    for (let k = 0; k < merged.length; k++) now[k + 1] = now[k] + rowBytes(merged[k]);
    for (const [n, p] of run.entries()) {
      const from = p.offset - base;
      if (from < 0) {
        out.set(p.key, "drop");
        continue;
      }
      const to = from + (p.end - p.offset);
      const value = merged.slice(from, to);
      const keep = Math.min(p.before.length, from);
      const before = merged.slice(from - keep, from);
      if (same(value, p.rows) && same(before, p.before)) continue;
      const at = p.offset - start;
      // The first page's margin is the run's first rows; a later page's is its own.
      const had = old[at + p.rows.length] - old[at] + (n === 0 ? old[at] : p.before.reduce((b, r) => b + rowBytes(r), 0));
      out.set(p.key, { value, grow: now[to] - now[from - keep] - had, before });
    }
  }
  return out;
}

/** The same rows, in the same order. */
const same = (a: StoredRecord[], b: StoredRecord[]) => a.length === b.length && a.every((r, k) => r === b[k]);

/** A new row as pages hold it: the stored columns, and the row id where kept rows carry theirs. */
const stored = ({ id, row: r }: Fresh, withId = false): StoredRecord => ({
  uuid: r.uuid, data: r.data, _created: r._created, _modified: r._modified, _created_by: r._created_by, _modified_by: r._modified_by, ...(withId ? { id } : {}),
});
