/**
 * Which remembered pages and totals of a resource still hold after a commit of this process that
 * only added rows to it (see CommitMemo.committed). Most creates land outside the pages people
 * read (a new record sorts last by id, or into a year no page shows), so dropping every answer at
 * every commit made the pages of a site under writes cost a query each.
 *
 * - A filter no new row matches leaves its pages and totals as they are. Plain equalities are
 *   judged on the new rows' values here (as SQLite compares them); any other filter asks SQLite.
 * - A total gains the new rows that match its filter.
 * - A page that is not full takes any match. A full page stays when every matching new row sorts
 *   after its last row (compared here for plain keys, else in SQL with the order's own expressions
 *   and collations).
 * - A full page a new row reaches is moved rather than dropped when the pages kept before it reach
 *   back to the start of the list, or no new row sorts before the first of them: the new rows are
 *   placed among the kept rows (compared here) and every page takes its slice of the result. A
 *   newest-first list under creates, or a sorted one whose first pages new records keep joining,
 *   then stays in memory instead of being read again after every commit.
 * Anything in doubt is dropped: many new rows at once, a last row not found.
 */
import type { Database, Statement } from "bun:sqlite";
import { COLS } from "./sqlite-reads";
import { keysOf, pagesByEnd, rowBytes, type FilterGroup, type FilterTag, type OrderPages, type Revision } from "./memo";
import type { SortKey, SqlValue, StoredRecord } from "./types";

/** More new rows than this (an import) are not worth checking answer by answer: they all go. */
const MAX_NEW_ROWS = 1000;
/**
 * Work one commit may spend judging filters (new rows × filters judged here, and filters asked of
 * SQLite); past it, the answers of the remaining filters are dropped unjudged. Without a bound,
 * thousands of cached filters made every create hold the event loop for up to seconds.
 */
const MAX_CHECKS = 20_000;
const MAX_SQL_FILTERS = 16;
/**
 * Orders a commit may ask SQLite about (collations, casts: one statement each); past it, the
 * reached pages of the remaining ones are dropped unjudged. Any caller may cache pages in as many
 * such orders as it likes.
 */
export const MAX_SQL_ORDERS = 64;

type Budget = { checks: number; queries: number; orders: number };

const condition = (where: string) => (where ? `(${where.replace(/^WHERE /, "")})` : "1");

/** A field's value as the dialect writes it (`json_extract(data, '$."field"')`): the field's name, or null. */
const FIELD = /^json_extract\(data, '\$\."([A-Za-z0-9_]+)"'\)$/;
const fieldOf = (expr: string) => FIELD.exec(expr)?.[1] ?? null;

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

/**
 * The fields of a filter made only of plain equalities (`json_extract(data, '$."field"') = ?`, as
 * compileCondition writes them, one value each), in order; null for any other filter.
 */
export function equalityFields(where: string): readonly string[] | null {
  if (!where) return [];
  // A handful of filter shapes per resource, read on every page and total that misses the cache.
  const known = shapes.get(where);
  if (known !== undefined) return known;
  let fields: string[] | null = [];
  for (const cond of where.replace(/^WHERE /, "").split(" AND ")) {
    const field = cond.endsWith(" = ?") ? fieldOf(cond.slice(0, -4)) : null;
    if (field === null) {
      fields = null;
      break;
    }
    fields.push(field);
  }
  if (shapes.size >= 1000) shapes.clear();
  shapes.set(where, fields);
  return fields;
}
const shapes = new Map<string, readonly string[] | null>();

/** The filter as plain equalities of fields to values JavaScript compares as SQLite does, if it is only that. */
export function equalitiesOf(where: string, args: SqlValue[]): FilterTag["equalities"] {
  const fields = equalityFields(where);
  if (!fields || fields.length !== args.length) return null;
  const plainValue = (v: SqlValue) => typeof v === "string" || (typeof v === "number" && Number.isSafeInteger(v));
  return args.every(plainValue) ? fields.map((field, i) => ({ field, value: args[i] })) : null;
}

/**
 * What `json_extract(data, '$."f"') = value` gives for a stored row, or undefined when only SQLite
 * can say (a value that is a list or an object, a number past 2^53).
 */
function equals(data: Record<string, unknown>, field: string, value: SqlValue): boolean | undefined {
  const v = data[field];
  if (v === undefined || v === null) return false;
  if (typeof v === "boolean") return typeof value === "number" && value === (v ? 1 : 0);
  if (typeof v === "number") return Number.isSafeInteger(v) || !Number.isInteger(v) ? typeof value === "number" && v === value : undefined;
  if (typeof v === "string") return typeof value === "string" && v === value;
  return undefined;
}

