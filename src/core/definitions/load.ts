/** Loads and checks DIR/resources/*.json. An invalid file stops everything: no half-start. */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join, basename } from "node:path";
import { BUILTIN, USER_ALWAYS_HIDDEN, extendBuiltin } from "./builtin";
import { FIELD_TYPES, type DefinitionFile, type FieldDef, type ResourceDef } from "./types";
import { RULES, ruleNames } from "../validation/rules";

export class DefinitionError extends Error {
  constructor(readonly file: string, readonly field: string | null, reason: string) {
    super(`${file}${field ? `: field "${field}"` : ""}: ${reason}`);
    this.name = "DefinitionError";
  }
}

export const RESOURCE_NAME = /^\.?[A-Za-z0-9][A-Za-z0-9_-]*$/;
/**
 * Names of fixed endpoints under /api/v1 (src/http): a resource of that name would be shadowed by
 * the endpoint (or shadow it), so no definition may take one.
 */
export const RESERVED_RESOURCE_NAMES: ReadonlySet<string> = new Set([
  ".deleted", ".files", ".files-unused", ".files-usage", ".pages", ".resources", ".system-messages",
  "agent-chat", "agent-remote", "empty-resource", "git-pull", "git-status", "mcp", "openai", "openapi", "realtime", "session",
]);
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** Hidden (dot) resources whose history is kept by default (spec: "history" root key). */
const HISTORY_DOT_RESOURCES = new Set([".content", ".config", ".navigation"]);

const list = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : (v ?? "").split(",")).map((s) => s.trim()).filter(Boolean);

/** `list` of a value from a definition file, which must be a string or a list of strings. */
function names(file: string, field: string | null, key: string, v: unknown): string[] {
  if (v === undefined) return [];
  if (typeof v === "string" || (Array.isArray(v) && v.every((s) => typeof s === "string"))) return list(v);
  throw new DefinitionError(file, field, `\`${key}\` must be a field name, a comma-separated string of them or a list of them`);
}

function checkField(file: string, name: string, f: FieldDef, all: Record<string, FieldDef>, parent = ""): void {
  const fail = (reason: string) => { throw new DefinitionError(file, parent + name, reason); };
  if (!FIELD_NAME.test(name)) fail("field names use letters, digits, _ and -, and start with a letter or _");
  if (!f || typeof f !== "object" || Array.isArray(f)) fail("field configuration must be an object");
  if (!(FIELD_TYPES as readonly string[]).includes(f.type)) {
    fail(`unknown type ${JSON.stringify(f.type)} (known: ${FIELD_TYPES.join(", ")})`);
  }
  if (f.type === "select" && !f.options && !f.resource) fail("a select needs `options` or `resource`");
  if (f.options !== undefined && (typeof f.options !== "object" || Array.isArray(f.options))) fail("`options` must be an object of stored value to label");
  if (f.type === "slug" && !f.source) fail("a slug needs `source`");
  if (f.type === "slug") for (const s of names(file, parent + name, "source", f.source)) if (!all[s]) fail(`slug source "${s}" is not a field`);
  if (f.type === "location-picker") {
    if (!f.longitude_field) fail("a location-picker needs `longitude_field`");
    else if (!all[f.longitude_field]) fail(`longitude_field "${f.longitude_field}" is not a field`);
  }
  if (f.media === true && !f.media_sizes) fail("`media: true` needs `media_sizes`");
  for (const k of ["min", "max"] as const) if (f[k] !== undefined && typeof f[k] !== "number") fail(`\`${k}\` must be a number`);
  if (f.type === "group" && f.fields) for (const [n, sub] of Object.entries(f.fields)) checkField(file, n, sub, f.fields, `${parent}${name}.`);
}

