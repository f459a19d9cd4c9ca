/**
 * The write rules, applied to every value on every write path (API, import, CLI, library code):
 * validation by field type, required fields, `validate` rules, html cleaning, shortcode escaping,
 * one-way hashing of password and encrypted fields, references and unique values.
 * Runs before the transaction: it may hash and read, never write.
 */
import type { FieldDef, ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import { AppError, badRequest, type FieldErrors } from "../errors";
import type { RecordReads } from "../store/types";
import { checkField, isEmpty } from "../validation/fields";
import { cleanHtml } from "../validation/html";
import { RULES, ruleNames } from "../validation/rules";
import { escapeShortcodes } from "../validation/shortcodes";
import { UNPAIRED_SURROGATE, unpairedSurrogateAt } from "../validation/unicode";
import type { Values } from "../validation/object";


const UUID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Path segments of the resource's own endpoints: a record of that name could never be addressed. */
const RESERVED = new Set(["export", "import", "import-document"]);

export function checkUuid(uuid: unknown): string {
  if (typeof uuid !== "string" || !UUID_RE.test(uuid)) {
    throw badRequest("uuid must be 1-128 characters of letters, digits, '.', '_' and '-'");
  }
  if (RESERVED.has(uuid)) throw badRequest(`"${uuid}" is reserved for /api/v1/{resource}/${uuid}`);
  return uuid;
}

const hashSecret = (v: unknown) => (typeof v === "string" && v !== "" ? Bun.password.hash(v, "argon2id") : Promise.resolve(v));

/** Applies html cleaning and shortcode escaping to one checked value. */
function clean(def: ResourceDef, name: string, value: unknown): unknown {
  const v = cleanHtmlIn(def, def.fields[name], value);
  return def.keepShortcodes ? v : escapeShortcodes(v);
}

/** Every string of every html field is cleaned: single, multi, per language, and inside group rows. */
function cleanHtmlIn(def: ResourceDef, f: FieldDef, v: unknown): unknown {
  if (f.type === "group") {
    if (!f.fields || v === null || typeof v !== "object") return v;
    const row = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).map(([k, x]) => [k, f.fields![k] ? cleanHtmlIn(def, f.fields![k], x) : x]));
    return Array.isArray(v) ? v.map((r) => row(r as Record<string, unknown>)) : row(v as Record<string, unknown>);
  }
  if (f.type !== "html") return v;
  const walk = (x: unknown): unknown =>
    typeof x === "string" ? cleanHtml(x, f, def.raw.buttons) : Array.isArray(x) ? x.map(walk) : x && typeof x === "object" ? Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y)])) : x;
  return walk(v);
}

const FILE_TYPES = new Set(["image", "file", "upload", "gallery"]);

type Reference = { name: string; resource: string; byUuid: boolean };
/** The fields each check looks at, per definition: a resource with none skips the check (and its awaits). */
type Plan = { required: string[]; references: Reference[]; files: string[] };
const plans = new WeakMap<ResourceDef, Plan>();
function planOf(def: ResourceDef): Plan {
  let plan = plans.get(def);
  if (!plan) {
    const fields = Object.entries(def.fields);
    plan = {
      required: fields.filter(([, f]) => f.required).map(([name]) => name),
      references: fields.flatMap(([name, f]) => (f.type === "select" && f.resource ? [{ name, resource: f.resource, byUuid: f.reference === "uuid" }] : [])),
      files: fields.filter(([, f]) => FILE_TYPES.has(f.type)).map(([name]) => name),
    };
    plans.set(def, plan);
  }
  return plan;
}

/**
 * Checks the given fields of a create or update and returns the values to store.
 * `uuid` is the record being written (excluded from unique checks).
 */
export type PrepareOptions = {
  /** Fewest characters of a password field's new value (RESD_PASSWORD_MIN_LENGTH). */
  passwordMinLength: number;
  allowMissingFiles?: boolean;
};

