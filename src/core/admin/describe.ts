/**
 * Definitions as the admin pages need them (`GET /api/v1/.resources`): only the resources the
 * caller may view, with labels, columns, filters, actions and the caller's rights resolved here,
 * so that the browser decides nothing the server does not enforce.
 */
import { can, hasPermission, type Principal } from "../access/permissions";
import type { Site } from "../site";
import type { CustomButton, FieldDef, ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import { mayUseAi } from "../ai/provider";

export type OptionView = { value: string; label: string };
export type FieldView = {
  type: FieldDef["type"];
  label: string;
  required: boolean;
  multi: boolean;
  i18n: boolean;
  /** Written but never read back (passwords, a user's API flag). */
  write_only: boolean;
  options?: OptionView[];
  resource?: string;
  source?: string;
  accept?: string;
  min?: number;
  max?: number;
  longitude_field?: string;
  wrapper_class?: string;
  preserve_existing?: boolean;
  /** html: the editor's buttons (built-in names or the definition's custom buttons). */
  buttons?: string[];
  media?: boolean;
  media_sizes?: string[];
  paste_html?: boolean;
  fields?: Record<string, FieldView>;
};
export type FilterView = { field: string; label: string; options: OptionView[]; default: string | null; multi: boolean };
export type ResourceView = {
  name: string;
  label: { singular: string; plural: string };
  appbar: boolean;
  languages: string[];
  fields: Record<string, FieldView>;
  columns: string[];
  filters: FilterView[];
  actions: { view_url: string; url: string | null };
  sort: { field: string; order: "asc" | "desc" } | null;
  history: boolean;
  /** Custom html editor buttons declared by the definition (`buttons` root key). */
  buttons: Record<string, CustomButton>;
  /** An AI provider is configured and the caller holds create-.ai: translation, completion and import from .docx are offered. */
  ai: boolean;
  can: { view: true; create: boolean; edit: boolean; delete: boolean; import: boolean; export: boolean; restore: boolean; delete_all: boolean };
};

export const ADMIN_BASE = "/admin";
/** Options read from another resource: enough for a dropdown, bounded for a large resource. */
const MAX_RESOURCE_OPTIONS = 500;
const BUILTIN_HIDDEN_FROM_APPBAR = new Set(["users", "roles"]);

/** `blog_posts` → "Blog posts"; the singular drops a trailing "s" ("Blog post"). */
export function labelsOf(def: ResourceDef): { singular: string; plural: string } {
  const words = def.name.replace(/^\./, "").replace(/[_-]+/g, " ").trim();
  const plural = def.raw.name?.plural ?? (words.charAt(0).toUpperCase() + words.slice(1));
  const singular = def.raw.name?.singular ?? (def.raw.name?.plural ? plural : plural.replace(/(?<=[^s])s$/i, ""));
  return { singular, plural };
}

const fieldLabel = (name: string, f: FieldDef) => f.name ?? (name.charAt(0).toUpperCase() + name.slice(1).replace(/_/g, " "));

/** The text that names a record of another resource in a dropdown. */
function recordLabel(def: ResourceDef, data: Record<string, unknown>, uuid: string): string {
  for (const key of ["name", "title", "label", "email", ...Object.keys(def.fields)]) {
    const v = data[key];
    if (def.hidden.has(key)) continue;
    if (typeof v === "string" && v) return v;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const first = Object.values(v).find((x) => typeof x === "string" && x);
      if (first) return first as string;
    }
  }
  return uuid;
}

async function optionsOf(site: Site, p: Principal, f: FieldDef): Promise<OptionView[] | undefined> {
  if (f.options) return Object.entries(f.options).map(([value, label]) => ({ value, label: String(label) }));
  if (!f.resource) return undefined;
  const other = site.defs.get(f.resource);
  // Labels are another resource's data: only for callers who may read it.
  if (!other || other.internal || !can(p, other.name, "view")) return [];
  const out: OptionView[] = [];
  const q = { where: "", args: [], orderBy: "ORDER BY id", limit: MAX_RESOURCE_OPTIONS, offset: 0 };
  for (const row of await site.store.page(other.name, q)) {
    const data = JSON.parse(row.data) as Record<string, unknown>;
    const label = recordLabel(other, data, row.uuid);
    // A reference by uuid stores the uuid; otherwise the record is named as the definition names it.
    const value = f.reference === "uuid" || typeof data.name !== "string" ? row.uuid : (data.name as string);
    out.push({ value, label });
  }
  return out;
}