/**
 * "Row of `t` sorts before or level with row `l`" for an order, as SQL: l's keys are the columns
 * l.k0…, t's are the expressions themselves. SQLite sorts NULL first ascending and last descending.
 */
function sortsNoLater(order: SortKey[], i = 0): string {
  if (i === order.length) return "1";
  const { expr, desc } = order[i];
  const e = `(${expr})`;
  const k = `l.k${i}`;
  const before = desc ? `(${e} IS NOT NULL AND (${k} IS NULL OR ${e} > ${k}))` : `(${k} IS NOT NULL AND (${e} IS NULL OR ${e} < ${k}))`;
  return `(${before} OR (${e} IS ${k} AND ${sortsNoLater(order, i + 1)}))`;
}

type Page = { key: string; offset: number; end: number; rows: StoredRecord[]; last: StoredRecord };
type Fresh = { id: number; data: Record<string, unknown>; row: StoredRecord };

/** A value as SQLite holds it, when JavaScript compares it the same way: null, a number, or text without surrogate pairs. */
type Plain = null | number | string;
const UNKNOWN = Symbol("unknown");

function plain(v: unknown): Plain | typeof UNKNOWN {
  if (v === undefined || v === null) return null;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return Number.isSafeInteger(v) || !Number.isInteger(v) ? v : UNKNOWN;
  // UTF-16 order is code point order (SQLite's BINARY order of UTF-8) unless surrogates are involved.
  if (typeof v === "string") return /[\ud800-\udfff]/.test(v) ? UNKNOWN : v;
  return UNKNOWN;
}

/** SQLite's order of plain values: NULL, then numbers, then text (BINARY). */
function compare(a: Plain, b: Plain): number {
  const rank = (v: Plain) => (v === null ? 0 : typeof v === "number" ? 1 : 2);
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb || ra === 0) return ra - rb;
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

const COLUMN = /^(_created|_modified|_created_by|_modified_by)$/;

type KeyReader = (row: StoredRecord, data: () => Record<string, unknown>) => Plain | typeof UNKNOWN;
/** How each sort expression is read from a row (a handful per site): worked out once, not per comparison. */
const readers = new Map<string, KeyReader>();

/** The reader of one sort key of a row: UNKNOWN when only SQLite can say (collations, casts, translations). */
function keyReader(expr: string): KeyReader {
  let read = readers.get(expr);
  if (read) return read;
  const f = fieldOf(expr);
  read = f !== null ? (_row, data) => plain(data()[f])
    : COLUMN.test(expr) ? (row) => plain(row[expr as keyof StoredRecord])
    : () => UNKNOWN;
  if (readers.size >= 1000) readers.clear();
  readers.set(expr, read);
  return read;
}

/**
 * How a new row sorts against row `b` on the order's keys up to the row id: below 0 before, above
 * 0 after, 0 when only the row ids (or nothing) tell them apart; undefined when a key is not plain
 * (only SQLite can say).
 */
function compareKeys(order: SortKey[], a: Fresh, b: StoredRecord, bData: () => Record<string, unknown>): number | undefined {
  for (const { expr, desc } of order) {
    if (expr === "id") return 0;
    const read = keyReader(expr);
    const x = read(a.row, () => a.data);
    const y = read(b, bData);
    if (x === UNKNOWN || y === UNKNOWN) return undefined;
    const c = compare(x, y);
    if (c !== 0) return desc ? -c : c;
  }
  return 0;
}

/** The row id key of an order, if it has one (it is the last). */
const idKey = (order: SortKey[]) => order.find((k) => k.expr === "id");

/**
 * Does a new row sort no later than an existing row `last`? Judged here when every key is plain,
 * else undefined. The last key is the row id, and a new row's id is larger than any existing one.
 */
function newSortsNoLater(order: SortKey[], fresh: Fresh, last: StoredRecord, lastData: () => Record<string, unknown>): boolean | undefined {
  const c = compareKeys(order, fresh, last, lastData);
  return c === undefined ? undefined : c !== 0 ? c < 0 : (idKey(order)?.desc ?? true);
}