export async function prepareValues(store: RecordReads, def: ResourceDef, input: Values, mode: "create" | "update", uuid: string, opts: PrepareOptions): Promise<Values> {
  const errors: FieldErrors = Object.create(null); // a key such as __proto__ must stay a key
  const out: Values = Object.create(null);
  for (const [name, raw] of Object.entries(input)) {
    if (isSystemField(name)) continue; // set by the service only
    if (!def.fields[name]) { errors[name.toWellFormed()] = `not a field of ${def.name}`; continue; }
    // Imports and library code reach here without the HTTP body check.
    const bad = unpairedSurrogateAt(raw, name);
    if (bad !== null) { errors[bad] = UNPAIRED_SURROGATE; continue; }
    const r = checkField(def, name, raw);
    if (!r.ok) { errors[`${name}${r.at ?? ""}`] = r.error; continue; }
    out[name] = r.value;
    if (def.fields[name].type === "password" && typeof r.value === "string" && r.value !== "" && [...r.value].length < opts.passwordMinLength) {
      errors[name] = `must be at least ${opts.passwordMinLength} characters`;
    }
  }
  const plan = planOf(def);
  for (const name of plan.required) {
    const given = Object.prototype.hasOwnProperty.call(out, name);
    if (mode === "create" ? !given || isEmpty(out[name]) : given && isEmpty(out[name])) errors[name] ??= "is required";
  }
  for (const [name, spec] of Object.entries(def.raw.validate ?? {})) {
    if (!(name in out) || errors[name]) continue;
    const v = out[name];
    const each = def.fields[name].i18n && v && typeof v === "object" ? Object.values(v) : [v];
    for (const rule of ruleNames(spec)) {
      const msg = Object.hasOwn(RULES, rule) ? each.map((x) => RULES[rule](x)).find(Boolean) : undefined;
      if (msg) { errors[name] = msg; break; }
    }
  }
  if (def.name === "users" && typeof out.email === "string") out.email = out.email.toLowerCase();
  if (plan.references.length) await checkReferences(store, plan.references, out, errors);
  if (def.unique.length) await checkUnique(store, def, out, uuid, errors);
  if (plan.files.length && !opts.allowMissingFiles) await checkFiles(store, plan.files, out, errors);
  if (Object.keys(errors).length) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors });
  for (const name of Object.keys(out)) {
    const f = def.fields[name];
    out[name] = f.type === "password" || def.encrypted.has(name) ? await hashSecret(out[name]) : clean(def, name, out[name]);
  }
  return out;
}

/**
 * A select from another resource must name an existing record: its uuid, or its unique `name`.
 * With `reference: "uuid"` (users' `role`) a name is stored as the record's uuid, so that a later
 * rename of the referenced record changes nothing about what the reference means.
 */
async function checkReferences(store: RecordReads, references: Reference[], out: Values, errors: FieldErrors) {
  for (const { name, resource, byUuid } of references) {
    if (errors[name] || isEmpty(out[name])) continue;
    const values = Array.isArray(out[name]) ? (out[name] as unknown[]) : [out[name]];
    const uuids: string[] = [];
    for (const v of values) {
      const hit = (await store.get(resource, String(v))) ?? (await store.findBy(resource, "name", String(v)));
      if (!hit) { errors[name] = `"${v}" is not a record of ${resource}`; break; }
      uuids.push(hit.uuid);
    }
    if (byUuid && !errors[name]) out[name] = Array.isArray(out[name]) ? uuids : uuids[0];
  }
}

async function checkUnique(store: RecordReads, def: ResourceDef, out: Values, uuid: string, errors: FieldErrors) {
  for (const name of def.unique) {
    if (errors[name] || isEmpty(out[name])) continue;
    const v = out[name];
    if (def.fields[name]?.i18n && v && typeof v === "object" && !Array.isArray(v)) {
      for (const [lang, x] of Object.entries(v)) {
        if (isEmpty(x) || typeof x === "object") continue;
        if (await store.findByKey(def.name, name, lang, x as string | number | boolean, uuid)) { errors[name] = `the ${lang} value "${x}" is already used by another record`; break; }
      }
      continue;
    }
    if (typeof v === "object") continue;
    if (await store.findBy(def.name, name, v as string | number | boolean, uuid)) errors[name] = "this value is already used by another record";
  }
}

const MD5 = /^[0-9a-f]{32}$/;

/**
 * Image, file, upload and gallery values name files of the media library by uuid (the MD5 of the
 * content). Unless the writer asks to bring records before their files (an import's
 * `allowMissingFiles`), each must exist.
 */
async function checkFiles(store: RecordReads, files: string[], out: Values, errors: FieldErrors) {
  for (const name of files) {
    if (errors[name] || isEmpty(out[name])) continue;
    const v = out[name];
    const each = (Array.isArray(v) ? v : v && typeof v === "object" ? Object.values(v).flat() : [v]).filter((x) => !isEmpty(x));
    for (const x of each) {
      const id = String(x);
      if (!MD5.test(id) || !(await store.get(".files_meta", id))) { errors[name] = `"${id}" is not a file of the media library (upload it first: POST /api/v1/.files)`; break; }
    }
  }
}
