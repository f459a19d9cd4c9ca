/**
 * Compiles a parsed list query against a definition into SQL fragments through the dialect.
 * Every field is checked here: unknown, hidden and encrypted fields are refused with 400.
 */
import { badRequest } from "../errors";
import { isSystemField, type FieldDef, type ResourceDef } from "../definitions/types";
import { countedFields, countKey, isCompound, searchFields } from "../definitions/derived";
import type { CompiledQuery, Dialect, SortKey, SqlValue } from "../store/types";
import type { FilterCond, ListQuery, SortEntry } from "./parse";

export { isCompound };

function resolveField(def: ResourceDef, name: string, use: "sort" | "filter"): FieldDef | null {
  if (isSystemField(name)) return null;
  const f = def.fields[name];
  if (!f) throw badRequest(`cannot ${use} on "${name}": not a field of ${def.name}`);
  if (def.hidden.has(name)) throw badRequest(`cannot ${use} on "${name}": the field is hidden`);
  return f;
}

const column = (d: Dialect, name: string, f: FieldDef | null) => (f ? d.field(name) : name);

function coerce(f: FieldDef | null, field: string, raw: string): SqlValue {
  const type = f?.type ?? (field === "_created" || field === "_modified" ? "number" : "text");
  if (type === "number") {
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n)) throw badRequest(`filter on "${field}" needs a number, not "${raw}"`);
    return n;
  }
  if (type === "boolean") {
    if (/^(1|true|yes|on)$/i.test(raw)) return 1;
    if (/^(0|false|no|off)$/i.test(raw)) return 0;
    throw badRequest(`filter on "${field}" needs 1 or 0, not "${raw}"`);
  }
  return raw;
}

function compileCondition(d: Dialect, def: ResourceDef, c: FilterCond, args: SqlValue[]): string {
  const f = resolveField(def, c.field, "filter");
  const expr = column(d, c.field, f);
  const values = c.values.map((v) => (v === "" ? null : coerce(f, c.field, v)));
  const parts = values.map((v) => {
    // System columns are plain columns: never empty, compared as they are.
    if (v === null) return f ? d.isEmpty(expr) : `${expr} IS NULL`;
    if (!f) {
      args.push(v);
      return `${expr} = ?`;
    }
    if (isCompound(f)) {
      args.push(d.value(v, f.type));
      return d.jsonHas(c.field);
    }
    // A false boolean also matches a record that never set the field.
    if (f.type === "boolean" && v === 0) return d.isFalse(expr);
    args.push(d.value(v, f.type));
    return d.equals(expr);
  });
  const any = parts.length === 1 ? parts[0] : `(${parts.join(" OR ")})`;
  return c.negate ? d.not(any) : any;
}

/** A sort entry as a key of the page's order and as its ORDER BY term. */
function compileSort(d: Dialect, def: ResourceDef, s: SortEntry): { key: SortKey; sql: string } {
  const f = resolveField(def, s.field, "sort");
  // A translated field sorts by the resource's first language.
  const lang = f?.i18n ? def.raw.languages?.[0] : undefined;
  let expr = lang ? d.fieldKey(s.field, lang) : column(d, s.field, f);
  if (s.flag === "numeric" && f && f.type !== "number") expr = d.numeric(expr);
  if (s.flag === "text") expr = d.text(expr);
  if (f) return { key: { expr, desc: s.desc }, sql: d.order(expr, s.desc) };
  return { key: { expr, desc: s.desc }, sql: `${expr === s.field ? d.column(def.name, s.field) : expr} ${s.desc ? "DESC" : "ASC"}` };
}

const likeEscape = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The search as a condition on the row's own fields (a scan; also used for pages of a common term). */
function compileSearchScan(d: Dialect, def: ResourceDef, text: string, args: SqlValue[]): string {
  const targets = searchFields(def);
  if (targets.length === 0) return "0";
  for (const _ of targets) args.push(likeEscape(text));
  // Translations and lists are searched by their values, never by their JSON text (keys, quotes).
  return `(${targets.map((n) => (isCompound(def.fields[n]) ? d.jsonContains(n) : d.contains(d.field(n)))).join(" OR ")})`;
}

/** Terms the search index answers: no LIKE wildcard or escape, no separator of its text. */
const indexable = (text: string) => !/[\\%_\u001f]/.test(text);

/** Keys of the maintained counts whose sum is the total of a single equality filter, if there are. */
function countedTotal(def: ResourceDef, q: ListQuery): CompiledQuery["counted"] {
  if (q.search !== null || q.filter.length > 1) return undefined;
  if (q.filter.length === 0) return { keys: [], negate: true };
  const c = q.filter[0];
  if (!countedFields(def).includes(c.field)) return undefined;
  const f = def.fields[c.field];
  const keys: string[] = [];
  for (const raw of c.values) {
    const v = raw === "" ? null : coerce(f, c.field, raw);
    if (v === null) keys.push(countKey(c.field, null), countKey(c.field, ""));
    else if (f.type === "boolean") keys.push(...(v === 0 ? [countKey(c.field, 0), countKey(c.field, null)] : [countKey(c.field, 1)]));
    else keys.push(countKey(c.field, String(v)));
  }
  return { keys: [...new Set(keys)], negate: c.negate };
}

export function compileList(d: Dialect, def: ResourceDef, q: ListQuery): CompiledQuery {
  const args: SqlValue[] = [];
  const conds = q.filter.map((c) => compileCondition(d, def, c, args));
  let search: CompiledQuery["search"];
  if (q.search !== null) {
    if (indexable(q.search) && searchFields(def).length) {
      const scanArgs = [...args];
      const scan = [...conds, compileSearchScan(d, def, q.search, scanArgs)];
      const pattern = `%${q.search}%`;
      search = { resource: def.name, term: q.search, scan: { where: `WHERE ${scan.join(" AND ")}`, args: scanArgs }, alone: conds.length === 0 };
      conds.push(d.searchIndex(def.name));
      args.push(pattern);
    } else conds.push(compileSearchScan(d, def, q.search, args));
  }
  const sort = q.sort.length ? q.sort : defaultSort(def);
  const terms = sort.map((s) => compileSort(d, def, s));
  // The row id breaks ties so that pages never overlap or skip; same direction keeps indexes usable.
  const idDesc = sort[sort.length - 1]?.desc ?? false;
  terms.push({ key: { expr: "id", desc: idDesc }, sql: `id ${idDesc ? "DESC" : "ASC"}` });
  const order = terms.map((t) => t.sql);
  return {
    where: conds.length ? `WHERE ${conds.join(" AND ")}` : "",
    args,
    orderBy: `ORDER BY ${order.join(", ")}`,
    order: terms.map((t) => t.key),
    limit: q.limit,
    offset: q.offset,
    search,
    counted: countedTotal(def, q),
  };
}

function defaultSort(def: ResourceDef): SortEntry[] {
  const s = def.raw.sort;
  if (!s?.field) return [];
  return [{ field: s.field, flag: s.flags ?? null, desc: s.order === "desc" }];
}
