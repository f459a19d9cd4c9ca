/**
 * The seed's rules for overview filters, kept in the URL as `filter[field]=value`: an absent
 * parameter selects the filter's default, an empty one All, a value that is not an option All.
 */
import type { FilterView } from "./state";

export type Selection = Record<string, string | null>;

export function selectedFilters(filters: FilterView[], params: URLSearchParams): Selection {
  const out: Selection = {};
  for (const f of filters) {
    const raw = params.get(`filter[${f.field}]`);
    const valid = (v: string | null) => (v !== null && f.options.some((o) => o.value === v) ? v : null);
    out[f.field] = raw === null ? valid(f.default) : valid(raw);
  }
  return out;
}

/** The list API's `filter` for the chosen values (ANDed); raw stored values are compared. */
export function filterParam(selection: Selection, extra: string[] = []): string {
  const parts = Object.entries(selection).filter(([, v]) => v !== null).map(([k, v]) => `${k}:${v}`);
  return [...parts, ...extra].join(",");
}

/** `[#record.field#]` in an action URL, each value percent-encoded. */
export function actionUrl(template: string, record: Record<string, unknown>): string {
  return template.replace(/\[#\s*record\.([\w-]+)\s*#\]/g, (_m, field: string) => {
    const v = record[field];
    return encodeURIComponent(v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));
  });
}
