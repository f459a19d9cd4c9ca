/**
 * Import of a JSON, csv or tsv file into a resource, shared by `POST /api/v1/{resource}/import`
 * and `resd import`. Two phases:
 *  1. read: rows are parsed as a stream, matched to existing records, and put through the same
 *     write rules as the API (prepareValues: validation, html cleaning, shortcodes, hashing).
 *     Rejected rows are counted and reported; prepared rows go to a spool file, so memory stays
 *     flat however large the file.
 *  2. write: one store transaction writes every prepared row with the record service's writers
 *     (history, hooks and events as for any write). A crash before it commits leaves the resource
 *     as it was. The body awaits only the store (the spool is read synchronously), and it yields
 *     to the event loop between chunks so that a server keeps answering reads; other writes wait
 *     for the commit.
 */
import { join } from "node:path";
import type { Principal } from "../access/permissions";
import { authorize } from "../access/permissions";
import { DefinitionError, RESOURCE_NAME } from "../definitions/load";
import type { DefinitionFile, ResourceDef } from "../definitions/types";
import { isSystemField } from "../definitions/types";
import { AppError, badRequest } from "../errors";
import { checkUuid, prepareValues, type PrepareOptions, type Values } from "../records/prepare";
import { actor, writers } from "../records/service";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";
import type { Format } from "./format";
import { MatchIndex, matchKeys, parseMatchRule, type MatchKey, type MatchRule } from "./match";
import { openSource, type SourceRow } from "./source";
import { Spool, type SpoolEntry } from "./spool";

export type ImportStats = {
  imported: number; errors: number; created: number; updated: number; total: number;
  /** Updated rows per the key that found their record (uuid, id, name, title or the --match field). */
  matched: Record<string, number>;
};
/** One reason a row was rejected. `field` is null when the row as a whole is the problem. */
export type RowError = { row: number; field: string | null; reason: string; uuid?: string };
export type ImportResult = {
  stats: ImportStats;
  /** At most ERRORS_DETAIL_MAX entries; `stats.errors` counts every rejected row. */
  errors_detail: RowError[];
  format: Format;
  /** The resource did not exist and was defined from the file's `_meta`. */
  resource_created: boolean;
  /** With `strict`, true when rows were rejected and therefore nothing was written. */
  rolled_back: boolean;
};
export type ImportProgress = { phase: "read" | "write"; rows: number; bytes: number; totalBytes: number; toWrite: number };
export type ImportOptions = {
  /** File name, used with the content to tell the format. */
  name?: string;
  /** All or nothing: one rejected row and nothing is written. */
  strict?: boolean;
  /** Bring records before their files: image/file values need not name an uploaded file yet. */
  allowMissingFiles?: boolean;
  /** How rows find the record they update: `uuid`, `none`, `default` or a unique field (see match.ts). */
  match?: string;
  onProgress?: (p: ImportProgress) => void;
};

export const ERRORS_DETAIL_MAX = 1000;
/** Rows prepared concurrently (password hashing runs on Bun's thread pool). */
const WINDOW = 256;
const YIELD_EVERY = 2000;

class StrictRollback extends Error {}

type Written = { created: number; updated: number; matched: Record<string, number> };
const nothingWritten = (): Written => ({ created: 0, updated: 0, matched: {} });

export async function importRecords(site: Site, p: Principal, resource: string, file: Blob, opts: ImportOptions = {}): Promise<ImportResult> {
  authorize(p, resource, "import");
  const progress = { phase: "read" as "read" | "write", rows: 0, bytes: 0, totalBytes: file.size, toWrite: 0 };
  const source = await openSource(file, opts.name ?? "", resource, progress);
  const created = !site.defs.has(resource) && source.meta !== null;
  const def = created ? await defineFromMeta(site, resource, source.meta as DefinitionFile) : site.resource(resource);
  const rule = parseMatchRule(def, opts.match);
  const report = new Report();
  const spool = new Spool(join(site.config.dir, "data"));
  try {
    const prep: PrepareOptions = { passwordMinLength: site.config.passwordMinLength, allowMissingFiles: opts.allowMissingFiles };
    await readPhase(site, def, rule, source.rows(def), source.format, spool, report, () => opts.onProgress?.({ ...progress, rows: report.total }), prep);
    await spool.finish();
    const result = (w: Written, rolledBack: boolean): ImportResult => ({
      stats: { imported: w.created + w.updated, errors: report.errors, created: w.created, updated: w.updated, total: report.total, matched: w.matched },
      errors_detail: report.detail.sort((a, b) => a.row - b.row),
      format: source.format,
      resource_created: created,
      rolled_back: rolledBack,
    });
    if (opts.strict && report.errors > 0) return result(nothingWritten(), true);
    progress.phase = "write";
    progress.toWrite = spool.count;
    try {
      const w = await writePhase(site, p, def, rule, spool, report, !!opts.strict, (rows) => opts.onProgress?.({ ...progress, rows }));
      return result(w, false);
    } catch (e) {
      if (e instanceof StrictRollback) return result(nothingWritten(), true);
      throw e;
    }
  } finally {
    spool.remove();
  }
}

/** Creates a resource from an export's `_meta`: checked like a definition file, written to DIR/resources. */
async function defineFromMeta(site: Site, name: string, meta: DefinitionFile): Promise<ResourceDef> {
  if (!RESOURCE_NAME.test(name)) throw badRequest("resource names use letters, digits, _ and -");
  for (const [field, f] of Object.entries(meta.fields ?? {})) {
    if (f && f.type === "select" && f.resource && !site.defs.has(f.resource) && f.resource !== name) {
      throw badRequest(`_meta: field "${field}" takes its options from "${f.resource}", which does not exist`);
    }
  }
  try {
    return await site.define(name, meta);
  } catch (e) {
    if (e instanceof DefinitionError) throw badRequest(`_meta is not a valid definition: ${e.message}`);
    throw e;
  }
}

