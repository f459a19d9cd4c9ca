/**
 * SQL spellings for PostgreSQL. Records are stored as `json` (the text exactly as written, so the
 * API answers with the same field order as on SQLite); a field is read as `jsonb` with JSON null
 * taken as SQL NULL, so that indexes, comparisons and sorts behave as SQLite's json_extract does.
 */
import { quoteIdent } from "./dialect";
import type { Dialect, SqlValue } from "./types";
import type { ResourceDef } from "../definitions/types";
import { isCompound, searchFields } from "../definitions/derived";

/** A SQL string literal (names and other text resd writes itself). */
export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * Any text as a SQL literal, as libpq's PQescapeLiteral writes it: an escape string (`E'…'`) with
 * quotes and backslashes doubled means the same whatever `standard_conforming_strings` says.
 * PostgreSQL's text cannot hold a NUL, which a parameter would refuse too.
 */
export function textLit(s: string): string {
  if (s.includes("\0")) throw new Error("text with a NUL character cannot be stored");
  return `E'${s.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/** The stored columns of a record, as the rest of resd reads them (int8 comes back as text otherwise). */
export const PG_COLS = "uuid, data::text AS data, _created::float8 AS _created, _modified::float8 AS _modified, _created_by, _modified_by";
export const historyCols = (a = "") =>
  `${a}id::float8 AS id, ${a}resource, ${a}uuid, ${a}action, ${a}at::float8 AS at, ${a}"user", ${a}data, ${a}_created::float8 AS _created, ${a}via`;

const fieldOf = (name: string) => `nullif((data->${lit(name)})::jsonb, 'null'::jsonb)`;

export class PgDialect implements Dialect {
  /** Per resource, the expression of its search text (set by the schema sync, indexed by trigrams). */
  readonly searchText = new Map<string, string>();
  /** Per resource whose search text is plain strings joined (searchTextSql), those fields. */
  readonly plainSearch = new Map<string, string[]>();

  table(resource: string): string {
    return quoteIdent(`r:${resource}`);
  }
  field(name: string): string {
    return fieldOf(name);
  }
  fieldKey(name: string, key: string): string {
    return `nullif((data->${lit(name)}->${lit(key)})::jsonb, 'null'::jsonb)`;
  }
  equals(expr: string): string {
    return `${expr} = (?::text)::jsonb`;
  }
  value(v: SqlValue, type: string): SqlValue {
    if (type === "boolean") return v ? "true" : "false";
    return JSON.stringify(v);
  }
  isEmpty(expr: string): string {
    return `(${expr} IS NULL OR ${expr} = '""'::jsonb)`;
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
  contains(expr: string): string {
    return `(${expr} #>> '{}') ILIKE ?`;
  }
  numeric(expr: string): string {
    // SQLite's CAST(… AS REAL): the leading number of the text, 0 when there is none.
    return `CASE WHEN ${expr} IS NULL THEN NULL ELSE coalesce(substring((${expr} #>> '{}') from '^\\s*([-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?)')::float8, 0) END`;
  }
  text(expr: string): string {
    return `lower(${expr} #>> '{}')`;
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

/** Field types whose value is one string (or absent). */
const STRING_TYPES = new Set(["text", "textarea", "html", "slug", "email", "url", "color", "date", "select"]);

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
