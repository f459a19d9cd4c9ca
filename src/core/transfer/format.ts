/**
 * The file formats of import and export: which one a file is, the column layout of csv/tsv, and
 * how one value becomes one cell and back. Pure functions, shared by both directions so that an
 * export always imports back unchanged.
 */
import type { FieldDef, ResourceDef } from "../definitions/types";
import { SYSTEM_FIELDS } from "../definitions/types";
import { badRequest } from "../errors";

export type Format = "json" | "csv" | "tsv";
export const FORMATS: readonly Format[] = ["json", "csv", "tsv"];

export const DELIMITER: Record<Exclude<Format, "json">, string> = { csv: ",", tsv: "\t" };
/** RFC 4180 wants CRLF for csv; tsv files are conventionally LF. */
export const NEWLINE: Record<Exclude<Format, "json">, string> = { csv: "\r\n", tsv: "\n" };
export const CONTENT_TYPE: Record<Format, string> = {
  json: "application/json; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  tsv: "text/tab-separated-values; charset=utf-8",
};

export function parseFormat(raw: string | null | undefined, fallback: Format = "json"): Format {
  if (raw === null || raw === undefined || raw === "") return fallback;
  const f = raw.toLowerCase();
  if (!(FORMATS as readonly string[]).includes(f)) throw badRequest(`format must be one of ${FORMATS.join(", ")}`);
  return f as Format;
}

/** `notes-2026-11-22.csv`: the resource and today's date (UTC). */
export const exportFilename = (resource: string, format: Format, now = new Date()) =>
  `${resource.replace(/^\./, "")}-${now.toISOString().slice(0, 10)}.${format}`;

/** The fields a file carries: every field except hidden and encrypted ones, in definition order. */
export const exportedFields = (def: ResourceDef): string[] => Object.keys(def.fields).filter((f) => !def.hidden.has(f));

/** Header of a csv/tsv export: `uuid`, the other system fields, then the fields. */
export const exportColumns = (def: ResourceDef): string[] => [...SYSTEM_FIELDS, ...exportedFields(def)];

/** Fields whose stored value is a list or an object: their cells hold JSON text. */
export const isStructured = (f: FieldDef): boolean => !!(f.multi || f.i18n || f.type === "gallery" || f.type === "group");

/**
 * Formula guard. A spreadsheet runs a cell that begins with = + - @ (or a tab or CR, which some
 * strip first) as a formula. Such text cells are exported with one leading apostrophe, which
 * spreadsheets show as text. To keep the round trip exact, a value that already begins with
 * apostrophes followed by one of those characters gets one more; the import takes exactly one
 * leading apostrophe off any cell of that shape.
 */
const GUARDED_EXPORT = /^'*[=+\-@\t\r]/;
const GUARDED_IMPORT = /^'+[=+\-@\t\r]/;
export const guardCell = (s: string): string => (GUARDED_EXPORT.test(s) ? `'${s}` : s);
export const unguardCell = (s: string): string => (GUARDED_IMPORT.test(s) ? s.slice(1) : s);

/** One stored value as a csv/tsv cell. Empty cell: no value (null or absent). */
export function toCell(f: FieldDef | undefined, v: unknown): string | number | boolean {
  if (v === null || v === undefined) return "";
  if (typeof v === "number" || typeof v === "boolean") return f && isStructured(f) ? JSON.stringify(v) : v;
  if (typeof v === "string") return guardCell(f && isStructured(f) ? JSON.stringify(v) : v);
  return guardCell(JSON.stringify(v));
}

/**
 * One csv/tsv cell as the value to write, before the write rules. Structured fields decode their
 * JSON text; a cell that is not JSON is taken as a single value (so `a` works for a multi field).
 */
export function fromCell(f: FieldDef | undefined, cell: string): unknown {
  const s = unguardCell(cell);
  if (s === "") return null;
  if (f && isStructured(f) && /^\s*[[{"]/.test(s)) {
    try {
      return JSON.parse(s);
    } catch {
      return s; // left to the field check, which names the problem
    }
  }
  return s;
}

/** Which format a file is: JSON when its content starts like JSON, else csv or tsv by its first line. */
export function sniffFormat(head: string, name: string): Format {
  const text = head.replace(/^\uFEFF/, "");
  const first = text.trimStart()[0];
  if (first === "{" || first === "[") return "json";
  const line = text.split(/\r?\n/, 1)[0] ?? "";
  const tabs = line.split("\t").length - 1;
  const commas = line.split(",").length - 1;
  if (tabs > commas) return "tsv";
  if (commas > tabs) return "csv";
  const ext = /\.([a-z]+)$/i.exec(name)?.[1]?.toLowerCase();
  if (ext === "json") return "json";
  return ext === "tsv" || ext === "tab" ? "tsv" : "csv";
}
