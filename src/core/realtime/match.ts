/**
 * A list filter (`field:value,…`, see query/parse.ts) decided on one record in memory, as the SQL
 * compile.ts builds would decide it on the stored row: a realtime subscription with a filter sees
 * whether a changed record matches it without asking the database. The compiled query is still
 * built once when subscribing, so that a filter the list API refuses is refused here too.
 */
import { isSystemField, type FieldDef, type ResourceDef } from "../definitions/types";
import { isCompound } from "../definitions/derived";
import { compileList } from "../query/compile";
import { parseListParams, type FilterCond } from "../query/parse";
import type { Dialect } from "../store/types";

type Value = string | number | null;
export type Matcher = (record: Record<string, unknown>) => boolean;

/** A filter value as compile.ts binds it (its checks already passed). */
function coerce(f: FieldDef | null, field: string, raw: string): Value {
  if (raw === "") return null;
  const type = f?.type ?? (field === "_created" || field === "_modified" ? "number" : "text");
  if (type === "number") return Number(raw);
  if (type === "boolean") return /^(1|true|yes|on)$/i.test(raw) ? 1 : 0;
  return raw;
}

/** A stored JSON value as SQL compares it: booleans are 1 and 0, JSON null is no value. */
const sqlValue = (v: unknown): unknown => (v === true ? 1 : v === false ? 0 : v === undefined ? null : v);

function condition(def: ResourceDef, c: FilterCond): Matcher {
  const f = isSystemField(c.field) ? null : def.fields[c.field];
  const values = c.values.map((v) => coerce(f, c.field, v));
  const tests = values.map((v): ((x: unknown) => boolean) => {
    if (v === null) return f ? (x) => x === null || x === undefined || x === "" : (x) => x === null || x === undefined;
    if (f && isCompound(f)) {
      return (x) => x !== null && typeof x === "object" && Object.values(x as object).some((item) => sqlValue(item) === v);
    }
    // A false boolean also matches a record that never set the field.
    if (f?.type === "boolean" && v === 0) return (x) => x === null || x === undefined || sqlValue(x) === 0;
    return (x) => sqlValue(x) === v;
  });
  const field = c.field;
  const any = (r: Record<string, unknown>) => tests.some((t) => t(r[field]));
  return c.negate ? (r) => !any(r) : any;
}

/**
 * The matcher of `filter` on `def`; throws the list API's 400 for a filter it refuses (an unknown,
 * hidden or encrypted field, a value of the wrong type, too many conditions).
 */
export function filterMatcher(dialect: Dialect, def: ResourceDef, filter: string): Matcher {
  const q = parseListParams({ filter });
  compileList(dialect, def, q);
  const conds = q.filter.map((c) => condition(def, c));
  return (r) => conds.every((m) => m(r));
}
