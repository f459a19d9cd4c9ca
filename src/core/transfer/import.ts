/**
 * Import of a JSON, csv or tsv file into a resource, shared by `POST /api/v1/{resource}/import`
 * and `resd import`. Two phases:
 *  1. read (read-phase.ts): rows are parsed as a stream, matched to existing records, and put
 *     through the same write rules as the API. Rejected rows are counted and reported; prepared
 *     rows go to a spool file, so memory stays flat however large the file.
 *  2. write: one store transaction writes every prepared row with the record service's writers
 *     (history, hooks and events as for any write). A crash before it commits leaves the resource
 *     as it was. The body awaits only the store and the reading (the spool is read synchronously),
 *     and it yields to the event loop between chunks so that a server keeps answering reads; other
 *     writes wait for the commit.
 * A small file is read first, then written. A large one is read on a worker thread while the
 * transaction already writes what was spooled (reader.ts): the phases then run on two cores.
 */
import { join } from "node:path";
import type { BunFile } from "bun";
import type { Principal } from "../access/permissions";
import { authorize } from "../access/permissions";
import { DefinitionError, RESOURCE_NAME } from "../definitions/load";
import type { DefinitionFile, ResourceDef } from "../definitions/types";
import { AppError, badRequest } from "../errors";
import type { PrepareOptions } from "../records/prepare";
import { actor, writers } from "../records/service";
import type { Site } from "../site";
import type { StoreTx } from "../store/types";
import type { Format } from "./format";
import { parseMatchRule, type MatchRule } from "./match";
import { ERRORS_DETAIL_MAX, NO_MATCH_TAKEN, problemsOf, readPhase, Report, type RowError } from "./read-phase";
import { finishedFeed, WorkerFeed, type Feed } from "./reader";
import { openSource } from "./source";
import { newSpoolPath, removeSpool, Spool, SpoolTail } from "./spool";

export { ERRORS_DETAIL_MAX, type RowError } from "./read-phase";

export type ImportStats = {
  imported: number; errors: number; created: number; updated: number; total: number;
  /** Updated rows per the key that found their record (uuid, id, name, title or the --match field). */
  matched: Record<string, number>;
};
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
  /** Stops the import between rows: its transaction rolls back and the abort's reason is thrown. */
  signal?: AbortSignal;
};

const YIELD_EVERY = 2000;
/** A full collection every so many rows (~20 ms) keeps a million-row import's memory near its floor. */
const COLLECT_EVERY = 64_000;
/** From this size on a file is read on a worker thread beside the writes (its start costs ~0.1 s). */
export const WORKER_FROM_BYTES = 4 * 1024 * 1024;

class StrictRollback extends Error {}

type Written = { created: number; updated: number; matched: Record<string, number> };
const nothingWritten = (): Written => ({ created: 0, updated: 0, matched: {} });

/** The path of a file on disk (Bun.file), which a worker thread can open itself; null for other blobs. */
const pathOf = (file: Blob): string | null => {
  const f = file as Partial<BunFile>;
  return typeof f.name === "string" && typeof f.exists === "function" ? f.name : null;
};

