/**
 * SQLite adapter of the store. Two connections: one writer, used only inside transactions, and one
 * reader, which therefore never sees uncommitted data. Writes are group-committed: transactions that
 * queue while one commits run together in the next BEGIN…COMMIT, each inside its own SAVEPOINT, so a
 * failing one rolls back alone. One transaction per insert is the wall for create throughput; this
 * shares one commit between all requests waiting at that moment.
 *
 * Rule for callers: a transaction body only awaits the store. Anything slow (password hashing,
 * file I/O, HTTP) happens before the transaction starts.
 */
import { Database, type Statement } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { AppError } from "../errors";
import type { ResourceDef } from "../definitions/types";
import { sqliteDialect } from "./dialect";
import { Checkpointer, FALLBACK_AUTOCHECKPOINT_PAGES, WAL_SIZE_LIMIT, type CheckpointerOptions } from "./checkpointer";
import { countCaptureSql, flushCounts, flushSearchIndex, migrateInternal, searchTextTable, syncResource } from "./sqlite-schema";
import { SqliteJobs, insertJob } from "./sqlite-jobs";
import { SqliteAccessStore } from "./access-sqlite";
import { BoundedMemo, CommitMemo, DEFAULT_CACHE_BYTES, listShare, memoShare, recordShare, rowBytes, type FilterTag, type MemoTag, type ResourceWrite } from "./memo";
import { RecordCache, type ChangedRecords } from "./record-cache";
import { equalitiesOf, equalityFields, reviseAnswers } from "./sqlite-revise";
import { SqliteReadRoute, configure } from "./sqlite-read-route";
import { SqliteCounts } from "./sqlite-counts";
import { SqliteSearch } from "./sqlite-search";
import { COLS, SqliteReads } from "./sqlite-reads";
import { GramLists } from "./gram-lists";
import type { AccessStore, CompiledQuery, DetachedReads, HistoryEntry, SchemaChange, SqlValue, Store, StoreNow, StoreTx, StoredRecord, TxOptions } from "./types";

const BATCH = 512;
/** Rows per cached page (larger pages are not kept). */
const PAGE_CACHE_ROWS = 200;
/** A page walking an index in order runs in place when it reads at most this many rows. */
const BOUNDED_ROWS = 1000;
/** From this offset on, a page first finds its row ids, then reads only those rows. */
const DEEP_OFFSET = 1000;

/** What a page or total depends on: its filter (see CommitMemo and reviseAnswers). */
function filterTag(q: Pick<CompiledQuery, "where" | "args">): FilterTag {
  const args = JSON.stringify(q.args);
  return { key: BoundedMemo.key(q.where, args), where: q.where, args: q.args, equalities: equalitiesOf(q.where, q.args), bytes: (q.where.length + args.length) * 2 };
}

// A resource name is short and bounded: no digest needed (two lookups on every request).
const changeKey = (resource: string) => `change\u0000${resource}`;

type Job = { fn: (tx: StoreTx) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void; alone: boolean };
type Settled = { job: Job; ok: boolean; value: unknown; after: (() => void)[] };

/** Maps constraint failures to domain errors; everything else stays an internal error. */
function mapWriteError(e: unknown, resource: string, uuid: string): never {
  const msg = (e as Error).message ?? "";
  if (/UNIQUE constraint failed: .*\.uuid/.test(msg)) throw new AppError(409, "RESOURCE_EXISTS", `${resource}/${uuid} already exists`);
  const m = /UNIQUE constraint failed: index '[^']*unique:([^']+)'/.exec(msg);
  if (m) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors: { [m[1]]: "this value is already used by another record" } });
  throw e;
}

/** Rows of a statement of its own, finalized however the caller stops reading. */
async function* rowsOf<T>(db: Database, sql: string): AsyncIterable<T> {
  const stmt = db.prepare(sql);
  try {
    yield* stmt.iterate() as IterableIterator<T>;
  } finally {
    stmt.finalize();
  }
}

