/** A record as the overview holds it: the API's record, keyed by its uuid. */
import type { ResourceView } from "./state";

export type Row = Record<string, unknown> & { uuid: string };

const TITLE_NAMES = ["title", "name", "label", "heading", "subject", "email"];
const TEXTUAL = new Set(["text", "email", "textarea", "slug", "url"]);

/** The field people know a record by: one named like a title, else the first text column. */
export function titleField(def: ResourceView): string | null {
  const named = TITLE_NAMES.find((n) => def.fields[n] && TEXTUAL.has(def.fields[n].type) && !def.fields[n].multi);
  if (named) return named;
  return def.columns.find((c) => def.fields[c] && TEXTUAL.has(def.fields[c].type) && !def.fields[c].multi) ?? null;
}

/** An i18n value in the first of the browser's languages that has text, else the resource's first. */
export function translated(v: unknown, languages: string[]): unknown {
  if (!v || typeof v !== "object" || Array.isArray(v)) return v;
  const o = v as Record<string, unknown>;
  const lang = [...navigator.languages.map((l) => l.slice(0, 2)), ...languages].find((l) => typeof o[l] === "string" && o[l] !== "");
  return lang ? o[lang] : "";
}

/** A record's title as a string ("" when it has none), an i18n title in the reader's language. */
export function recordTitle(def: ResourceView, record: Record<string, unknown> | null | undefined): string {
  const f = titleField(def);
  if (!f || !record) return "";
  const v = translated(record[f], def.languages);
  return typeof v === "string" ? v.trim() : v === null || v === undefined ? "" : String(v);
}
