/**
 * The read phase of an import: rows are parsed, matched to the records they update, and put
 * through the same write rules as the API (prepareValues: validation, html cleaning, shortcodes,
 * hashing). Rejected rows are counted; prepared ones go to the spool. It needs only reads of
 * committed records, so it runs on the importing thread or on a worker beside the write phase.
 */
import type { ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import { AppError } from "../errors";
import { checkUuid, prepareValues, type PrepareOptions } from "../records/prepare";
import type { Values } from "../validation/object";
import { newRecordId } from "../records/ids";
import type { RecordReads } from "../store/types";
import type { Format } from "./format";
import { MatchIndex, matchKeys, type MatchKey, type MatchRule } from "./match";
import type { SourceRow } from "./source";
import type { SpoolEntry, SpoolWriter } from "./spool";

/** One reason a row was rejected. `field` is null when the row as a whole is the problem. */
export type RowError = { row: number; field: string | null; reason: string; uuid?: string };

export const ERRORS_DETAIL_MAX = 1000;
/** Rows prepared concurrently (password hashing runs on Bun's thread pool). */
const WINDOW = 256;

/** Rows read and rows rejected; plain data, so that a reading worker can hand it over as it is. */
export type ReportData = { total: number; errors: number; detail: RowError[] };

export class Report implements ReportData {
  total = 0;
  errors = 0;
  detail: RowError[] = [];
  reject(row: number, problems: { field: string | null; reason: string }[], uuid?: string) {
    this.errors++;
    for (const pr of problems) {
      if (this.detail.length >= ERRORS_DETAIL_MAX) break;
      this.detail.push({ row, field: pr.field, reason: pr.reason, ...(uuid ? { uuid } : {}) });
    }
  }
}

/** The problems an AppError names, per field when it has them. */
export function problemsOf(e: AppError): { field: string | null; reason: string }[] {
  const fields = Object.entries(e.extra.errors ?? {});
  return fields.length ? fields.map(([field, reason]) => ({ field, reason })) : [{ field: null, reason: e.details ?? e.code }];
}

/** A prepared row, a rejected one, or a failure that stops the import (kept until its turn, never unhandled). */
type Outcome = SpoolEntry | AppError | { fatal: unknown };
type Planned = { row: number; keys: MatchKey[]; given: string | null; work: Promise<Outcome> };

export const NO_MATCH_TAKEN = "a record with this uuid exists, and match is none (rows only create)";

/**
 * Rows are matched in file order, then prepared up to WINDOW at a time. A row that shares a match
 * key with a row still in the window waits for it, so every row sees the rows before it.
 * `windowDone` runs after each window reached the spool (a reading worker tells the writer there).
 */
export async function readPhase(reads: RecordReads, def: ResourceDef, rule: MatchRule, rows: AsyncIterable<SourceRow>, format: Format, spool: SpoolWriter, report: Report, tick: () => void, prep: PrepareOptions, windowDone: () => Promise<void> = async () => {}) {
  const index = new MatchIndex(reads, def);
  let window: Planned[] = [];
  let windowKeys = new Set<string>();
  const flush = async () => {
    for (const pl of window) {
      const out = await pl.work;
      if ("fatal" in out) throw out.fatal;
      if (out instanceof AppError) report.reject(pl.row, problemsOf(out), pl.given ?? undefined);
      else {
        spool.write(out);
        index.add(out.uuid, pl.keys);
      }
    }
    window = [];
    windowKeys = new Set();
    await windowDone();
  };
  for await (const r of rows) {
    report.total++;
    if (report.total % 1000 === 0) tick();
    if (r.error) {
      report.reject(r.row, [{ field: null, reason: r.error }]);
      continue;
    }
    const head = readSystemFields(r);
    if (head instanceof AppError) {
      report.reject(r.row, problemsOf(head));
      continue;
    }
    const keys = matchKeys(def, r.values, rule);
    if (window.length >= WINDOW || keys.some((k) => windowKeys.has(k.key)) || (head.uuid !== null && windowKeys.has(head.uuid))) await flush();
    const target = rule.by === "none" ? null : await index.find(head.uuid, keys);
    if (rule.by === "none" && head.uuid !== null && (await reads.get(def.name, head.uuid))) {
      report.reject(r.row, [{ field: "uuid", reason: NO_MATCH_TAKEN }], head.uuid);
      continue;
    }
    const uuid = target?.uuid ?? head.uuid ?? newRecordId();
    const generated = target === null && head.uuid === null;
    const work = prepareRow(reads, def, r, format, target, uuid, generated, head.created, prep).catch((e: unknown): Outcome =>
      e instanceof AppError && (e.status === 400 || e.status === 422) ? e : { fatal: e });
    window.push({ row: r.row, keys, given: head.uuid, work });
    for (const k of keys) windowKeys.add(k.key);
    windowKeys.add(uuid);
  }
  await flush();
  tick();
}

/** `uuid` and `_created` of a row; the other system fields are the service's to set. */
function readSystemFields(r: SourceRow): { uuid: string | null; created: number | null } | AppError {
  const rawUuid = r.values.uuid;
  let uuid: string | null = null;
  if (rawUuid !== undefined && rawUuid !== null && rawUuid !== "") {
    try {
      uuid = checkUuid(rawUuid);
    } catch (e) {
      return new AppError(400, "INVALID_DATA", undefined, { errors: { uuid: (e as AppError).details ?? "is not a valid uuid" } });
    }
  }
  const rawCreated = r.values._created;
  let created: number | null = null;
  if (rawCreated !== undefined && rawCreated !== null && rawCreated !== "") {
    created = typeof rawCreated === "number" ? rawCreated : typeof rawCreated === "string" && /^\d+$/.test(rawCreated.trim()) ? Number(rawCreated) : NaN;
    if (!Number.isSafeInteger(created) || created < 0) {
      return new AppError(400, "INVALID_DATA", undefined, { errors: { _created: "must be a timestamp in seconds (a whole number)" } });
    }
  }
  return { uuid, created };
}

async function prepareRow(reads: RecordReads, def: ResourceDef, r: SourceRow, format: Format, target: { by: string } | null, uuid: string, generated: boolean, created: number | null, prep: PrepareOptions): Promise<SpoolEntry> {
  const update = target !== null;
  const input: Values = {};
  for (const [k, v] of Object.entries(r.values)) {
    if (isSystemField(k)) continue;
    // An empty csv cell is "no value": a new record leaves the field out, an update clears it.
    if (format !== "json" && v === null && !update) continue;
    input[k] = v;
  }
  const values = await prepareValues(reads, def, input, update ? "update" : "create", uuid, prep);
  return { row: r.row, kind: update ? "u" : generated ? "n" : "c", by: target?.by ?? "", uuid, created: update ? null : created, values };
}