export class SqliteStore implements Store {
  readonly dialect = sqliteDialect;
  readonly jobs = new SqliteJobs(this);
  private accessStore: AccessStore | null = null;
  get access(): AccessStore {
    return (this.accessStore ??= new SqliteAccessStore(this));
  }
  private readonly writer: Database;
  private readonly reader: Database;
  private readonly reads: SqliteReads;
  private readonly writerReads: SqliteReads;
  private queue: Job[] = [];
  /** A drain is waiting for the end of this turn of the event loop, or running. */
  private drainScheduled = false;
  private draining = false;
  /** Writes queued so far in this turn of the event loop, and in the last turn that had any. */
  private arrivals = 0;
  private lastTurnArrivals = 0;
  private turnMarked = false;
  /** Cached answers: revised by our own commits, all dropped by another process's (see CommitMemo). */
  private readonly memo: CommitMemo;
  private readonly gramLists: GramLists;
  private readonly records: RecordCache;
  /** The version() the kept records were read under. */
  private recordsVersion = -1;
  private readonly versionStmt: Statement;

  private checkpointer: Checkpointer | null = null;
  /** Where a read runs: in place on the warm connection, or on a read worker. */
  private readonly route: SqliteReadRoute;
  private readonly counts: SqliteCounts;
  private readonly search: SqliteSearch;