class Report {
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
function problemsOf(e: AppError): { field: string | null; reason: string }[] {
  const fields = Object.entries(e.extra.errors ?? {});
  return fields.length ? fields.map(([field, reason]) => ({ field, reason })) : [{ field: null, reason: e.details ?? e.code }];
}

/** A prepared row, a rejected one, or a failure that stops the import (kept until its turn, never unhandled). */
type Outcome = SpoolEntry | AppError | { fatal: unknown };
type Planned = { row: number; keys: MatchKey[]; given: string | null; work: Promise<Outcome> };

const NO_MATCH_TAKEN = "a record with this uuid exists, and match is none (rows only create)";

/**
 * Phase 1. Rows are matched in file order, then prepared up to WINDOW at a time. A row that shares
 * a match key with a row still in the window waits for it, so every row sees the rows before it.
 */
async function readPhase(site: Site, def: ResourceDef, rule: MatchRule, rows: AsyncIterable<SourceRow>, format: Format, spool: Spool, report: Report, tick: () => void, prep: PrepareOptions) {
  const index = new MatchIndex(site.store, def);
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
    if (rule.by === "none" && head.uuid !== null && (await site.store.get(def.name, head.uuid))) {
      report.reject(r.row, [{ field: "uuid", reason: NO_MATCH_TAKEN }], head.uuid);
      continue;
    }
    const uuid = target?.uuid ?? head.uuid ?? crypto.randomUUID();
    const generated = target === null && head.uuid === null;
    const work = prepareRow(site, def, r, format, target, uuid, generated, head.created, prep).catch((e: unknown): Outcome =>
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

async function prepareRow(site: Site, def: ResourceDef, r: SourceRow, format: Format, target: { by: string } | null, uuid: string, generated: boolean, created: number | null, prep: PrepareOptions): Promise<SpoolEntry> {
  const update = target !== null;
  const input: Values = {};
  for (const [k, v] of Object.entries(r.values)) {
    if (isSystemField(k)) continue;
    // An empty csv cell is "no value": a new record leaves the field out, an update clears it.
    if (format !== "json" && v === null && !update) continue;
    input[k] = v;
  }
  const values = await prepareValues(site.store, def, input, update ? "update" : "create", uuid, prep);
  return { row: r.row, kind: update ? "u" : generated ? "n" : "c", by: target?.by ?? "", uuid, created: update ? null : created, values };
}

/** Remembers whether the record's own insert or update failed (a constraint), as opposed to a hook. */
function trackWrites(tx: StoreTx, resource: string) {
  const state = { failed: null as string | null };
  const wrapped = new Proxy(tx, {
    get(target, key, receiver) {
      if (key !== "insert" && key !== "update") return Reflect.get(target, key, receiver);
      const write = Reflect.get(target, key, receiver) as StoreTx["insert"];
      return async (res: string, rec: Parameters<StoreTx["insert"]>[1]) => {
        try {
          await write(res, rec);
        } catch (e) {
          if (res === resource) state.failed = rec.uuid;
          throw e;
        }
      };
    },
  });
  return { tx: wrapped, state };
}

/** Phase 2: one transaction; a row whose own write breaks a constraint is rejected alone. */
async function writePhase(site: Site, p: Principal, def: ResourceDef, rule: MatchRule, spool: Spool, report: Report, strict: boolean, tick: (rows: number) => void): Promise<Written> {
  return site.store.transaction(async (outer) => {
    const { tx, state } = trackWrites(outer, def.name);
    const counts = nothingWritten();
    // Every row passes the same account guard as an API write of it, inside this transaction.
    const by = actor(p, "import");
    let n = 0;
    for (const e of spool.entries()) {
      if (++n % YIELD_EVERY === 0) {
        tick(n);
        await new Promise((r) => setImmediate(r));
      }
      state.failed = null;
      try {
        // A uuid this import generated cannot exist: one lookup less per new record.
        const current = e.kind === "n" ? null : await tx.get(def.name, e.uuid);
        if (current && e.kind === "c" && rule.by === "none") {
          // An earlier row of this file created the uuid: with match none, nothing merges.
          report.reject(e.row, [{ field: "uuid", reason: NO_MATCH_TAKEN }], e.uuid);
        } else if (current) {
          await writers.updatePrepared(site, tx, def, current, e.values, by);
          counts.updated++;
          const key = e.by || "uuid";
          counts.matched[key] = (counts.matched[key] ?? 0) + 1;
        } else if (e.kind !== "u") {
          await writers.insertPrepared(site, tx, def, e.uuid, e.values, by, "create", e.created ?? undefined);
          counts.created++;
        } else {
          report.reject(e.row, [{ field: null, reason: "the record it matched was deleted during the import" }], e.uuid);
        }
      } catch (err) {
        // A row refused by the account guard (users, roles) is rejected alone, like an invalid one.
        const refused = err instanceof AppError && err.status === 403;
        if (!(err instanceof AppError) || (state.failed !== e.uuid && !refused)) throw err;
        report.reject(e.row, problemsOf(err), e.uuid);
      }
    }
    tick(n);
    if (strict && report.errors > 0) throw new StrictRollback();
    return counts;
  });
}
