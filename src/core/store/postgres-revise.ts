/**
 * PostgreSQL's side of revising remembered answers after a commit of this instance that only added
 * rows (revise.ts holds the rest). The new rows are the ones the transaction wrote (with the ids
 * PostgreSQL gave them), so nothing is read back; values are compared as PostgreSQL compares the
 * `jsonb` of a field, and whatever JavaScript cannot judge that way (a filter other than plain
 * equalities, text in a collation other than code point order, a list or an object) drops the
 * answers concerned: they are read again on the next request.
 */
import { charge, equalityReader, reviseAnswers, UNKNOWN, type Fresh, type KeyReader, type Plain, type RowJudge } from "./revise";
import type { FilterGroup, FilterTag, Revision } from "./memo";
import type { PgDialect } from "./postgres-dialect";
import type { SqlValue, StoredRecord } from "./types";

/** `nullif((data->'field')::jsonb, 'null'::jsonb)`, as PgDialect.field writes it. */
const FIELD = /^nullif\(\(data->'([A-Za-z0-9_]+)'\)::jsonb, 'null'::jsonb\)$/;
const EQUALS = " = (?::text)::jsonb";

/** The fields of a filter made only of plain equalities, in order; null for any other filter. */
const equalityFields = equalityReader((cond) => (cond.endsWith(EQUALS) ? FIELD.exec(cond.slice(0, -EQUALS.length))?.[1] ?? null : null));

/**
 * The filter as plain equalities of fields to values (the JSON the dialect compares with, parsed),
 * if it is only that and every value is a string, a number or a boolean.
 */
export function pgEqualitiesOf(where: string, args: SqlValue[]): FilterTag["equalities"] {
  const fields = equalityFields(where);
  if (!fields || fields.length !== args.length) return null;
  const out: { field: string; value: SqlValue }[] = [];
  for (const [i, field] of fields.entries()) {
    const arg = args[i];
    if (typeof arg !== "string") return null;
    let value: unknown;
    try {
      value = JSON.parse(arg);
    } catch {
      return null;
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") return null;
    out.push({ field, value });
  }
  return out;
}

/** PostgreSQL's order of jsonb scalars: strings, then numbers, then booleans (NULL, taken out by nullif, first). */
const rank = (v: Plain) => (v === null ? 0 : typeof v === "string" ? 1 : typeof v === "number" ? 2 : 3);

function compare(a: Plain, b: Plain): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb || ra === 0) return ra - rb;
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

/**
 * A judge for a database whose text order is code point order (`codePoints`, a C collation) or
 * not (strings then count as unknown). Numbers compare as JavaScript compares them: resd writes
 * every number as JavaScript's shortest form of a double, whose numeric order is the double's.
 */
export function pgJudge(dialect: PgDialect, codePoints: boolean): RowJudge {
  const plain = (v: unknown): Plain | typeof UNKNOWN => {
    if (v === undefined || v === null) return null;
    if (typeof v === "number" || typeof v === "boolean") return v;
    // UTF-16 order is code point order unless surrogates are involved.
    if (typeof v === "string") return codePoints && !/[\ud800-\udfff]/.test(v) ? v : UNKNOWN;
    return UNKNOWN;
  };
  const readers = new Map<string, KeyReader>();
  const keyReader = (expr: string): KeyReader => {
    let read = readers.get(expr);
    if (read) return read;
    // A field's value, or a text field sorted by its leading number, as the dialect writes them;
    // anything else (translations, `|text`) only PostgreSQL can say.
    const field = /data->'([A-Za-z0-9_]+)'/.exec(expr)?.[1];
    if (expr === "_created" || expr === "_modified") read = (row) => row[expr];
    else if (field !== undefined && expr === dialect.field(field)) read = (_row, data) => plain(data()[field]);
    else if (field !== undefined && expr === dialect.numeric(dialect.field(field))) read = (_row, data) => leadingNumber(data()[field]);
    else read = () => UNKNOWN;
    if (readers.size >= 1000) readers.clear();
    readers.set(expr, read);
    return read;
  };
  return {
    rowIds: true,
    keyReader,
    compare,
    matches(filter, fresh, budget) {
      if (!filter.equalities || !charge(budget, fresh, filter)) return null;
      const ids: number[] = [];
      for (const row of fresh) {
        let all: boolean | undefined = true;
        for (const { field, value } of filter.equalities) {
          all = equals(row.data[field], value);
          if (all !== true) break;
        }
        if (all === undefined) return null;
        if (all) ids.push(row.id);
      }
      return ids;
    },
  };
}

/** `jsonb = jsonb` for a stored value and a scalar; undefined for a list or an object. */
function equals(v: unknown, value: SqlValue): boolean | undefined {
  if (v === undefined || v === null) return false;
  if (typeof v === "object") return undefined;
  return v === value;
}

/** PgDialect.numeric of a value: the leading number of its text, 0 when there is none. */
function leadingNumber(v: unknown): Plain | typeof UNKNOWN {
  if (v === undefined || v === null) return null;
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return 0;
  if (typeof v !== "string") return UNKNOWN;
  // PostgreSQL's \s is its locale's idea of space: only ASCII space is judged here.
  if (/^\s/.test(v) && !/^[ \t\n\r\f\v]/.test(v)) return UNKNOWN;
  const m = /^[ \t\n\r\f\v]*([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)/.exec(v);
  return m ? Number(m[1]) : 0;
}

/** A row this instance inserted, with the id PostgreSQL gave it. */
export type AddedRow = StoredRecord & { id: number };

/** The verdicts on the answers of `groups` after a commit that added `rows` to their resource. */
export function reviseAdded(judge: RowJudge, rows: AddedRow[], groups: FilterGroup[], valueOf: (key: string) => unknown): Map<string, Revision> {
  const fresh: Fresh[] = rows.map((r) => ({ id: r.id, data: JSON.parse(r.data) as Record<string, unknown>, row: r }));
  return reviseAnswers(judge, fresh, groups, valueOf);
}
