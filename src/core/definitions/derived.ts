/**
 * What the store keeps beside a resource's records, decided by its definition alone (so every
 * process derives the same): the fields `search` looks at, and the fields whose value counts are
 * maintained in the write transaction for exact totals.
 */
import type { FieldDef, ResourceDef } from "./types";

/** Fields whose stored value is a JSON array or object: a filter or search matches any element. */
export const isCompound = (f: FieldDef) => f.multi === true || f.i18n === true || f.type === "gallery";

/** `search` looks at the title field, or else at every visible field. */
export function searchFields(def: ResourceDef): string[] {
  const visible = Object.keys(def.fields).filter((n) => !def.hidden.has(n));
  return visible.includes("title") ? ["title"] : visible;
}

/**
 * Fields with maintained value counts: single-value `select` and `boolean` fields that lead an index
 * (an equality filter on them is the common list, and its total is then one lookup).
 */
export function countedFields(def: ResourceDef): string[] {
  return [...new Set(def.indexes.map((cols) => cols[0]))]
    .filter((n) => {
      const f = def.fields[n];
      return f && !def.hidden.has(n) && !isCompound(f) && (f.type === "select" || f.type === "boolean");
    });
}

/**
 * The key under which a stored value is counted: the field, a NUL, and the value as SQLite's
 * `quote()` writes what `json_extract` returns (text quoted, numbers bare, NULL).
 */
export function countKey(field: string, value: string | number | null): string {
  const q = value === null ? "NULL" : typeof value === "number" ? String(value) : `'${value.replace(/'/g, "''")}'`;
  return `${field}\u0000${q}`;
}