async function fieldView(site: Site, p: Principal, def: ResourceDef, name: string, f: FieldDef): Promise<FieldView> {
  const v: FieldView = {
    type: f.type, label: fieldLabel(name, f), required: Boolean(f.required), multi: Boolean(f.multi), i18n: Boolean(f.i18n),
    write_only: def.hidden.has(name),
  };
  const options = f.type === "select" ? await optionsOf(site, p, f) : undefined;
  if (options) v.options = options;
  for (const k of ["resource", "source", "accept", "longitude_field", "wrapper_class"] as const) if (typeof f[k] === "string") v[k] = f[k] as string;
  if (f.type === "html") {
    v.buttons = (f.buttons ?? "bold,italic,removeFormat").split(",").map((b) => b.trim()).filter(Boolean);
    v.media = Boolean(f.media);
    v.media_sizes = typeof f.media_sizes === "string" ? f.media_sizes.split(",").map((x) => x.trim()).filter(Boolean) : [];
    v.paste_html = Boolean(f.paste_html);
  }
  if (f.type === "slug") v.preserve_existing = Boolean(f.preserve_existing);
  if (typeof f.min === "number") v.min = f.min;
  if (typeof f.max === "number") v.max = f.max;
  if (f.type === "group" && f.fields) {
    v.fields = {};
    for (const [k, sub] of Object.entries(f.fields)) v.fields[k] = await fieldView(site, p, def, k, sub);
  }
  return v;
}

/**
 * Fields an editor sees: visible ones, and write-only ones (passwords, encrypted fields, a user's
 * role and API flag) only to those who may write them. Plain `hidden` fields are never offered.
 */
function editableHidden(def: ResourceDef, name: string, p: Principal): boolean {
  const mayWrite = can(p, def.name, "edit") || can(p, def.name, "create");
  if (def.name === "users") {
    // Switching API access on needs a role that may edit users; a password or role is also set on create.
    if (name === "api") return can(p, "users", "edit");
    if (name === "password" || name === "role") return mayWrite;
    return false;
  }
  return (def.fields[name]?.type === "password" || def.encrypted.has(name)) && mayWrite;
}

function columnsOf(def: ResourceDef, visible: Set<string>): string[] {
  const named = def.raw.admin_columns;
  if (Array.isArray(named) && named.length) return named.filter((c) => visible.has(c) || c === "_created" || c === "_modified");
  return Object.entries(def.fields).filter(([k, f]) => visible.has(k) && f.admin_col !== false && f.type !== "group" && f.type !== "password").map(([k]) => k);
}

export async function describeResource(site: Site, p: Principal, def: ResourceDef): Promise<ResourceView> {
  const fields: Record<string, FieldView> = {};
  for (const [name, f] of Object.entries(def.fields)) {
    if (def.hidden.has(name) && !editableHidden(def, name, p)) continue;
    fields[name] = await fieldView(site, p, def, name, f);
  }
  const visible = new Set(Object.keys(fields).filter((k) => !fields[k].write_only));
  const filters: FilterView[] = [];
  for (const [name, f] of Object.entries(def.fields)) {
    if (!f.admin_filter || !visible.has(name) || (f.type !== "select" && f.type !== "boolean")) continue;
    const spec = typeof f.admin_filter === "object" ? f.admin_filter : {};
    if (spec.feature && !hasPermission(p, spec.feature)) continue;
    const options = f.type === "boolean" ? [{ value: "1", label: "Yes" }, { value: "0", label: "No" }] : (fields[name].options ?? []);
    const d = spec.default;
    const dflt = d === undefined || d === null ? null : f.type === "boolean" ? (d === true || d === 1 || d === "1" || d === "true" ? "1" : "0") : String(d);
    filters.push({ field: name, label: fields[name].label, options, default: dflt, multi: Boolean(f.multi) });
  }
  const sort = def.raw.sort?.field ? { field: def.raw.sort.field, order: def.raw.sort.order ?? "asc" } : null;
  const mayEdit = can(p, def.name, "edit");
  const mayCreate = can(p, def.name, "create");
  return {
    name: def.name,
    label: labelsOf(def),
    appbar: def.raw.appbar ?? !BUILTIN_HIDDEN_FROM_APPBAR.has(def.name),
    languages: def.raw.languages ?? [],
    fields,
    columns: columnsOf(def, visible),
    filters,
    actions: { view_url: def.raw.actions?.view_url ?? `${ADMIN_BASE}/${def.name}/[#record.uuid#]?view=1`, url: def.raw.actions?.url ?? null },
    sort: sort && (visible.has(sort.field) || isSystemField(sort.field)) ? sort : null,
    history: def.history,
    buttons: def.raw.buttons ?? {},
    ai: Boolean(site.config.aiApiKey) && mayUseAi(p),
    can: {
      view: true, create: mayCreate, edit: mayEdit, delete: can(p, def.name, "delete"), import: can(p, def.name, "import"),
      export: can(p, def.name, "export"), restore: mayEdit && mayCreate, delete_all: can(p, def.name, "delete_all"),
    },
  };
}

/** Every resource the caller may view, by name. */
export async function describeResources(site: Site, p: Principal): Promise<Record<string, ResourceView>> {
  const out: Record<string, ResourceView> = {};
  for (const def of [...site.defs.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    if (def.internal || def.name.startsWith(".") || !can(p, def.name, "view")) continue;
    out[def.name] = await describeResource(site, p, def);
  }
  return out;
}
