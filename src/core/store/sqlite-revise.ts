/**
 * SQLite's side of revising remembered answers after a commit of this process that only added rows
 * (revise.ts holds the rest): the new rows read by their row ids, values compared as SQLite
 * compares them, and what JavaScript cannot judge (filters other than plain equalities, orders
 * with collations or casts) asked of SQLite itself.
 */
import type { Database, Statement } from "bun:sqlite";
import { COLS } from "./sqlite-reads";
import { keysOf, type FilterGroup, type FilterTag, type Revision } from "./memo";
import { charge, equalityReader, MAX_NEW_ROWS, reviseAnswers as reviseWith, UNKNOWN, type Budget, type Fresh, type KeyReader, type Plain, type RowJudge } from "./revise";
import type { SortKey, SqlValue, StoredRecord } from "./types";

export { MAX_SQL_ORDERS } from "./revise";

const condition = (where: string) => (where ? `(${where.replace(/^WHERE /, "")})` : "1");

/** A field's value as the dialect writes it (`json_extract(data, '$."field"')`): the field's name, or null. */
const FIELD = /^json_extract\(data, '\$\."([A-Za-z0-9_]+)"'\)$/;
const fieldOf = (expr: string) => FIELD.exec(expr)?.[1] ?? null;

/**
 * The fields of a filter made only of plain equalities (`json_extract(data, '$."field"') = ?`, as
 * compileCondition writes them, one value each), in order; null for any other filter.
 */
export const equalityFields = equalityReader((cond) => (cond.endsWith(" = ?") ? fieldOf(cond.slice(0, -4)) : null));

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

/** A value as SQLite holds it, when JavaScript compares it the same way: null, a number, or text without surrogate pairs. */
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

/** SQLite's judge for the commit of new rows above row id `newAbove` of `table`. */
function sqliteJudge(db: Database, table: string, newAbove: number): RowJudge {
  // Statements of the orders asked about, one per order (per commit).
  const orderStmts = new Map<SortKey[], Statement>();
  const idsOf = new Map<Fresh[], string>();
  return {
    keyReader,
    compare,
    matches(filter, fresh, budget) {
      if (!charge(budget, fresh, filter)) return null;
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
    },
    sortsNoLaterBySql(order: SortKey[], matched: Fresh[], last: StoredRecord, budget: Budget) {
      let stmt = orderStmts.get(order);
      // Past the commit's budget, a page counts as reached (it goes; a later read asks again).
      if (!stmt) {
        if (--budget.orders < 0) return true;
        stmt = db.query(`SELECT EXISTS (SELECT 1 FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) AND ${sortsNoLater(order)}) AS hit
          FROM (SELECT ${order.map((k, i) => `(${k.expr}) AS k${i}`).join(", ")} FROM ${table} WHERE uuid = ?) AS l`);
        orderStmts.set(order, stmt);
      }
      let ids = idsOf.get(matched);
      if (ids === undefined) idsOf.set(matched, (ids = JSON.stringify(matched.map((m) => m.id))));
      // A last row not found (it cannot be, all pages being of the same state) counts as reached.
      return ((stmt.get(ids, last.uuid) as { hit: number } | null)?.hit ?? 1) === 1;
    },
  };
}

export function reviseAnswers(db: Database, table: string, newAbove: number, groups: FilterGroup[], valueOf: (key: string) => unknown): Map<string, Revision> {
  // NOT INDEXED: the new rows by their row ids, never a walk of some index of the filter (30 ms on 1M).
  const added = db.query(`SELECT id, ${COLS} FROM ${table} NOT INDEXED WHERE id > ? LIMIT ?`).all(newAbove, MAX_NEW_ROWS + 1) as (StoredRecord & { id: number })[];
  if (added.length > MAX_NEW_ROWS) {
    const out = new Map<string, Revision>();
    for (const g of groups) for (const key of keysOf(g)) out.set(key, "drop");
    return out;
  }
  const fresh: Fresh[] = added.map((r) => ({ id: r.id, data: JSON.parse(r.data) as Record<string, unknown>, row: r }));
  return reviseWith(sqliteJudge(db, table, newAbove), fresh, groups, valueOf);
}
