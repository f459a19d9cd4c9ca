/**
 * SQL spellings for PostgreSQL. Records are stored as `json` (the text exactly as written, so the
 * API answers with the same field order as on SQLite). A field of a known scalar type is read as
 * that type: a number field as `float8` (NULL for anything but a JSON number), a field holding one
 * string as its text in code point order (`COLLATE "C"`, as SQLite's BINARY). Any other field is
 * read as `jsonb` with JSON null taken as SQL NULL. Typed reads are what make writes cheap: an index
 * on a `jsonb` expression compares jsonb values at every step of its tree, which cost 40 µs per row
 * and index on a 1M-row table against 7 µs typed (pgbench, 60-row INSERTs; see issue 38's note).
 */
import { quoteIdent } from "./dialect";
import type { Dialect, SqlValue } from "./types";
import type { FieldDef, ResourceDef } from "../definitions/types";
import { isCompound, searchFields } from "../definitions/derived";

/** A SQL string literal. */
export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The stored columns of a record, as the rest of resd reads them (int8 comes back as text otherwise). */
export const PG_COLS = "uuid, data::text AS data, _created::float8 AS _created, _modified::float8 AS _modified, _created_by, _modified_by";
export const historyCols = (a = "") =>
  `${a}id::float8 AS id, ${a}resource, ${a}uuid, ${a}action, ${a}at::float8 AS at, ${a}"user", ${a}data, ${a}_created::float8 AS _created, ${a}via`;

/** Field types whose value is one string (or absent). */
const STRING_TYPES = new Set(["text", "textarea", "html", "slug", "email", "url", "color", "date", "select"]);

/** How a field is read: as a number, as text, or as jsonb (lists, translations, booleans, anything else). */
export type FieldKind = "number" | "text" | "json";

export function fieldKind(f: FieldDef | null | undefined): FieldKind {
  if (!f || isCompound(f)) return "json";
  if (f.type === "number") return "number";
  return STRING_TYPES.has(f.type) ? "text" : "json";
}

/** The expression of a field read as `kind`. */
export function fieldAs(name: string, kind: FieldKind): string {
  if (kind === "number") return `CASE json_typeof(data->${lit(name)}) WHEN 'number' THEN (data->>${lit(name)})::float8 END`;
  if (kind === "text") return `(data->>${lit(name)}) COLLATE "C"`;
  return `nullif((data->${lit(name)})::jsonb, 'null'::jsonb)`;
}

/**
 * The text of a field expression, in the database's collation: case-insensitive matching and
 * lower() follow its idea of letters, as they did when every field was read as jsonb.
 */
const textOf = (expr: string, kind: FieldKind) =>
  kind === "json" ? `(${expr} #>> '{}')` : kind === "number" ? `(${expr})::text` : `(${expr} COLLATE "default")`;

export class PgDialect implements Dialect {
  /** Per resource, the expression of its search text (set by the schema sync, indexed by trigrams). */
  readonly searchText = new Map<string, string>();
  /** Per resource whose search text is plain strings joined (searchTextSql), those fields. */
  readonly plainSearch = new Map<string, string[]>();
  /** Per resource, its definition as synced (which type each field is read as). */
  readonly defs = new Map<string, ResourceDef>();

  table(resource: string): string {
    return quoteIdent(`r:${resource}`);
  }
  field(name: string, f?: FieldDef | null): string {
    return fieldAs(name, fieldKind(f));
  }
  fieldKey(name: string, key: string): string {
    return `nullif((data->${lit(name)}->${lit(key)})::jsonb, 'null'::jsonb)`;
  }
  equals(expr: string, f?: FieldDef | null): string {
    const kind = fieldKind(f);
    return kind === "number" ? `${expr} = ?::float8` : kind === "text" ? `${expr} = ?::text` : `${expr} = (?::text)::jsonb`;
  }
  value(v: SqlValue, f: FieldDef): SqlValue {
    const kind = fieldKind(f);
    if (kind === "number") return Number(v);
    if (kind === "text") return String(v);
    if (f.type === "boolean") return v ? "true" : "false";
    return JSON.stringify(v);
  }
  isEmpty(expr: string, f?: FieldDef | null): string {
    const kind = fieldKind(f);
    if (kind === "number") return `${expr} IS NULL`;
    return kind === "text" ? `(${expr} IS NULL OR ${expr} = '')` : `(${expr} IS NULL OR ${expr} = '""'::jsonb)`;
  }
  isFalse(expr: string): string {
    return `(${expr} IS NULL OR ${expr} IN ('false'::jsonb, '0'::jsonb))`;
  }
  not(cond: string): string {
    return `NOT COALESCE(${cond}, false)`;
  }
  column(resource: string, name: string): string {
    return `${this.table(resource)}.${name}`;
  }
  order(expr: string, desc: boolean): string {
    return `${expr} ${desc ? "DESC NULLS LAST" : "ASC NULLS FIRST"}`;
  }
  contains(expr: string, f?: FieldDef | null): string {
    return `${textOf(expr, fieldKind(f))} ILIKE ?`;
  }
  numeric(expr: string, f?: FieldDef | null): string {
    // SQLite's CAST(… AS REAL): the leading number of the text, 0 when there is none.
    const text = textOf(expr, fieldKind(f));
    return `CASE WHEN ${expr} IS NULL THEN NULL ELSE coalesce(substring(${text} from '^\\s*([-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?)')::float8, 0) END`;
  }
  text(expr: string, f?: FieldDef | null): string {
    return `lower(${textOf(expr, fieldKind(f))})`;
  }
  jsonHas(field: string): string {
    return `EXISTS (SELECT 1 FROM resd_values((data->${lit(field)})::jsonb) v WHERE v = (?::text)::jsonb)`;
  }
  jsonContains(field: string): string {
    return `EXISTS (SELECT 1 FROM resd_values((data->${lit(field)})::jsonb) v WHERE (v #>> '{}') ILIKE ?)`;
  }
  recordText(): string {
    return "data::text";
  }
  searchIndex(resource: string): string {
    return `${this.searchText.get(resource) ?? "''"} ILIKE ?`;
  }
}

/**
 * The search text of a record over its search fields, as the trigram index holds it: the fields'
 * values joined by the unit separator (a list's or translation's values one by one). Where every
 * field holds one string this is written out: the function that also unfolds lists and
 * translations cost a fifth of a create's time on PostgreSQL and most of a search's recheck.
 */
export function searchTextSql(def: ResourceDef): string {
  const fields = plainSearchFields(def);
  if (fields) return fields.length ? `(${fields.map((n) => `coalesce(data->>${lit(n)}, '')`).join(" || chr(31) || ")})` : "''";
  return `resd_search_text(data, ARRAY[${searchFields(def).map(lit).join(", ")}]::text[])`;
}

/** The search fields when each holds one string (the search text is their values joined by U+001F), else null. */
export function plainSearchFields(def: ResourceDef): string[] | null {
  const fields = searchFields(def);
  return fields.every((n) => def.fields[n] && STRING_TYPES.has(def.fields[n].type) && !isCompound(def.fields[n])) ? fields : null;
}

/**
 * `?` placeholders (the store's SQL is written with them, as SQLite takes them) numbered as
 * PostgreSQL wants: `$1`, `$2`… Quoted text and identifiers are left alone.
 */
export function numbered(sql: string): string {
  let n = 0;
  let out = "";
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else out += ch === "?" ? `$${++n}` : ch;
  }
  return out;
}