export async function importRecords(site: Site, p: Principal, resource: string, file: Blob, opts: ImportOptions = {}): Promise<ImportResult> {
  authorize(p, resource, "import");
  const progress = { phase: "read" as "read" | "write", rows: 0, bytes: 0, totalBytes: file.size, toWrite: 0 };
  const source = await openSource(file, opts.name ?? "", resource, progress);
  const created = !site.defs.has(resource) && source.meta !== null;
  const def = created ? await defineFromMeta(site, resource, source.meta as DefinitionFile) : site.resource(resource);
  const rule = parseMatchRule(def, opts.match);
  const prep: PrepareOptions = { passwordMinLength: site.config.passwordMinLength, allowMissingFiles: opts.allowMissingFiles };
  const spoolPath = newSpoolPath(join(site.config.dir, "data"));
  /** Rows read and rejected by the read phase; rows rejected when written are the write phase's. */
  let read = new Report();
  const rejectedInWrite = new Report();
  const result = (w: Written, rolledBack: boolean): ImportResult => ({
    stats: { imported: w.created + w.updated, errors: read.errors + rejectedInWrite.errors, created: w.created, updated: w.updated, total: read.total, matched: w.matched },
    errors_detail: [...read.detail, ...rejectedInWrite.detail].sort((a, b) => a.row - b.row).slice(0, ERRORS_DETAIL_MAX),
    format: source.format,
    resource_created: created,
    rolled_back: rolledBack,
  });
  const spools = [spoolPath];
  let feed: Feed = finishedFeed;
  let tail: SpoolTail | null = null;
  try {
    const reads = site.store.detachedReads();
    const path = pathOf(file);
    // Hashing (argon2id, ~0.2 s a value) would hold the write transaction for as long: read first.
    const hashes = def.encrypted.size > 0 || Object.values(def.fields).some((f) => f.type === "password");
    if (reads !== null && path !== null && file.size >= WORKER_FROM_BYTES && !hashes) {
      let worker: WorkerFeed | null = null;
      const readReport = () => {
        if (worker?.report) read = Object.assign(new Report(), worker.report);
        return read;
      };
      // The reading starts once the transaction has: it then sees every commit before the import, and
      // none comes after until the import's own.
      const w = await writePhase(site, p, def, rule, async () => {
        worker = new WorkerFeed({ file: path, size: file.size, layout: source.layout, def, rule, prep, reads, spool: spoolPath }, (rows, bytes) => {
          opts.onProgress?.({ ...progress, phase: "read", rows, bytes });
        });
        feed = worker;
        tail = new SpoolTail(spoolPath);
        return { tail, feed };
      }, rejectedInWrite, opts.signal, () => (opts.strict ? readReport().errors + rejectedInWrite.errors > 0 : false),
        // While the file is read, its bytes tell the progress; then the rows left to write do.
        (rows) => worker?.report && opts.onProgress?.({ ...progress, phase: "write", rows, toWrite: readReport().total - read.errors }));
      readReport();
      return result(w, false);
    }
    const readInto = async (spoolAt: string) => {
      read = new Report();
      const spool = new Spool(spoolAt);
      await readPhase(site.store, def, rule, source.rows(def), source.format, spool, read, () => {
        opts.signal?.throwIfAborted();
        opts.onProgress?.({ ...progress, phase: "read", rows: read.total });
      }, prep);
      await spool.finish();
      return spool.count;
    };
    const changedBefore = await site.store.lastChange(def.name);
    progress.toWrite = await readInto(spoolPath);
    if (opts.strict && read.errors > 0) return result(nothingWritten(), true);
    progress.phase = "write";
    const w = await writePhase(site, p, def, rule, async (tx) => {
      // Written by someone else while this import read (another import, say): read again, now that
      // nothing else can commit, so that rows match the records as they are.
      if ((await tx.lastChange(def.name)) !== changedBefore) {
        const again = newSpoolPath(join(site.config.dir, "data"));
        spools.push(again);
        progress.toWrite = await readInto(again);
        tail = new SpoolTail(again);
      } else {
        tail = new SpoolTail(spoolPath);
      }
      return { tail, feed };
    }, rejectedInWrite, opts.signal, () => !!opts.strict && read.errors + rejectedInWrite.errors > 0, (rows) => opts.onProgress?.({ ...progress, rows }));
    return result(w, false);
  } catch (e) {
    if (e instanceof StrictRollback) return result(nothingWritten(), true);
    throw e;
  } finally {
    feed.stop();
    (tail as SpoolTail | null)?.close();
    for (const s of spools) removeSpool(s);
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

/**
 * Phase 2: one transaction; a row whose own write breaks a constraint is rejected alone. `begin`
 * runs first inside it and gives the spool to take entries from as they reach it, and the feed that
 * says when more came or reading ended.
 */
async function writePhase(site: Site, p: Principal, def: ResourceDef, rule: MatchRule, begin: (tx: StoreTx) => Promise<{ tail: SpoolTail; feed: Feed }>, report: Report, signal: AbortSignal | undefined, rollBack: () => boolean, tick: (rows: number) => void): Promise<Written> {
  return site.store.transaction(async (outer) => {
    const { tail, feed } = await begin(outer);
    const { tx, state } = trackWrites(outer, def.name);
    const counts = nothingWritten();
    // Every row passes the same account guard as an API write of it, inside this transaction.
    const by = actor(p, "import");
    let n = 0;
    let reading = true;
    for (;;) {
      signal?.throwIfAborted();
      const batch = tail.read();
      if (batch.length === 0) {
        if (!reading) break;
        reading = await feed.more();
        continue;
      }
      for (const e of batch) {
        if (++n % YIELD_EVERY === 0) {
          signal?.throwIfAborted();
          tick(n);
          if (n % COLLECT_EVERY === 0) Bun.gc(true);
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
    }
    tick(n);
    if (rollBack()) throw new StrictRollback();
    return counts;
  }, { alone: true, exclusive: def.name });
}