/** Checks one parsed definition and derives what requests need. */
export function buildDefinition(name: string, raw: DefinitionFile, file: string | null): ResourceDef {
  const where = file ?? `(built-in ${name})`;
  if (!RESOURCE_NAME.test(name)) throw new DefinitionError(where, null, "resource names use letters, digits, _ and -, optionally after one leading dot");
  if (RESERVED_RESOURCE_NAMES.has(name)) throw new DefinitionError(where, null, `"${name}" is the name of a fixed endpoint (/api/v1/${name}) and cannot be a resource`);
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new DefinitionError(where, null, "a definition is a JSON object");
  if (!raw.fields || typeof raw.fields !== "object" || Array.isArray(raw.fields)) throw new DefinitionError(where, null, "`fields` must be an object");
  for (const [n, f] of Object.entries(raw.fields)) checkField(where, n, f, raw.fields);
  const known = (key: string, names: string[]) => {
    for (const n of names) if (!Object.hasOwn(raw.fields, n)) throw new DefinitionError(where, n, `named in \`${key}\` but not a field`);
  };
  const hidden = names(where, null, "hidden", raw.hidden);
  const encrypted = names(where, null, "encrypt", raw.encrypt);
  known("hidden", hidden);
  known("encrypt", encrypted);
  if (raw.index !== undefined && !Array.isArray(raw.index)) throw new DefinitionError(where, null, "`index` must be a list of indexes (each a field name, \"a,b\" or a list of field names)");
  const indexes = (raw.index ?? []).map((entry: unknown) => names(where, null, "index", entry));
  indexes.forEach((cols) => known("index", cols));
  const unique = names(where, null, "unique", raw.unique);
  known("unique", unique);
  if (raw.sort !== undefined && (!raw.sort || typeof raw.sort !== "object" || Array.isArray(raw.sort) || typeof raw.sort.field !== "string")) {
    throw new DefinitionError(where, null, "`sort` must be an object with the `field` to sort by");
  }
  if (raw.sort?.field && !raw.fields[raw.sort.field] && !["_created", "_modified", "uuid"].includes(raw.sort.field)) {
    throw new DefinitionError(where, raw.sort.field, "named in `sort` but not a field");
  }
  if (raw.languages !== undefined && (!Array.isArray(raw.languages) || raw.languages.some((l) => typeof l !== "string"))) {
    throw new DefinitionError(where, null, "`languages` must be a list of language codes");
  }
  for (const [n, f] of Object.entries(raw.fields)) {
    if (f.i18n && !raw.languages?.length) throw new DefinitionError(where, n, "`i18n` needs the root key `languages`");
  }
  if (raw.validate !== undefined && (typeof raw.validate !== "object" || Array.isArray(raw.validate))) {
    throw new DefinitionError(where, null, "`validate` must be an object of field name to rule(s)");
  }
  for (const [n, spec] of Object.entries(raw.validate ?? {})) {
    if (!Object.hasOwn(raw.fields, n)) throw new DefinitionError(where, n, "named in `validate` but not a field");
    if (typeof spec !== "string" && !(Array.isArray(spec) && spec.every((r) => typeof r === "string"))) {
      throw new DefinitionError(where, n, "a `validate` entry must be a rule name, a comma-separated string of them or a list of them");
    }
    for (const rule of ruleNames(spec)) if (!Object.hasOwn(RULES, rule)) throw new DefinitionError(where, n, `unknown validation rule "${rule}" (known: ${Object.keys(RULES).join(", ")})`);
  }
  const passwords = Object.entries(raw.fields).filter(([, f]) => f.type === "password").map(([n]) => n);
  const isDot = name.startsWith(".");
  const historyDefault = name === "users" ? false : isDot ? HISTORY_DOT_RESOURCES.has(name) : true;
  const builtin = BUILTIN[name] as { internal?: boolean } | undefined;
  return {
    name,
    file,
    raw,
    // No prototype: a body key such as `toString` or `__proto__` must never look like a field.
    fields: Object.assign(Object.create(null) as Record<string, FieldDef>, raw.fields),
    // Password fields hold one-way hashes: never worth returning, whatever the definition says.
    hidden: new Set([...hidden, ...encrypted, ...passwords, ...(name === "users" ? USER_ALWAYS_HIDDEN : [])]),
    encrypted: new Set(encrypted),
    history: raw.history ?? historyDefault,
    upsert: raw.upsert === true,
    keepShortcodes: raw.keep_shortcodes === true,
    internal: builtin?.internal === true,
    indexes,
    unique,
  };
}

/** Whether two loads of a resource's definition say the same (same file, same text as JSON). */
export const sameDefinition = (a: ResourceDef, b: ResourceDef | undefined): boolean =>
  b !== undefined && a.file === b.file && JSON.stringify(a.raw) === JSON.stringify(b.raw);

/** Reads every definition of a site: the built-ins, extended or joined by DIR/resources/*.json. */
export function loadDefinitions(dir: string): Map<string, ResourceDef> {
  const folder = join(dir, "resources");
  const files = existsSync(folder) ? readdirSync(folder).filter((f) => f.endsWith(".json")).sort() : [];
  const defs = new Map<string, ResourceDef>();
  const fromFiles = new Map<string, [string, DefinitionFile]>();
  for (const f of files) {
    const path = join(folder, f);
    let raw: DefinitionFile;
    try {
      raw = JSON.parse(readFileSync(path, "utf8"));
    } catch (e) {
      throw new DefinitionError(path, null, `not valid JSON (${(e as Error).message})`);
    }
    fromFiles.set(basename(f, ".json"), [path, raw]);
  }
  for (const [name, base] of Object.entries(BUILTIN)) {
    const own = fromFiles.get(name);
    defs.set(name, buildDefinition(name, own ? extendBuiltin(base, own[1]) : base, own?.[0] ?? null));
    fromFiles.delete(name);
  }
  for (const [name, [path, raw]] of fromFiles) defs.set(name, buildDefinition(name, raw, path));
  for (const def of defs.values()) {
    for (const [n, f] of Object.entries(def.fields)) {
      if (f.type === "select" && f.resource && !defs.has(f.resource)) {
        throw new DefinitionError(def.file ?? def.name, n, `select resource "${f.resource}" does not exist`);
      }
    }
  }
  return defs;
}