export function reviseAnswers(db: Database, table: string, newAbove: number, groups: FilterGroup[], valueOf: (key: string) => unknown): Map<string, Revision> {
  const out = new Map<string, Revision>();
  // NOT INDEXED: the new rows by their row ids, never a walk of some index of the filter (30 ms on 1M).
  const added = db.query(`SELECT id, ${COLS} FROM ${table} NOT INDEXED WHERE id > ? LIMIT ?`).all(newAbove, MAX_NEW_ROWS + 1) as (StoredRecord & { id: number })[];
  if (!added.length) return out;
  if (added.length > MAX_NEW_ROWS) {
    for (const g of groups) for (const key of keysOf(g)) out.set(key, "drop");
    return out;
  }
  const fresh: Fresh[] = added.map((r) => ({ id: r.id, data: JSON.parse(r.data) as Record<string, unknown>, row: r }));
  const byId = new Map(fresh.map((f) => [f.id, f]));
  const budget: Budget = { checks: MAX_CHECKS, queries: MAX_SQL_FILTERS, orders: MAX_SQL_ORDERS };
  for (const g of groups) {
    const matched = matches(db, table, newAbove, g.filter, fresh, budget);
    if (matched === null) {
      for (const key of keysOf(g)) out.set(key, "drop");
      continue;
    }
    if (!matched.length) continue;
    for (const key of g.counts) out.set(key, { value: (valueOf(key) as number) + matched.length });
    // Not full (the end of the list, `limit=0` included), or in no order: a match may join it.
    for (const key of g.partial) out.set(key, "drop");
    const rows = matched.map((id) => byId.get(id)!);
    for (const pages of g.orders.values()) reached(db, table, rows, pages, valueOf, budget, out);
  }
  return out;
}

/** Ids of the new rows the filter matches, or null once the commit's budget is spent. */
function matches(db: Database, table: string, newAbove: number, filter: FilterTag, fresh: Fresh[], budget: Budget): number[] | null {
  budget.checks -= fresh.length * Math.max(1, filter.equalities?.length ?? 1);
  if (budget.checks < 0) return null;
  if (filter.equalities) {
    const ids: number[] = [];
    let judged = true;
    for (const row of fresh) {
      let all: boolean | undefined = true;
      for (const { field, value } of filter.equalities) {
        all = equals(row.data, field, value);
        if (all !== true) break;
      }
      if (all === undefined) judged = false;
      else if (all) ids.push(row.id);
    }
    if (judged) return ids;
  }
  if (--budget.queries < 0) return null;
  return (db.query(`SELECT id FROM ${table} NOT INDEXED WHERE id > ? AND ${condition(filter.where)}`).all(newAbove, ...(filter.args as never[])) as { id: number }[]).map((r) => r.id);
}

/**
 * Full pages of one filter and order that a matching new row reaches: moved (see movedPages) or
 * dropped, into `out`; the others stay as they are.
 */
