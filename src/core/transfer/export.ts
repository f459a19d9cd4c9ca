/**
 * Export of a resource as JSON, csv or tsv, shared by `GET /api/v1/{resource}/export` and
 * `resd export`. Rows come from the store's stream and leave in chunks of about 64 KiB, so memory
 * stays flat for a million records. Hidden and encrypted fields are never written.
 *
 * json: `{"_meta": <definition>, "<uuid>": <record>, …}`: the records keyed by uuid, as the API
 *       returns them (system fields included), one per line, beside the definition.
 * csv/tsv: a header row (`uuid`, `_created`, `_modified`, `_created_by`, `_modified_by`, then every
 *       field in definition order), one row per record; see format.ts for the cells.
 */
import Papa from "papaparse";
import { authorize, type Principal } from "../access/permissions";
import type { ResourceDef } from "../definitions/types";
import { publicRecordJson } from "../records/output";
import type { Site } from "../site";
import type { StoredRecord } from "../store/types";
import { CONTENT_TYPE, DELIMITER, exportColumns, exportFilename, NEWLINE, toCell, type Format } from "./format";

export type ExportFile = {
  filename: string;
  contentType: string;
  /** The file's text in chunks; closing the iterator early releases the store's stream. */
  chunks: AsyncIterable<string>;
};

const CHUNK_CHARS = 64 * 1024;

export function exportRecords(site: Site, p: Principal, resource: string, format: Format, now = new Date()): ExportFile {
  const def = site.resource(resource);
  authorize(p, resource, "export");
  // In insertion order: a re-import then creates records in the order they were made.
  const rows = site.store.stream(resource, { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 });
  return {
    filename: exportFilename(resource, format, now),
    contentType: CONTENT_TYPE[format],
    chunks: format === "json" ? jsonChunks(def, rows) : delimitedChunks(def, rows, format),
  };
}

async function* jsonChunks(def: ResourceDef, rows: AsyncIterable<StoredRecord>): AsyncIterable<string> {
  let buf = `{"_meta":${JSON.stringify(def.raw)}`;
  for await (const row of rows) {
    buf += `,\n${JSON.stringify(row.uuid)}:${publicRecordJson(def, row)}`;
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = "";
    }
  }
  yield `${buf}\n}\n`;
}

async function* delimitedChunks(def: ResourceDef, rows: AsyncIterable<StoredRecord>, format: Exclude<Format, "json">): AsyncIterable<string> {
  const columns = exportColumns(def);
  const opts = { delimiter: DELIMITER[format], newline: NEWLINE[format], header: false, escapeFormulae: false } as const;
  const unparse = (batch: unknown[][]) => Papa.unparse(batch, opts) + NEWLINE[format];
  yield unparse([columns]);
  let batch: unknown[][] = [];
  let size = 0;
  for await (const row of rows) {
    const data = JSON.parse(row.data) as Record<string, unknown>;
    const system: Record<string, unknown> = { uuid: row.uuid, _created: row._created, _modified: row._modified, _created_by: row._created_by, _modified_by: row._modified_by };
    const cells = columns.map((c) => toCell(def.fields[c], c in system ? system[c] : data[c]));
    batch.push(cells);
    size += row.data.length;
    if (size >= CHUNK_CHARS) {
      yield unparse(batch);
      batch = [];
      size = 0;
    }
  }
  if (batch.length) yield unparse(batch);
}
