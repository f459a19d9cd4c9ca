import type { Dialect } from "./types";

const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;
const jsonPath = (field: string) => `'$.${quoteIdent(field).replace(/'/g, "''")}'`;

export const sqliteDialect: Dialect = {
  table: (resource) => quoteIdent(`r:${resource}`),
  field: (name) => `json_extract(data, ${jsonPath(name)})`,
  fieldKey: (name, key) => `json_extract(data, '$.${quoteIdent(name).replace(/'/g, "''")}.${quoteIdent(key).replace(/'/g, "''")}')`,
  contains: (expr) => `${expr} LIKE ? ESCAPE '\\'`,
  numeric: (expr) => `CAST(${expr} AS REAL)`,
  text: (expr) => `${expr} COLLATE NOCASE`,
  jsonHas: (field) => `EXISTS (SELECT 1 FROM json_each(data, ${jsonPath(field)}) WHERE json_each.value = ?)`,
  searchIndex: (resource) => `id IN (SELECT rowid FROM ${quoteIdent(`s:${resource}`)} WHERE text LIKE ?)`,
  jsonContains: (field) => `EXISTS (SELECT 1 FROM json_each(data, ${jsonPath(field)}) WHERE json_each.value LIKE ? ESCAPE '\\')`,
};

export { quoteIdent };
