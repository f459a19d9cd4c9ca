/**
 * Checks and normalises one field value by its type and options. Returns the value to store or an
 * error sentence. Lists (`multi`, gallery) and translations (`i18n`) are unwrapped here so that each
 * element goes through the same scalar check.
 */
import type { FieldDef, ResourceDef } from "../definitions/types";

/** A failure may name where inside the value it is (`[2].title` inside a group). */
export type Checked = { ok: true; value: unknown } | { ok: false; error: string; at?: string };
const ok = (value: unknown): Checked => ({ ok: true, value });
const fail = (error: string, at?: string): Checked => ({ ok: false, error, at });

/** Rows of one group value, and how deep groups may nest (a stored value must never poison a list). */
export const GROUP_MAX_ROWS = 1000;
export const GROUP_MAX_DEPTH = 32;

export const isEmpty = (v: unknown) =>
  v === null || v === undefined || v === "" || (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => x === null || x === undefined || x === ""));

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
const COLOR = /^#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const URL_SCHEMES = new Set(["http:", "https:", "mailto:", "tel:", "ftp:"]);

function validDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const dt = new Date(Date.UTC(y, mo - 1, d));
  if (dt.getUTCFullYear() !== y || dt.getUTCMonth() !== mo - 1 || dt.getUTCDate() !== d) return false;
  return m[4] === undefined || (Number(m[4]) < 24 && Number(m[5]) < 60 && Number(m[6] ?? 0) < 60);
}

/**
 * Browsers drop tabs and newlines inside a URL and read `\` as `/`, so `/\evil.example` and
 * `/<TAB>/evil.example` go where `//evil.example` goes: to another host (an open redirect wherever a
 * site renders the field as a link). A path therefore holds no backslash and no control character,
 * and neither does any URL.
 */
const UNSAFE_IN_URL = /[\u0000-\u001f\u007f]/;

function validUrl(s: string): boolean {
  if (UNSAFE_IN_URL.test(s)) return false;
  if (s.startsWith("/") || s.startsWith("\\")) return !s.includes("\\") && !s.startsWith("//");
  try {
    return URL_SCHEMES.has(new URL(s).protocol);
  } catch {
    return false;
  }
}

function toNumber(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return null;
}

/** One scalar of the field's type. `range` narrows numbers (min/max, latitude, longitude). */
function checkScalar(f: FieldDef, v: unknown, range: [number, number] | null): Checked {
  switch (f.type) {
    case "number": {
      const n = toNumber(v);
      if (n === null) return fail("must be a number");
      const [min, max] = range ?? [f.min ?? -Infinity, f.max ?? Infinity];
      if (n < min) return fail(`must be at least ${min}`);
      if (n > max) return fail(`must be at most ${max}`);
      return ok(n);
    }
    case "location-picker": {
      const n = toNumber(v);
      if (n === null) return fail("latitude must be a number");
      return n < -90 || n > 90 ? fail("latitude must be between -90 and 90") : ok(n);
    }
    case "boolean":
      if (typeof v === "boolean") return ok(v);
      if (v === 1 || v === 0) return ok(v === 1);
      if (typeof v === "string" && /^(1|true|yes|on)$/i.test(v)) return ok(true);
      if (typeof v === "string" && /^(0|false|no|off)$/i.test(v)) return ok(false);
      return fail("must be true or false");
  }
  if (typeof v === "number" && f.type !== "select") v = String(v);
  if (typeof v !== "string") {
    if (f.type === "select" && typeof v === "number") v = String(v);
    else return fail("must be text");
  }
  const s = v as string;
  switch (f.type) {
    case "email": return EMAIL.test(s.trim()) ? ok(s.trim()) : fail("must be an e-mail address");
    case "url": return validUrl(s.trim()) ? ok(s.trim()) : fail("must be an http(s), mailto or tel URL, or a path starting with /");
    case "date": return validDate(s.trim()) ? ok(s.trim()) : fail("must be a date (YYYY-MM-DD) or an ISO 8601 date-time");
    case "color": return COLOR.test(s.trim()) ? ok(s.trim()) : fail("must be a colour like #1a2b3c");
    case "select":
      if (f.options && !Object.prototype.hasOwnProperty.call(f.options, s)) return fail(`must be one of ${Object.keys(f.options).join(", ")}`);
      return ok(s);
    case "text":
    case "slug":
      if (/[\r\n]/.test(s) && f.type === "text") return fail("must be a single line");
      return f.type === "slug" && s !== "" && !/^[\p{L}\p{N}]+(?:[-_][\p{L}\p{N}]+)*$/u.test(s) ? fail("must be a slug (letters, digits, - and _)") : ok(s);
    default:
      return ok(s);
  }
}