function reached(db: Database, table: string, matched: Fresh[], o: OrderPages, valueOf: (key: string) => unknown, budget: Budget, out: Map<string, Revision>): void {
  const { order } = o;
  const refs = pagesByEnd(o);
  if (!refs.length) return;
  const pageAt = (i: number): Page | null => {
    const rows = valueOf(refs[i].key) as StoredRecord[] | undefined;
    return rows?.length ? { key: refs[i].key, offset: refs[i].offset, end: refs[i].end, rows, last: rows[rows.length - 1] } : null;
  };
  // Insertion order: new rows come after every full page, or (newest first) before all of them.
  let lo = 0;
  if (order.length === 1) {
    if (!order[0].desc) return;
  } else {
    // The pages of one filter and order are slices of one list: the later a page's last row, the
    // more new rows sort before it. The first page a new row reaches is found by halving.
    let ids: string | null = null;
    let stmt: Statement | null = null;
    const bySql = (p: Page) => {
      // Past the commit's budget, a page counts as reached (it goes; a later read asks again).
      if (!stmt && --budget.orders < 0) return true;
      stmt ??= db.query(`SELECT EXISTS (SELECT 1 FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) AND ${sortsNoLater(order)}) AS hit
          FROM (SELECT ${order.map((k, i) => `(${k.expr}) AS k${i}`).join(", ")} FROM ${table} WHERE uuid = ?) AS l`);
      // A last row not found (it cannot be, all pages being of the same state) counts as reached.
      return ((stmt.get((ids ??= JSON.stringify(matched.map((m) => m.id))), p.last.uuid) as { hit: number } | null)?.hit ?? 1) === 1;
    };
    const isReached = (i: number) => {
      const p = pageAt(i);
      // A page not kept any more (it cannot be) counts as reached.
      if (!p) return true;
      const lastData = () => dataOf(p.last);
      let unknown = false;
      for (const m of matched) {
        const v = newSortsNoLater(order, m, p.last, lastData);
        if (v === true) return true;
        if (v === undefined) unknown = true;
      }
      return unknown ? bySql(p) : false;
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
  const moved = movedPages(order, matched, pages);
  for (let i = lo; i < refs.length; i++) if (!out.has(refs[i].key)) out.set(refs[i].key, moved.get(refs[i].key) ?? "drop");
}

/** The order of two new rows: by their keys, the row id last (plain keys only, else undefined). */
function newBeforeNew(order: SortKey[], a: Fresh, b: Fresh): boolean | undefined {
  const c = compareKeys(order, a, b.row, () => b.data);
  if (c !== 0) return c === undefined ? undefined : c < 0;
  const id = idKey(order);
  return id ? (id.desc ? a.id > b.id : a.id < b.id) : false;
}

/**
 * New values of the full pages of one filter and order that the new rows reach, where they can be
 * worked out from the kept pages themselves: per run of pages that follow each other without a
 * gap, when the run starts the list or no new row sorts before its first row. The rows of the run
 * and the new rows are merged (each new row's place found by halving, comparing plain keys here;
 * anything else leaves the run's pages to be dropped), and every page takes its slice.
 */
function movedPages(order: SortKey[], matched: Fresh[], pages: Page[]): Map<string, Revision> {
  const out = new Map<string, Revision>();
  const byOffset = [...pages].sort((a, b) => a.offset - b.offset);
  let i = 0;
  while (i < byOffset.length) {
    const run = [byOffset[i]];
    while (i + 1 < byOffset.length && byOffset[i + 1].offset === run[run.length - 1].end) run.push(byOffset[++i]);
    i++;
    const rows = run.flatMap((p) => p.rows);
    const start = run[0].offset;
    // Each new row's place: the number of kept rows it sorts after.
    const places: { fresh: Fresh; at: number }[] = [];
    let known = true;
    for (const m of matched) {
      let lo = 0;
      let hi = rows.length;
      while (lo < hi && known) {
        const mid = (lo + hi) >> 1;
        const before = newSortsNoLater(order, m, rows[mid], () => dataOf(rows[mid]));
        if (before === undefined) known = false;
        else if (before) hi = mid;
        else lo = mid + 1;
      }
      if (!known) break;
      places.push({ fresh: m, at: lo });
    }
    // A new row before the run's first row, past the list's start: what moves in ahead of it is not kept here.
    if (!known || (start > 0 && places.some((p) => p.at === 0))) continue;
    const entering = places.filter((p) => p.at < rows.length);
    if (!entering.length) continue;
    let ordered = true;
    entering.sort((a, b) => {
      if (a.at !== b.at) return a.at - b.at;
      const before = newBeforeNew(order, a.fresh, b.fresh);
      if (before === undefined) ordered = false;
      return before ? -1 : 1;
    });
    if (!ordered) continue;
    const merged: StoredRecord[] = [];
    let next = 0;
    for (let k = 0; k <= rows.length; k++) {
      while (next < entering.length && entering[next].at === k) merged.push(stored(entering[next++].fresh.row));
      if (k < rows.length) merged.push(rows[k]);
    }
    // Each page's change in size from running sums of the run's bytes before and after (a run is up
    // to a thousand rows; summing every page's rows again cost more than the merge).
    const before = new Float64Array(rows.length + 1);
    const after = new Float64Array(rows.length + 1);
    for (let k = 0; k < rows.length; k++) {
      before[k + 1] = before[k] + rowBytes(rows[k]);
      after[k + 1] = after[k] + rowBytes(merged[k]);
    }
    for (const p of run) {
      const from = p.offset - start;
      const to = p.end - start;
      const value = merged.slice(from, to);
      if (value.every((r, k) => r === p.rows[k])) continue;
      out.set(p.key, { value, grow: after[to] - after[from] - (before[to] - before[from]) });
    }
  }
  return out;
}

/** A new row as pages hold it: the stored columns, without the row id. */
const stored = (r: StoredRecord & { id?: number }): StoredRecord => ({
  uuid: r.uuid, data: r.data, _created: r._created, _modified: r._modified, _created_by: r._created_by, _modified_by: r._modified_by,
});
