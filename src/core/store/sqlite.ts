/**
 * SQLite adapter of the store. Two connections: one writer, used only inside transactions, and one
 * reader, which therefore never sees uncommitted data. Writes are group-committed: transactions that
 * queue while one commits run together in the next BEGIN…COMMIT (sqlite-commit.ts, each job writing
 * through the transaction object of sqlite-tx.ts).
 *
 * This file opens and configures the connections and wires the parts; it answers single records,
 * pages, totals and the other reads, which run where sqlite-read-route.ts sends them (in place or
 * on a read worker), with maintained totals from sqlite-counts.ts and search plans from
 * sqlite-search.ts.
 *
 * Rule for callers: a transaction body only awaits the store. Anything slow (password hashing,
 * file I/O, HTTP) happens before the transaction starts.
 */
import { Database, type Statement } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type { ResourceDef } from "../definitions/types";
import { sqliteDialect } from "./dialect";
import { Checkpointer, FALLBACK_AUTOCHECKPOINT_PAGES, WAL_SIZE_LIMIT, type CheckpointerOptions } from "./checkpointer";
import { migrateInternal, syncResource } from "./sqlite-schema";
import { SqliteJobs } from "./sqlite-jobs";
import { SqliteAccessStore } from "./access-sqlite";
import { BoundedMemo, CommitMemo, DEFAULT_CACHE_BYTES, filterTag, listShare, memoShare, recordShare, rowBytes, type MemoTag } from "./memo";
import { RecordCache } from "./record-cache";
import { equalitiesOf, equalityFields } from "./sqlite-revise";
import { SqliteReadRoute, configure } from "./sqlite-read-route";
import { SqliteCounts } from "./sqlite-counts";
import { SqliteSearch } from "./sqlite-search";
import { SqliteTxWrites } from "./sqlite-tx";
import { SqliteWriteQueue } from "./sqlite-commit";
import { COLS, SqliteReads } from "./sqlite-reads";
import { GramLists } from "./gram-lists";
import type { AccessStore, CompiledQuery, DetachedReads, HistoryEntry, SchemaChange, SqlValue, Store, StoreNow, StoreTx, StoredRecord, TxOptions } from "./types";

/** Rows per cached page (larger pages are not kept). */
const PAGE_CACHE_ROWS = 200;
/** A page walking an index in order runs in place when it reads at most this many rows. */
const BOUNDED_ROWS = 1000;
/** From this offset on, a page first finds its row ids, then reads only those rows. */
const DEEP_OFFSET = 1000;
/** How long opening the database waits for another process's lock (a checkpoint, a migration). */
const OPEN_WAIT_MS = 5000;

// A resource name is short and bounded: no digest needed (two lookups on every request).
const changeKey = (resource: string) => `change\u0000${resource}`;

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
  /** The transaction's write side, and the queue that group-commits transactions. */
  private readonly txWrites: SqliteTxWrites;
  private readonly writeQueue: SqliteWriteQueue;

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
    // Opening waits its turn: another process's last connection checkpoints the WAL under an
    // exclusive lock as it closes, and with no wait set a command started beside it (`resd token`
    // while `resd serve` starts) exited with "database is locked".
    this.writer.exec(`PRAGMA busy_timeout=${OPEN_WAIT_MS}`);
    this.writer.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=${WAL_SIZE_LIMIT}; PRAGMA foreign_keys=OFF;`);
    migrateInternal(this.writer);
    // From here the writer waits briefly inside SQLite and otherwise yields (see SqliteWriteQueue.begin),
    // so another process holding the write lock (a CLI import) never freezes the server's event loop.
    // Only a server (it has read workers) serves short reads at a rate where the mapping pays.
    configure(this.writer, 50, 64, readWorkers > 0 ? (opts.mmapSize ?? 0) : 0);
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
    this.txWrites = new SqliteTxWrites(this.writer, this.dialect);
    this.writeQueue = new SqliteWriteQueue(this.writer, this.dialect, this.txWrites, this.checkpointer, this.records, this.memo, this.gramLists);
    // The writer's data_version moves only when another connection commits (another process):
    // this process's own commits revise the memo themselves (see SqliteWriteQueue.runBatch).
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
    this.txWrites.schemaChanged();
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
      : { kind: "rows", resource, filter: filterTag(q, equalitiesOf), order: q.order, orderKey: JSON.stringify(q.order ?? null), offset: q.offset, limit: q.limit, full: rows.length > 0 && rows.length === q.limit };
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
    const tag = (): MemoTag => (asked.search ? { kind: "any", resource } : { kind: "count", resource, filter: filterTag(asked, equalitiesOf) });
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
    while (this.writeQueue.busy) await Bun.sleep(5);
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

  /** Queued, and committed with the other writes queued meanwhile (see SqliteWriteQueue.transaction). */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    return this.writeQueue.transaction(fn, opts);
  }
}
