/** Turns stored rows into what the API returns: hidden fields removed, system fields added. */
import type { ResourceDef } from "../definitions/types";
import type { StoredRecord } from "../store/types";

export type ApiRecord = Record<string, unknown> & { uuid: string; _created: number; _modified: number };

export function publicRecord(def: ResourceDef, row: StoredRecord): ApiRecord {
  const data = JSON.parse(row.data) as Record<string, unknown>;
  for (const h of def.hidden) delete data[h];
  return {
    uuid: row.uuid,
    ...data,
    _created: row._created,
    _modified: row._modified,
    _created_by: row._created_by,
    _modified_by: row._modified_by,
  };
}

/**
 * The same record as JSON text. Without hidden fields the stored JSON is spliced in as it is,
 * which spares a parse and a stringify on the hottest path (reads and pages).
 */
export function publicRecordJson(def: ResourceDef, row: StoredRecord): string {
  if (def.hidden.size > 0) return JSON.stringify(publicRecord(def, row));
  const inner = row.data.length > 2 ? `${row.data.slice(1, -1)},` : "";
  return `{"uuid":${quote(row.uuid)},${inner}"_created":${row._created},"_modified":${row._modified},"_created_by":${quote(row._created_by)},"_modified_by":${quote(row._modified_by)}}`;
}

const PLAIN = /^[\w.-]*$/;
/** JSON string literal; identifiers (uuids) need no escaping, which spares the serializer. */
export const quote = (s: string | null): string => (s === null ? "null" : PLAIN.test(s) ? `"${s}"` : JSON.stringify(s));

/** Record values without hidden fields, for events and hooks. */
export function visibleData(def: ResourceDef, data: Record<string, unknown>): Record<string, unknown> {
  const out = { ...data };
  for (const h of def.hidden) delete out[h];
  return out;
}
