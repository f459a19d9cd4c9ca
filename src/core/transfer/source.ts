/**
 * Reads an import file into rows, one at a time, as a stream whatever the format: csv/tsv through
 * papaparse, JSON split into its records (json-members.ts). Memory does not grow with the file.
 */
import Papa from "papaparse";
import type { ResourceDef } from "../definitions/types";
import { isSystemField, type DefinitionFile } from "../definitions/types";
import { AppError, badRequest } from "../errors";
import { DELIMITER, fromCell, sniffFormat, type Format } from "./format";
import { JsonMembers } from "./json-members";

/**
 * One record of the file: its values (system fields included) and its 1-based position (the csv
 * header row is not counted). `error` marks a row that could not even be read as a record.
 */
export type SourceRow = { row: number; values: Record<string, unknown>; error?: string };

/** What reading the rows needs to know about a file once it was opened: a worker thread can read them too. */
export type Layout = { format: Format; /** A JSON API answer: the records are under the resource's name. */ api: boolean };

export type Source = {
  format: Format;
  layout: Layout;
  /** The definition carried by a JSON export, if any. */
  meta: DefinitionFile | null;
  /** Rows in file order. `def` is needed by csv/tsv to decode cells by field type. */
  rows(def: ResourceDef): AsyncIterable<SourceRow>;
};

/** The rows of a file whose layout is known (see openSource). */
export function rowsOf(file: Blob, layout: Layout, def: ResourceDef, progress?: Progress): AsyncIterable<SourceRow> {
  return layout.format === "json" ? jsonRows(file, layout.api ? def.name : null, progress) : delimitedRows(file, layout.format, def, progress);
}

export type Progress = { bytes: number; totalBytes: number };

const SNIFF_BYTES = 64 * 1024;

/** Opens a file: detects its format from content and name; JSON's outline is checked here. */
export async function openSource(file: Blob, name: string, resource: string, progress?: Progress): Promise<Source> {
  const head = await file.slice(0, SNIFF_BYTES).text();
  const format = sniffFormat(head, name);
  if (format !== "json") {
    const layout: Layout = { format, api: false };
    return { format, layout, meta: null, rows: (def) => rowsOf(file, layout, def, progress) };
  }
  return jsonSource(file, resource, progress);
}

/** Feeds a file's text to a splitter, a piece at a time, handing out what each piece completed. */
async function* splitJson<T>(file: Blob, split: JsonMembers, out: T[], progress?: Progress): AsyncIterable<T> {
  const decoder = new TextDecoder("utf-8");
  for await (const chunk of file.stream()) {
    if (progress) progress.bytes += chunk.byteLength;
    split.push(decoder.decode(chunk, { stream: true }));
    yield* out.splice(0);
  }
  split.push(decoder.decode());
  split.end();
  yield* out.splice(0);
}

/**
 * JSON: a list of records, an object of records keyed by uuid, or an export (the same object with
 * the definition under `_meta`). An API list answer (`{"success":…, "<resource>": {…}}`) also works.
 * Read as a stream, twice: first its outline (is it well formed, is it an API answer, its `_meta`),
 * then record by record — memory holds one record, not the file.
 */
async function jsonSource(file: Blob, resource: string, progress?: Progress): Promise<Source> {
  let success = false;
  let inner = false;
  let meta: DefinitionFile | null = null;
  const outline = new JsonMembers((m) => {
    if (m.depth !== 1 || m.key === null) return;
    if (m.key === "success") success = true;
    if (m.key === "_meta") {
      const v = parseMember(m.text);
      if (v && typeof v === "object" && !Array.isArray(v)) meta = v as DefinitionFile;
    }
  }, (key) => key === resource && (inner = true));
  for await (const _ of splitJson(file, outline, [])) { /* the callbacks take what they need */ }
  // An API answer's records are the object under the resource's name; other files are records at the top.
  const layout: Layout = { format: "json", api: success && inner };
  return { format: "json", layout, meta, rows: (def) => rowsOf(file, layout, def, progress) };
}

async function* jsonRows(file: Blob, under: string | null, progress?: Progress): AsyncIterable<SourceRow> {
  const out: SourceRow[] = [];
  let row = 0;
  const split = new JsonMembers((m) => {
    if (under !== null ? m.depth !== 2 : m.key === "_meta") return;
    row++;
    let item: unknown;
    try {
      item = JSON.parse(m.text);
    } catch (e) {
      out.push({ row, values: {}, error: `is not valid JSON: ${(e as Error).message}` });
      return;
    }
    const r = asRow(row, item);
    // The key is the uuid; a uuid inside the record that differs is the row's own problem.
    out.push(m.key === null || r.error || r.values.uuid !== undefined ? r : { row, values: { uuid: m.key, ...r.values } });
  }, (key) => under !== null && key === under);
  yield* splitJson(file, split, out, progress);
}

