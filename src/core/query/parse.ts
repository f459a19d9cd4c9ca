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

function nonNegativeInt(name: string, raw: string): number {
  if (!/^\d+$/.test(raw.trim())) throw badRequest(`${name} must be a non-negative integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw badRequest(`${name} is too large`);
  return n;
}

export function parseSort(raw: string): SortEntry[] {
  return raw.split(",").map((s) => s.trim()).filter(Boolean).map((entry) => {
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
  return raw.split(",").filter((s) => s.trim()).map((cond) => {
    const i = cond.indexOf(":");
    if (i < 1) throw badRequest(`filter "${cond}" is not field:value`);
    const field = cond.slice(0, i).trim();
    let value = cond.slice(i + 1);
    const negate = value.startsWith("!");
    if (negate) value = value.slice(1);
    return { field, values: value.split("||"), negate };
  });
}

export function parseListParams(p: ListParams, maxLimit = 0): ListQuery {
  const has = (v: string | undefined): v is string => v !== undefined && v !== "";
  const limit = has(p.limit) ? nonNegativeInt("limit", p.limit) : null;
  if (limit !== null && maxLimit > 0 && limit > maxLimit) throw badRequest(`limit may be at most ${maxLimit}`);
  return {
    limit,
    offset: has(p.offset) ? nonNegativeInt("offset", p.offset) : 0,
    sort: has(p.sort) ? parseSort(p.sort) : [],
    filter: has(p.filter) ? parseFilter(p.filter) : [],
    search: has(p.search) ? p.search : null,
    wantsTotal: has(p.limit) || has(p.offset) || has(p.sort) || has(p.filter),
  };
}
