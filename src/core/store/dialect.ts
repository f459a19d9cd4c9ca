import type { Dialect } from "./types";

const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;
const jsonPath = (field: string) => `'$.${quoteIdent(field).replace(/'/g, "''")}'`;

export const sqliteDialect: Dialect = {
  table: (resource) => quoteIdent(`r:${resource}`),
  field: (name) => `json_extract(data, ${jsonPath(name)})`,
  fieldKey: (name, key) => `json_extract(data, '$.${quoteIdent(name).replace(/'/g, "''")}.${quoteIdent(key).replace(/'/g, "''")}')`,
  equals: (expr) => `${expr} = ?`,
  value: (v) => v,
  isEmpty: (expr) => `(${expr} IS NULL OR ${expr} = '')`,
  isFalse: (expr) => `(${expr} = 0 OR ${expr} IS NULL)`,
  not: (cond) => `NOT COALESCE(${cond}, 0)`,
  order: (expr, desc) => `${expr} ${desc ? "DESC" : "ASC"}`,
  column: (_resource, name) => name,
  recordText: () => "data",
  contains: (expr) => `${expr} LIKE ? ESCAPE '\\'`,
  numeric: (expr) => `CAST(${expr} AS REAL)`,
  text: (expr) => `${expr} COLLATE NOCASE`,
  jsonHas: (field) => `EXISTS (SELECT 1 FROM json_each(data, ${jsonPath(field)}) WHERE json_each.value = ?)`,
  searchIndex: (resource) => `id IN (SELECT rowid FROM ${quoteIdent(`s:${resource}`)} WHERE text LIKE ?)`,
  jsonContains: (field) => `EXISTS (SELECT 1 FROM json_each(data, ${jsonPath(field)}) WHERE json_each.value LIKE ? ESCAPE '\\')`,
};

export { quoteIdent };