const isRow = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isPlain = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v);

/**
 * A group is one row or a list of rows; each row's keys are the group's `fields`, each checked by
 * the same rules as a top-level field (nested groups too). A group without `fields` takes rows of
 * plain values (text, numbers, booleans, or lists of them) only.
 */
function checkGroup(def: ResourceDef, f: FieldDef, v: unknown, depth: number): Checked {
  if (depth > GROUP_MAX_DEPTH) return fail(`groups nest at most ${GROUP_MAX_DEPTH} deep`);
  const rows = Array.isArray(v) ? v : [v];
  if (rows.length > GROUP_MAX_ROWS) return fail(`a group holds at most ${GROUP_MAX_ROWS} rows`);
  const out: Record<string, unknown>[] = [];
  for (const [i, row] of rows.entries()) {
    const at = Array.isArray(v) ? `[${i}]` : "";
    if (!isRow(row)) return fail("must be an object (a row of the group's fields)", at);
    const clean: Record<string, unknown> = Object.create(null);
    for (const [key, value] of Object.entries(row)) {
      const sub = f.fields?.[key];
      if (!f.fields) {
        if (!isPlain(value) && !(Array.isArray(value) && value.every(isPlain))) return fail("must be text, a number, a boolean or a list of them", `${at}.${key}`);
        clean[key] = value;
        continue;
      }
      if (!sub) return fail(`not a field of the group (${Object.keys(f.fields).join(", ")})`, `${at}.${key}`);
      const r = checkValue(def, sub, value, null, depth + 1);
      if (!r.ok) return fail(r.error, `${at}.${key}${r.at ?? ""}`);
      clean[key] = r.value;
    }
    for (const [key, sub] of Object.entries(f.fields ?? {})) {
      if (sub.required && isEmpty(clean[key])) return fail("is required", `${at}.${key}`);
    }
    out.push(clean);
  }
  return ok(Array.isArray(v) ? out : out[0]);
}

/** Unwraps multi / gallery lists. */
function checkList(f: FieldDef, v: unknown, range: [number, number] | null): Checked {
  if (f.multi || f.type === "gallery") {
    const items = Array.isArray(v) ? v : [v];
    const out: unknown[] = [];
    for (const [i, item] of items.entries()) {
      const r = checkScalar(f.type === "gallery" ? { ...f, type: "image" } : f, item, range);
      if (!r.ok) return fail(`item ${i + 1}: ${r.error}`);
      out.push(r.value);
    }
    return ok(out);
  }
  return checkScalar(f, v, range);
}

/** The numeric range a field must respect because another field names it as its longitude. */
export function rangeFor(def: ResourceDef, name: string): [number, number] | null {
  for (const f of Object.values(def.fields)) if (f.type === "location-picker" && f.longitude_field === name) return [-180, 180];
  return null;
}

/** True when a string of the value (or a key of an object in it) holds U+0000. */
function holdsNul(v: unknown): boolean {
  if (typeof v === "string") return v.includes("\u0000");
  if (Array.isArray(v)) return v.some(holdsNul);
  if (v && typeof v === "object") return Object.entries(v).some(([k, x]) => k.includes("\u0000") || holdsNul(x));
  return false;
}

export function checkField(def: ResourceDef, name: string, v: unknown): Checked {
  // No text has a use for it, and PostgreSQL cannot store it: refused on every store alike.
  if (holdsNul(v)) return fail("must not contain the NUL character (U+0000)");
  return checkValue(def, def.fields[name], v, rangeFor(def, name), 0);
}

function checkValue(def: ResourceDef, f: FieldDef, v: unknown, range: [number, number] | null, depth: number): Checked {
  if (v === null || v === undefined || v === "") return ok(v === undefined ? null : v);
  if (f.type === "group") return checkGroup(def, f, v, depth);
  if (!f.i18n) return checkList(f, v, range);
  if (typeof v !== "object" || Array.isArray(v)) return fail(`must be an object keyed by language (${(def.raw.languages ?? []).join(", ")})`);
  const out: Record<string, unknown> = {};
  for (const [lang, item] of Object.entries(v as Record<string, unknown>)) {
    if (!def.raw.languages?.includes(lang)) return fail(`"${lang}" is not a language of ${def.name} (${(def.raw.languages ?? []).join(", ")})`);
    if (item === null || item === undefined || item === "") { out[lang] = item ?? null; continue; }
    const r = checkList(f, item, range);
    if (!r.ok) return fail(`${lang}: ${r.error}`);
    out[lang] = r.value;
  }
  return ok(out);
}