  constructor(readonly path: string, opts: { cacheMaxBytes?: number; readWorkers?: number; queryBudgetMs?: number; maxQueriesPerCaller?: number; mmapSize?: number; checkpoints?: CheckpointerOptions } = {}) {
    // One budget for single records, pages and totals, and the search index's row ids per trigram.
    const cacheBytes = opts.cacheMaxBytes ?? DEFAULT_CACHE_BYTES;
    this.memo = new CommitMemo(memoShare(cacheBytes), () => this.version());
    this.records = new RecordCache(recordShare(cacheBytes));
    this.gramLists = new GramLists(listShare(cacheBytes), () => this.version());
    const readWorkers = path === ":memory:" ? 0 : (opts.readWorkers ?? 2);
    if (path !== ":memory:") {
      // The database holds password hashes and sessions: the folder and the file are the owner's only.
      // SQLite gives the -wal and -shm files the database file's mode.
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      chmodSync(dirname(path), 0o700);
      if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
      chmodSync(path, 0o600);
    }
    this.writer = new Database(path, { create: true, strict: true });
    this.writer.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=${WAL_SIZE_LIMIT}; PRAGMA foreign_keys=OFF;`);
    // The writer waits briefly inside SQLite and otherwise yields (see begin()), so another process
    // holding the write lock (a CLI import) never freezes the server's event loop.
    // Only a server (it has read workers) serves short reads at a rate where the mapping pays.
    configure(this.writer, 50, 64, readWorkers > 0 ? (opts.mmapSize ?? 0) : 0);
    migrateInternal(this.writer);
    if (readWorkers > 0) {
      // A server: checkpoints run on a worker's connection, not inside a request's commit.
      // The worker also shrinks a grown WAL file: truncating it on the writer's thread stopped every
      // request for 0.6 s (ext4 discards the freed blocks before truncate returns).
      this.writer.exec(`PRAGMA wal_autocheckpoint=${FALLBACK_AUTOCHECKPOINT_PAGES}; PRAGMA journal_size_limit=-1`);
      this.checkpointer = new Checkpointer(path, () => this.writer.exec(`PRAGMA wal_autocheckpoint=1000; PRAGMA journal_size_limit=${WAL_SIZE_LIMIT}`), opts.checkpoints);
    }
    this.reader = new Database(path, { readonly: true, strict: true });
    configure(this.reader, 5000, 32);
    this.route = new SqliteReadRoute(path, this.writer, this.reader, readWorkers, opts.queryBudgetMs ?? 10_000, opts.maxQueriesPerCaller ?? 0);
    this.counts = new SqliteCounts(this.route, this.memo, () => this.version());
    this.search = new SqliteSearch(this.route, this.memo, this.gramLists, this.counts);
    this.reads = new SqliteReads(this.reader, this.dialect);
    this.writerReads = new SqliteReads(this.writer, this.dialect);
    // The writer's data_version moves only when another connection commits (another process):
    // this process's own commits revise the memo themselves (see runBatch).
    this.versionStmt = this.writer.query("PRAGMA data_version");
  }

  private dv = 0;
  private dvAt = -Infinity;
  /**
   * Changes whenever another process commits. Asking SQLite costs ~2 µs, so the answer is reused
   * for 1 ms: another process's write can go unseen for at most a millisecond.
   */
  version(): number {
    const now = performance.now();
    if (now - this.dvAt >= 1) {
      this.dv = (this.versionStmt.get() as { data_version: number }).data_version;
      this.dvAt = now;
    }
    return this.dv;
  }

  /** One SQLite file belongs to one folder of definitions: no other instance changes its schema. */
  onSchemaChange(_fn: () => void): () => void {
    return () => {};
  }

  async syncSchema(defs: Iterable<ResourceDef>): Promise<SchemaChange[]> {
    const all = [...defs];
    this.captureStmts.clear();
    try {
      return await this.transaction(async () => all.flatMap((d) => syncResource(this.writer, d, this.dialect)));
    } finally {
      this.memo.dropAll();
      this.gramLists.dropAll();
      this.records.dropAll();
      this.plans.clear();
    }
  }

  async get(resource: string, uuid: string): Promise<StoredRecord | null> {
    return this.now.get(resource, uuid);
  }

  /**
   * A record read is kept (see RecordCache) until a commit changes it. A missing record is never
   * kept: an insert, which drops nothing, may bring it.
   */
  readonly now: StoreNow = {
    get: (resource, uuid) => {
      const v = this.version();
      if (v !== this.recordsVersion) {
        this.records.dropAll();
        this.recordsVersion = v;
      }
      return this.records.read(resource, uuid, () => (this.writer.inTransaction ? this.reads : this.writerReads).getNow(resource, uuid));
    },
    lastChange: (resource) => this.memo.peek<number>(changeKey(resource)),
  };

  detachedReads(): DetachedReads | null {
    return this.path === ":memory:" ? null : { kind: "sqlite", path: this.path };
  }

  async *all(resource: string): AsyncIterable<StoredRecord> {
    yield* this.stream(resource, { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 });
  }

  private selectSql(resource: string, q: CompiledQuery): [string, SqlValue[]] {
    const t = this.dialect.table(resource);
    if (q.limit !== null && q.offset >= DEEP_OFFSET) {
      // A deep page skips its offset over row ids alone: an index that holds the filter and sort
      // columns (every index holds the row id) answers that without reading the skipped records.
      return [`SELECT ${COLS} FROM ${t} WHERE id IN (SELECT id FROM ${t} ${q.where} ${q.orderBy} LIMIT ? OFFSET ?) ${q.orderBy}`, [...q.args, q.limit, q.offset]];
    }
    const paging = q.limit !== null ? " LIMIT ? OFFSET ?" : q.offset ? " LIMIT -1 OFFSET ?" : "";
    const args = q.limit !== null ? [...q.args, q.limit, q.offset] : q.offset ? [...q.args, q.offset] : q.args;
    return [`SELECT ${COLS} FROM ${t} ${q.where} ${q.orderBy}${paging}`, args];
  }

  /**
   * Pages are cached like totals, until a write can change them: a popular page (a site's front list) is
   * then one lookup. Rows are shared between answers, so callers never change them.
   */
  async page(resource: string, q: CompiledQuery): Promise<StoredRecord[]> {
    // Past the end of a maintained total there is nothing to read (without this, SQLite would step
    // through every match to find that out).
    if (q.counted && q.offset > 0 && this.counts.countedReady(resource) && this.counts.maintainedCount(resource, q.counted) <= q.offset) return [];
    const [sql, args] = this.selectSql(resource, await this.search.planSearch(q));
    // A search page depends on the search index too: it goes with any write of the resource.
    const tag = (rows: StoredRecord[]): MemoTag => q.search || q.limit === null ? { kind: "any", resource }
      : { kind: "rows", resource, filter: filterTag(q), order: q.order, orderKey: JSON.stringify(q.order ?? null), offset: q.offset, limit: q.limit, full: rows.length > 0 && rows.length === q.limit };
    return this.remember(BoundedMemo.key("page", sql, JSON.stringify(args)),
      () => this.route.readAll<StoredRecord>(sql, args, q.small || this.bounded(sql, args, q), { caller: q.caller }),
      (rows) => (rows.length <= PAGE_CACHE_ROWS ? rows.reduce((n, r) => n + rowBytes(r), 0) : null), tag);
  }

  /** Verdicts of `bounded` per page SQL (a handful of shapes per resource; emptied if it grows). */
  private readonly plans = new Map<string, boolean>();
  /**
   * A page whose plan walks one index in order, stopping after offset + limit rows that all match:
   * at most BOUNDED_ROWS rows, tens of microseconds on a warm cache, cheaper in place than a hop to
   * a worker and back. Only filters of plain equalities qualify, and only when the index answers
   * every one of them (any other condition could make the walk skip rows without bound).
   */
  private bounded(sql: string, args: SqlValue[], q: CompiledQuery): boolean {
    if (q.limit === null || q.offset + q.limit > BOUNDED_ROWS || q.search) return false;
    const conds = equalityFields(q.where);
    if (!conds) return false;
    let ok = this.plans.get(sql);
    if (ok === undefined) {
      // prepare + finalize: a statement kept by query() held its read snapshot open (stale reads).
      const stmt = this.reader.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      try {
        const steps = (stmt.all(...(args as never[])) as { detail: string }[]).map((r) => r.detail);
        const search = steps.length === 1 ? /^SEARCH \S+ USING (?:COVERING )?INDEX \S+ \((.*)\)$/.exec(steps[0]) : null;
        ok = conds.length === 0 ? steps.length === 1 && /^SCAN \S+( USING (COVERING )?INDEX \S+)?$/.test(steps[0])
          : search !== null && search[1].split(" AND ").length === conds.length && !/[<>]/.test(search[1].replaceAll("<expr>", ""));
      } finally {
        stmt.finalize();
      }
      if (this.plans.size > 1000) this.plans.clear();
      this.plans.set(sql, ok);
    }
    return ok;
  }

  private remember<T>(key: string, compute: () => Promise<T>, size?: (v: T) => number | null, tag?: (v: T) => MemoTag): Promise<T> {
    return this.memo.remember(key, compute, size, tag);
  }

  /** Estimated bytes the memo of answers holds now. */
  memoBytes(): number {
    return this.memo.bytes;
  }

  /** Quiet moments the write queue has given the checkpoint worker so far (see Checkpointer). */
  quietRounds(): number {
    return this.checkpointer?.rounds ?? 0;
  }

  stream(resource: string, q: CompiledQuery): AsyncIterable<StoredRecord> {
    // Refused here, while the answer can still be a 429, not once the list has begun.
    if (q.caller !== undefined) this.route.readPool()?.admit(q.caller);
    const [sql, args] = this.selectSql(resource, q);
    return this.route.rows<StoredRecord>(sql, args, q.caller);
  }

  /** One SQLite file has one site's processes, and its pid file names the server: nothing to ask here. */
  async otherProcesses(): Promise<string[]> {
    return [];
  }

  async *allHistory(): AsyncIterable<HistoryEntry> {
    yield* this.route.rows<HistoryEntry>("SELECT * FROM _resd_history ORDER BY id", []);
  }

  async count(resource: string, q: Pick<CompiledQuery, "where" | "args" | "counted" | "search" | "small" | "caller">): Promise<number> {
    // A total kept by the write transaction is one lookup, exact under any write load.
    if (q.counted && this.counts.countedReady(resource)) return this.counts.maintainedCount(resource, q.counted);
    // A total of a search depends on the search index too: it goes with any write of the resource.
    const asked = q;
    const tag = (): MemoTag => (asked.search ? { kind: "any", resource } : { kind: "count", resource, filter: filterTag(asked) });
    if (q.search) {
      const planned = await this.search.planSearch({ ...q, orderBy: "", limit: null, offset: 0 }, true);
      // A term too common (or too short) for the index, and nothing else to filter by.
      if (q.search.alone && planned.where === q.search.scan.where) {
        const term = q.search.term;
        return this.remember(BoundedMemo.key("count-text", resource, term), () => this.search.countText(resource, term, q.caller), undefined, tag);
      }
      q = planned;
    }
    // Any other total over a large match costs milliseconds: counted off the event loop and kept
    // until a write changes it (creates add their matches to it).
    return this.remember(BoundedMemo.key("count", resource, q.where, JSON.stringify(q.args)),
      async () => (await this.route.readGet<{ n: number }>(`SELECT count(*) AS n FROM ${this.dialect.table(resource)} ${q.where}`, q.args, q.small, { caller: q.caller }))!.n,
      undefined, tag);
  }

  async findBy(resource: string, field: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    return this.reads.findBy(resource, field, value, except);
  }

  async findByKey(resource: string, field: string, key: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    return this.reads.findByKey(resource, field, key, value, except);
  }

  async lastChange(resource: string): Promise<number> {
    return this.remember(changeKey(resource),
      async () => (this.route.warm().query("SELECT changed_ms FROM _resd_changes WHERE resource = ?").get(resource) as { changed_ms: number } | null)?.changed_ms ?? 0,
      undefined, () => ({ kind: "any", resource }));
  }

  async history(resource: string, uuid: string): Promise<HistoryEntry[]> {
    return this.reader.query("SELECT * FROM _resd_history WHERE resource = ? AND uuid = ? ORDER BY id").all(resource, uuid) as HistoryEntry[];
  }

  async deleted(resource: string, since: number, limit: number): Promise<HistoryEntry[]> {
    return this.reader.query(`SELECT h.* FROM _resd_history h WHERE h.action = 'delete' AND h.at >= ? AND h.resource = ?
        AND NOT EXISTS (SELECT 1 FROM ${this.dialect.table(resource)} r WHERE r.uuid = h.uuid)
        AND h.id = (SELECT max(id) FROM _resd_history l WHERE l.resource = h.resource AND l.uuid = h.uuid)
        ORDER BY h.at DESC, h.id DESC LIMIT ?`).all(since, resource, limit) as HistoryEntry[];
  }

  async historyEntry(id: number): Promise<HistoryEntry | null> {
    return this.reader.query("SELECT * FROM _resd_history WHERE id = ?").get(id) as HistoryEntry | null;
  }

  async purgeHistory(before: number): Promise<number> {
    return this.transaction(async () => {
      // A record's whole history goes once its deletion is older than the window and it is still gone.
      const r = this.writer.query(`DELETE FROM _resd_history WHERE (resource, uuid) IN (
          SELECT resource, uuid FROM _resd_history h WHERE action = 'delete' AND at < ?
            AND id = (SELECT max(id) FROM _resd_history WHERE resource = h.resource AND uuid = h.uuid))`).run(before);
      return r.changes;
    });
  }

  async ping(): Promise<boolean> {
    // A fresh connection reads the file's header and schema; the open ones would keep answering from
    // their caches after the file went missing or corrupt. About 40 µs; a lock held elsewhere costs
    // at most the 200 ms busy timeout.
    try {
      const db = new Database(this.path, { readonly: true, strict: true });
      try {
        db.exec("PRAGMA busy_timeout=200");
        return (db.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n >= 0;
      } finally {
        db.close();
      }
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    while (this.draining || this.drainScheduled || this.queue.length) await Bun.sleep(5);
    this.route.close();
    await this.checkpointer?.stop();
    this.reader.close();
    // Workers end asynchronously, and a reader still inside a query keeps the WAL in use: retry the
    // truncating checkpoint briefly rather than leave a WAL behind (a restore or copy then needs it).
    for (let i = 0; i < 40; i++) {
      const r = this.writer.query("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number };
      if (r.busy === 0) break;
      await Bun.sleep(25);
    }
    this.writer.close();
  }

  /** Exposed to the other modules of the store folder (jobs, sessions…), never outside it. */
  get writeDb(): Database {
    return this.writer;
  }
  get readDb(): Database {
    return this.reader;
  }

  /**
   * Queues a transaction. It commits at the end of this turn of the event loop, with every write
   * queued meanwhile (requests already read from their sockets join instead of each paying for a
   * commit of its own), or as soon as about as many writes wait as the last busy turn brought
   * (three quarters of them).
   *
   * Committing early matters under load: an answer sent at the end of a turn reaches its client
   * after the event loop has looked at its sockets again, so that client's next request waits a
   * whole turn more. Creates from 8 clients among 32 readers went from 1,750-1,850 to 2,100-2,200
   * per second this way (bench/records/mixed.sh), at the cost of a second commit per turn.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, alone: opts.alone ?? false });
      this.countArrival();
      if (this.draining) return;
      if (this.queue.length >= this.earlyBatch()) queueMicrotask(() => void this.drain());
      else if (!this.drainScheduled) {
        this.drainScheduled = true;
        setImmediate(() => {
          this.drainScheduled = false;
          void this.drain();
        });
      }
    });
  }

  private countArrival(): void {
    this.arrivals++;
    if (this.turnMarked) return;
    this.turnMarked = true;
    setImmediate(() => {
      this.turnMarked = false;
      this.lastTurnArrivals = this.arrivals;
      this.arrivals = 0;
    });
  }

  /** Writes worth a commit before the turn ends: three quarters of the last busy turn's, at least 2. */
  private earlyBatch(): number {
    return Math.max(2, Math.ceil((this.lastTurnArrivals * 3) / 4));
  }

  private async begin(): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        this.writer.exec("BEGIN IMMEDIATE");
        return;
      } catch (e) {
        if (!/locked|busy/i.test((e as Error).message) || Date.now() > deadline) {
          throw new AppError(503, "SERVICE_UNAVAILABLE", "the database is busy (another process is writing, e.g. a long import); try again", { retryAfter: 5 });
        }
        await Bun.sleep(20);
      }
    }
  }

  private async drain(): Promise<void> {
    // An early drain and the turn's own may both be on their way: one runs, the other finds it running.
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length) {
        // Between transactions: the checkpoint worker may need a moment without commits (see Checkpointer).
        if (this.checkpointer?.wanted) await this.checkpointer.quiet();
        const next = this.queue.findIndex((j, i) => j.alone && i > 0);
        const n = this.queue[0]!.alone ? 1 : Math.min(BATCH, next < 0 ? this.queue.length : next);
        await this.runBatch(this.queue.splice(0, n));
      }
    } finally {
      this.draining = false;
    }
  }

  /** One BEGIN…COMMIT for a batch; every job settles, whatever fails. */
  private async runBatch(batch: Job[]): Promise<void> {
    try {
      await this.begin();
    } catch (e) {
      batch.forEach((j) => j.reject(e));
      return;
    }
    const done: Settled[] = [];
    const touched = new Set<string>();
    let writes = new Map<string, ResourceWrite>();
    let changed: ChangedRecords = new Map();
    this.forgetWrites();
    // A job alone needs no savepoint: its failure rolls back the transaction, which holds nothing
    // else. A savepoint makes SQLite copy every page it first changes (a large import's updates ran
    // 6 times slower inside one).
    const single = batch.length === 1;
    try {
      for (const job of batch) done.push(await this.runJob(job, touched, !single));
      if (single && !done[0]!.ok) {
        this.writer.exec("ROLLBACK");
        this.forgetWrites();
        done[0]!.job.reject(done[0]!.value);
        return;
      }
      flushSearchIndex(this.writer, this.dialect, this.written, this.idsBefore);
      flushCounts(this.writer, this.dialect, this.written, this.idsBefore, this.before);
      writes = this.writesOf(touched);
      changed = this.changed;
      this.forgetWrites();
      const now = Date.now();
      const mark = this.writer.query("INSERT INTO _resd_changes (resource, changed_ms) VALUES (?, ?) ON CONFLICT(resource) DO UPDATE SET changed_ms = max(changed_ms + 1, excluded.changed_ms)");
      for (const r of touched) mark.run(r, now);
      this.writer.exec("COMMIT");
    } catch (e) {
      // The commit or the savepoint machinery itself failed (I/O, disk full): nothing of the batch
      // stays, every request hears of it, and the writer is left outside any transaction.
      if (this.writer.inTransaction) this.writer.exec("ROLLBACK");
      this.forgetWrites();
      const failure = new AppError(500, "INTERNAL_ERROR", `the write failed: ${(e as Error).message}`);
      done.forEach((d) => d.job.reject(d.ok ? failure : d.value));
      batch.slice(done.length).forEach((j) => j.reject(failure));
      return;
    }
    this.revise(writes, changed);
    for (const d of done) {
      if (d.ok) d.job.resolve(d.value);
      else d.job.reject(d.value);
    }
    for (const d of done) for (const fn of d.after) queueMicrotask(fn);
  }

  /** One job, in its own savepoint when others share the transaction: its failure rolls back only its own writes. */
  private async runJob(job: Job, touched: Set<string>, savepoint: boolean): Promise<Settled> {
    const after: (() => void)[] = [];
    if (savepoint) this.writer.query("SAVEPOINT job").run();
    try {
      const value = await job.fn(this.txFor(touched, after));
      if (savepoint) this.writer.query("RELEASE job").run();
      return { job, ok: true, value, after };
    } catch (e) {
      if (savepoint) this.writer.exec("ROLLBACK TO job; RELEASE job");
      return { job, ok: false, value: e, after: [] };
    }
  }


  private historyStmt: Statement | null = null;
  private creationStmt: Statement | null = null;
  /**
   * Ids of records that existed before the open transaction and were written in it, per resource
   * (null: all of them), for the search index and counts. Rows above `idsBefore` are all new in the
   * transaction and taken as a range: an import of a million rows notes no id.
   */
  private readonly written = new Map<string, Set<number> | null>();
  private noteWritten(resource: string, id: number | bigint | undefined): void {
    if (id === undefined) return;
    let ids = this.written.get(resource);
    if (ids === null) return;
    if (!ids) this.written.set(resource, (ids = new Set()));
    if (Number(id) <= this.idsBefore.get(resource)!) ids.add(Number(id));
  }

  /**
   * Kept records, cached answers and search lists after a commit of ours (see RecordCache.committed,
   * CommitMemo.committed, GramLists.committed). The write is done: should revising fail, everything
   * kept goes (always correct) and the write still succeeds.
   */
  private revise(writes: Map<string, ResourceWrite>, changed: ChangedRecords): void {
    try {
      this.records.committed(changed);
      this.memo.committed(writes, (resource, newAbove, groups, get) => reviseAnswers(this.writer, this.dialect.table(resource), newAbove, groups, get));
      for (const [resource, w] of writes) {
        this.gramLists.committed(resource, w === "rewritten" ? null : w.newAbove, (above, limit) =>
          this.writer.query(`SELECT rowid AS id, c0 AS text FROM ${searchTextTable(resource)} WHERE rowid > ? ORDER BY rowid LIMIT ?`).all(above, limit) as { id: number; text: string }[]);
      }
    } catch (e) {
      this.memo.dropAll();
      this.gramLists.dropAll();
      this.records.dropAll();
      console.error(`resd: cached answers dropped after a commit (revising them failed): ${(e as Error).stack ?? e}`);
    }
  }

  /** Per resource written in the open transaction: only rows added (above which id), or more. */
  private writesOf(touched: Set<string>): Map<string, ResourceWrite> {
    const out = new Map<string, ResourceWrite>();
    for (const r of touched) {
      const ids = this.written.get(r);
      const above = this.idsBefore.get(r);
      out.set(r, ids && ids.size === 0 && above !== undefined ? { newAbove: above } : "rewritten");
    }
    return out;
  }

  /** Records the open transaction updated or deleted, per resource (null: all), for the record cache. */
  private changed: ChangedRecords = new Map();
  private noteChanged(resource: string, uuid: string): void {
    const uuids = this.changed.get(resource);
    if (uuids === null) return;
    if (uuids) uuids.add(uuid);
    else this.changed.set(resource, new Set([uuid]));
  }

  /** What the open transaction noted for its derived data (search index, counts): nothing yet. */
  private forgetWrites(): void {
    this.changed = new Map();
    this.written.clear();
    this.idsBefore.clear();
    this.before.clear();
  }

  /** Per resource written in the open transaction, its largest row id before it (rows above were never indexed). */
  private readonly idsBefore = new Map<string, number>();
  private markStart(resource: string): void {
    if (this.idsBefore.has(resource)) return;
    const row = this.writer.query(`SELECT max(id) AS m FROM ${this.dialect.table(resource)}`).get() as { m: number | null };
    this.idsBefore.set(resource, row.m ?? 0);
  }
  /** Count keys of records as they were before the open transaction first changed them (see flushCounts). */
  private readonly before = new Map<string, Map<number, string>>();
  /** Per resource, the statement reading a row's count keys (null: no counts kept). Dropped with the schema. */
  private readonly captureStmts = new Map<string, Statement | null>();
  private captureBefore(resource: string, uuid: string): void {
    const ids = this.written.get(resource);
    if (ids === null) return; // the whole resource is recounted
    let stmt = this.captureStmts.get(resource);
    if (stmt === undefined) {
      const sql = countCaptureSql(this.writer, resource, this.dialect);
      this.captureStmts.set(resource, (stmt = sql ? this.writer.prepare(sql) : null));
    }
    if (!stmt) return;
    const row = stmt.get(uuid) as { id: number; k: string } | null;
    // Created in this transaction (never counted), or written earlier in it (what it was before is known already).
    if (!row || row.id > this.idsBefore.get(resource)! || ids?.has(row.id)) return;
    let seen = this.before.get(resource);
    if (!seen) this.before.set(resource, (seen = new Map()));
    if (!seen.has(row.id)) seen.set(row.id, row.k);
    // Noted as written now, not after the write: a write a unique index refuses rolls back to its
    // savepoint, and the commit must then count the row's keys as they are against the old ones
    // (no change), not only take the old ones away.
    this.noteWritten(resource, row.id);
  }

  private readonly writeStmts = new Map<string, Record<"get" | "insert" | "update" | "delete", Statement>>();
  private writeStmtsFor(resource: string) {
    let s = this.writeStmts.get(resource);
    if (!s) {
      const t = this.dialect.table(resource);
      s = {
        get: this.writer.prepare(`SELECT ${COLS} FROM ${t} WHERE uuid = ?`),
        insert: this.writer.prepare(`INSERT INTO ${t} (${COLS}) VALUES (?, ?, ?, ?, ?, ?)`),
        update: this.writer.prepare(`UPDATE ${t} SET data = ?, _modified = ?, _modified_by = ? WHERE uuid = ? RETURNING id`),
        delete: this.writer.prepare(`DELETE FROM ${t} WHERE uuid = ? RETURNING id`),
      };
      this.writeStmts.set(resource, s);
    }
    return s;
  }

  private txFor(touched: Set<string>, after: (() => void)[]): StoreTx {
    const w = this.writer;
    const t = (r: string) => this.dialect.table(r);
    const tx: StoreTx = {
      get: async (resource, uuid) => this.writeStmtsFor(resource).get.get(uuid) as StoredRecord | null,
      insert: async (resource, rec) => {
        this.markStart(resource);
        try {
          const r = this.writeStmtsFor(resource).insert.run(rec.uuid, rec.data, rec._created, rec._modified, rec._created_by, rec._modified_by);
          this.noteWritten(resource, r.lastInsertRowid);
        } catch (e) {
          mapWriteError(e, resource, rec.uuid);
        }
        touched.add(resource);
      },
      update: async (resource, rec) => {
        this.markStart(resource);
        this.captureBefore(resource, rec.uuid);
        this.noteChanged(resource, rec.uuid);
        try {
          const r = this.writeStmtsFor(resource).update.get(rec.data, rec._modified, rec._modified_by, rec.uuid) as { id: number } | null;
          this.noteWritten(resource, r?.id);
        } catch (e) {
          mapWriteError(e, resource, rec.uuid);
        }
        touched.add(resource);
      },
      delete: async (resource, uuid) => {
        this.markStart(resource);
        this.captureBefore(resource, uuid);
        const r = this.writeStmtsFor(resource).delete.get(uuid) as { id: number } | null;
        if (!r) return false;
        this.noteChanged(resource, uuid);
        this.noteWritten(resource, r.id);
        touched.add(resource);
        return true;
      },
      deleteAll: async (resource, history) => {
        if (history) {
          // Records never changed get their creation entry first, as any single delete would.
          w.query(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created)
              SELECT ?1, r.uuid, 'create', r._created * 1000, r._created_by, r.data, r._created FROM ${t(resource)} r
              WHERE NOT EXISTS (SELECT 1 FROM _resd_history h WHERE h.resource = ?1 AND h.uuid = r.uuid)`).run(resource);
          w.query(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created) SELECT ?, uuid, 'delete', ?, ?, data, _created FROM ${t(resource)}`)
            .run(resource, history.at, history.user);
        }
        const n = w.query(`DELETE FROM ${t(resource)}`).run().changes;
        this.written.set(resource, null);
        this.changed.set(resource, null);
        touched.add(resource);
        return n;
      },
      addHistory: async (e) => {
        (this.historyStmt ??= w.prepare("INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created) VALUES (?, ?, ?, ?, ?, ?, ?)"))
          .run(e.resource, e.uuid, e.action, e.at, e.user, e.data, e._created);
      },
      insertMany: async (resource, recs) => {
        for (const rec of recs) await tx.insert(resource, rec);
      },
      readAll: (resource) => rowsOf<StoredRecord>(w, `SELECT ${COLS} FROM ${t(resource)} ORDER BY id`),
      readHistory: () => rowsOf<HistoryEntry>(w, "SELECT * FROM _resd_history ORDER BY id"),
      addCreationIfMissing: async (resource, row) => {
        (this.creationStmt ??= w.prepare(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created)
            SELECT ?1, ?2, 'create', ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM _resd_history WHERE resource = ?1 AND uuid = ?2)`))
          .run(resource, row.uuid, row._created * 1000, row._created_by, row.data, row._created);
      },
      lastChange: async (resource) => (w.query("SELECT changed_ms FROM _resd_changes WHERE resource = ?").get(resource) as { changed_ms: number } | null)?.changed_ms ?? 0,
      afterCommit: (fn) => after.push(fn),
      enqueueJob: async (job) => insertJob(w, job),
    };
    return tx;
  }
}