function parseMember(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`the file is not valid JSON: ${(e as Error).message}`);
  }
}

const asRow = (row: number, item: unknown): SourceRow =>
  item && typeof item === "object" && !Array.isArray(item)
    ? { row, values: item as Record<string, unknown> }
    : { row, values: {}, error: "is not an object of field values" };

/**
 * Streams csv/tsv rows with papaparse's core parser, chunk by chunk: each chunk is parsed up to its
 * last complete row and the rest is carried into the next (as papaparse's own streamers do). The
 * bytes are decoded as UTF-8 across chunk boundaries, so a character split between chunks is kept.
 * This pull loop is many times faster than piping through papaparse's node Duplex stream.
 */
async function* delimitedRows(file: Blob, format: Exclude<Format, "json">, def: ResourceDef, progress?: Progress): AsyncIterable<SourceRow> {
  const decoder = new TextDecoder("utf-8");
  let parser: Papa.Parser | null = null;
  let carry = "";
  let columns: string[] | null = null;
  let row = 0;
  let newline: "\r\n" | "\n" | "\r" = "\n";
  // Line breaks before the text being parsed, so that a quoting error can name its line.
  let linesBefore = 0;
  const rowsOf = (text: string, last: boolean): SourceRow[] => {
    if (!parser) {
      newline = lineEnding(text);
      parser = new Papa.Parser({ delimiter: DELIMITER[format], newline });
    }
    const res = parser.parse(text, 0, !last) as { data: string[][]; errors: { code: string; index: number }[]; meta: { cursor: number } };
    const quoting = res.errors.find((e) => e.code === "MissingQuotes" || e.code === "InvalidQuotes");
    if (quoting) {
      // The rest of the file would be read as one value: no row after this point can be trusted.
      const line = linesBefore + countBreaks(text, newline, quoting.index) + 1;
      throw badRequest(quoting.code === "MissingQuotes"
        ? `line ${line}: a quoted value opens here and is never closed (unterminated ")`
        : `line ${line}: a quote inside a quoted value must be doubled ("")`);
    }
    linesBefore += countBreaks(text, newline, res.meta.cursor);
    carry = last ? "" : text.slice(res.meta.cursor);
    const out: SourceRow[] = [];
    for (const cells of res.data) {
      if (cells.length === 1 && cells[0] === "") continue; // empty line
      if (!columns) {
        columns = checkHeader(cells, def);
        continue;
      }
      row++;
      if (cells.length !== columns.length) {
        out.push({ row, values: {}, error: `has ${cells.length} cells; the header has ${columns.length}` });
        continue;
      }
      const values: Record<string, unknown> = {};
      for (let i = 0; i < columns.length; i++) values[columns[i]] = fromCell(def.fields[columns[i]], cells[i]);
      out.push({ row, values });
    }
    return out;
  };
  try {
    for await (const chunk of file.stream()) {
      if (progress) progress.bytes += chunk.byteLength;
      yield* rowsOf(carry + decoder.decode(chunk, { stream: true }), false);
    }
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw badRequest(`the file cannot be read: ${(e as Error).message}`);
  }
  const rest = carry + decoder.decode();
  if (rest) yield* rowsOf(rest, true);
  if (!columns) throw badRequest("the file is empty: the first row must name the fields");
}

/** Line breaks in text[0, end). */
function countBreaks(text: string, newline: string, end: number): number {
  const mark = newline === "\r" ? "\r" : "\n";
  let n = 0;
  for (let i = text.indexOf(mark); i !== -1 && i < end; i = text.indexOf(mark, i + 1)) n++;
  return n;
}

/** The file's line ending, from its first line break (the header row holds no quoted breaks). */
function lineEnding(text: string): "\r\n" | "\n" | "\r" {
  const n = text.indexOf("\n");
  if (n > 0 && text[n - 1] === "\r") return "\r\n";
  if (n === -1 && text.includes("\r")) return "\r";
  return "\n";
}

/** The first row: system fields and fields of the resource; anything else stops the import. */
function checkHeader(cells: string[], def: ResourceDef): string[] {
  const columns = cells.map((c) => c.trim());
  const unknown = columns.filter((c) => !isSystemField(c) && !def.fields[c]);
  if (unknown.length) throw badRequest(`unknown columns for ${def.name}: ${unknown.join(", ")} (the first row must name fields of the resource)`);
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c)) throw badRequest(`the column ${c} appears twice`);
    seen.add(c);
  }
  return columns;
}
