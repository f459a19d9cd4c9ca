/** Parses the list parameters of the spec into a query description. Pure: no definitions, no SQL. */
import { badRequest } from "../errors";

export type SortFlag = "text" | "string" | "numeric";
export type SortEntry = { field: string; flag: SortFlag | null; desc: boolean };
export type FilterCond = { field: string; values: string[]; negate: boolean };
export type ListQuery = {
  limit: number | null;
  offset: number;
  sort: SortEntry[];
  filter: FilterCond[];
  search: string | null;
  /** limit, offset, sort or filter was given: the answer carries `total`. */
  wantsTotal: boolean;
};

export type ListParams = Partial<Record<"limit" | "offset" | "sort" | "filter" | "search", string | undefined>>;

const FLAGS = new Set(["text", "string", "numeric"]);

/**
 * Bounds of one list query (documented in docs/limits.md). Past them SQLite's own limits (expression
 * depth, bound variables) would fail the query with a 500; a clear 400 comes first.
 */
export const LIMITS = { sortTerms: 10, filterConditions: 32, alternatives: 100, searchLength: 200 } as const;

const tooMany = (what: string, max: number) => badRequest(`${what}: at most ${max} (a limit of resd, see docs/limits.md)`);

function nonNegativeInt(name: string, raw: string): number {
  if (!/^\d+$/.test(raw.trim())) throw badRequest(`${name} must be a non-negative integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw badRequest(`${name} is too large`);
  return n;
}

export function parseSort(raw: string): SortEntry[] {
  const entries = raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (entries.length > LIMITS.sortTerms) throw tooMany(`sort has ${entries.length} entries`, LIMITS.sortTerms);
  return entries.map((entry) => {
    const parts = entry.split("|").map((p) => p.trim());
    if (parts.length > 3 || !parts[0]) throw badRequest(`sort entry "${entry}" is not field|order or field|flag|order`);
    const [field, a, b] = parts;
    const order = (parts.length === 3 ? b : a)?.toLowerCase();
    const flag = parts.length === 3 ? a.toLowerCase() : null;
    if (order !== undefined && order !== "asc" && order !== "desc") throw badRequest(`sort order "${order}" must be asc or desc`);
    if (flag !== null && !FLAGS.has(flag)) throw badRequest(`sort flag "${flag}" must be text, string or numeric`);
    return { field, flag: flag as SortFlag | null, desc: order === "desc" };
  });
}

export function parseFilter(raw: string): FilterCond[] {
  const conds = raw.split(",").filter((s) => s.trim());
  if (conds.length > LIMITS.filterConditions) throw tooMany(`filter has ${conds.length} conditions`, LIMITS.filterConditions);
  return conds.map((cond) => {
    const i = cond.indexOf(":");
    if (i < 1) throw badRequest(`filter "${cond}" is not field:value`);
    const field = cond.slice(0, i).trim();
    let value = cond.slice(i + 1);
    const negate = value.startsWith("!");
    if (negate) value = value.slice(1);
    const values = value.split("||");
    if (values.length > LIMITS.alternatives) throw tooMany(`filter on ${field} has ${values.length} alternatives (||)`, LIMITS.alternatives);
    return { field, values, negate };
  });
}

function checkSearch(s: string): string {
  if ([...s].length > LIMITS.searchLength) throw tooMany(`search is ${[...s].length} characters long`, LIMITS.searchLength);
  return s;
}

export function parseListParams(p: ListParams, maxLimit = 0): ListQuery {
  const has = (v: string | undefined): v is string => v !== undefined && v !== "";
  // No stored text holds U+0000 (see checkField), so nothing could match one.
  for (const [k, v] of Object.entries(p)) if (typeof v === "string" && v.includes("\u0000")) throw badRequest(`${k} must not contain the NUL character (U+0000)`);
  const limit = has(p.limit) ? nonNegativeInt("limit", p.limit) : null;
  if (limit !== null && maxLimit > 0 && limit > maxLimit) throw badRequest(`limit may be at most ${maxLimit}`);
  return {
    limit,
    offset: has(p.offset) ? nonNegativeInt("offset", p.offset) : 0,
    sort: has(p.sort) ? parseSort(p.sort) : [],
    filter: has(p.filter) ? parseFilter(p.filter) : [],
    search: has(p.search) ? checkSearch(p.search) : null,
    wantsTotal: has(p.limit) || has(p.offset) || has(p.sort) || has(p.filter),
  };
}
