/**
 * Reads an import file into rows, one at a time. csv/tsv are parsed as a stream (papaparse), so
 * memory does not grow with the file; JSON is parsed whole (use csv for very large files).
 */
import Papa from "papaparse";
import type { Duplex } from "node:stream";
import type { ResourceDef } from "../definitions/types";
import { isSystemField, type DefinitionFile } from "../definitions/types";
import { badRequest } from "../errors";
import { DELIMITER, fromCell, sniffFormat, type Format } from "./format";

/**
 * One record of the file: its values (system fields included) and its 1-based position (the csv
 * header row is not counted). `error` marks a row that could not even be read as a record.
 */
export type SourceRow = { row: number; values: Record<string, unknown>; error?: string };

export type Source = {
  format: Format;
  /** The definition carried by a JSON export, if any. */
  meta: DefinitionFile | null;
  /** Rows in file order. `def` is needed by csv/tsv to decode cells by field type. */
  rows(def: ResourceDef): AsyncIterable<SourceRow>;
};

export type Progress = { bytes: number; totalBytes: number };

const SNIFF_BYTES = 64 * 1024;

/** Opens a file: detects its format from content and name; JSON is read and checked here. */
export async function openSource(file: Blob, name: string, progress?: Progress): Promise<Source> {
  const head = await file.slice(0, SNIFF_BYTES).text();
  const format = sniffFormat(head, name);
  if (format !== "json") return { format, meta: null, rows: (def) => delimitedRows(file, format, def, progress) };
  let doc: unknown;
  try {
    doc = JSON.parse(await file.text());
  } catch (e) {
    throw badRequest(`the file is not valid JSON: ${(e as Error).message}`);
  }
  if (progress) progress.bytes = file.size;
  return jsonSource(doc);
}

/**
 * JSON: a list of records, an object of records keyed by uuid, or an export (the same object with
 * the definition under `_meta`). An API list answer (`{"success":…, "<resource>": {…}}`) also works.
 */
function jsonSource(doc: unknown): Source {
  if (Array.isArray(doc)) return { format: "json", meta: null, rows: () => listRows(doc) };
  if (!doc || typeof doc !== "object") throw badRequest("a JSON import is a list of records or an object of records keyed by uuid");
  const obj = doc as Record<string, unknown>;
  const meta = obj._meta && typeof obj._meta === "object" && !Array.isArray(obj._meta) ? (obj._meta as DefinitionFile) : null;
  return {
    format: "json",
    meta,
    rows: (def) => {
      const inner = "success" in obj && obj[def.name] && typeof obj[def.name] === "object" ? (obj[def.name] as Record<string, unknown>) : obj;
      return keyedRows(inner);
    },
  };
}

async function* listRows(list: unknown[]): AsyncIterable<SourceRow> {
  for (const [i, item] of list.entries()) yield asRow(i + 1, item);
}

async function* keyedRows(obj: Record<string, unknown>): AsyncIterable<SourceRow> {
  let row = 0;
  for (const [key, item] of Object.entries(obj)) {
    if (key === "_meta") continue;
    const r = asRow(++row, item);
    // The key is the uuid; a uuid inside the record that differs is the row's own problem.
    yield r.error || r.values.uuid !== undefined ? r : { row, values: { uuid: key, ...r.values } };
  }
}

const asRow = (row: number, item: unknown): SourceRow =>
  item && typeof item === "object" && !Array.isArray(item)
    ? { row, values: item as Record<string, unknown> }
    : { row, values: {}, error: "is not an object of field values" };

/** Feeds the file's text into papaparse's stream and yields rows; the header row names the columns. */
async function* delimitedRows(file: Blob, format: Exclude<Format, "json">, def: ResourceDef, progress?: Progress): AsyncIterable<SourceRow> {
  const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { delimiter: DELIMITER[format], header: false, skipEmptyLines: true }) as Duplex;
  void feed(file, parser, progress);
  let columns: string[] | null = null;
  let row = 0;
  for await (const cells of parser as AsyncIterable<string[]>) {
    if (!columns) {
      columns = checkHeader(cells, def);
      continue;
    }
    row++;
    if (cells.length !== columns.length) {
      yield { row, values: {}, error: `has ${cells.length} cells; the header has ${columns.length}` };
      continue;
    }
    const values: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) values[columns[i]] = fromCell(def.fields[columns[i]], cells[i]);
    yield { row, values };
  }
  if (!columns) throw badRequest("the file is empty: the first row must name the fields");
}

/**
 * Decodes the bytes as UTF-8 across chunk boundaries (papaparse's own Buffer handling would split
 * multi-byte characters) and respects the parser's back-pressure.
 */
async function feed(file: Blob, parser: Duplex, progress?: Progress): Promise<void> {
  const decoder = new TextDecoder("utf-8");
  try {
    for await (const chunk of file.stream()) {
      // The reader stopped early (a bad header, an aborted import): stop reading the file too.
      if (parser.destroyed) return;
      if (progress) progress.bytes += chunk.byteLength;
      const text = decoder.decode(chunk, { stream: true });
      if (text && !parser.write(text)) await new Promise((r) => { parser.once("drain", r); parser.once("close", r); });
    }
    if (parser.destroyed) return;
    const rest = decoder.decode();
    if (rest) parser.write(rest);
    parser.end();
  } catch (e) {
    parser.destroy(badRequest(`the file cannot be read: ${(e as Error).message}`));
  }
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
