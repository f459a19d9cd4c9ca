/**
 * PostgreSQL adapter of the store, through Bun's built-in SQL client. Reads run on the pool; writes
 * that wait while others run share the next transaction (postgres-group.ts), which postgres-tx.ts
 * runs on a reserved connection. Cached pages and totals are revised by this instance's own
 * commits (postgres-own.ts). Several resd instances may share one database: every commit notifies
 * the others (LISTEN/NOTIFY), which drop their cached answers at once.
 *
 * Rule for callers, as on SQLite: a transaction body only awaits the store.
 */
import { SQL, type ReservedSQL } from "bun";
import { hostname } from "node:os";
import { AppError } from "../errors";
import { maskUrl } from "../config";
import type { ResourceDef } from "../definitions/types";
import { CommitMemo, BoundedMemo, DEFAULT_CACHE_BYTES, filterTag, listShare, memoShare, rowBytes, type FilterTag, type MemoTag, type ResourceWrite } from "./memo";
import { GramLists } from "./gram-lists";
import { PgGramIndex, type TextRow } from "./postgres-gram-index";
import { historyCols, numbered, PG_COLS, PgDialect } from "./postgres-dialect";
import { PgTransactions, STREAM_BATCH, type PgError } from "./postgres-tx";
import { Announcer, busMessage, noticeFrom, parseNotice, SnapshotWatch, type ToldCommit } from "./postgres-announce";
import { SearchPlanner } from "./postgres-search";
import { PgWriteGroups } from "./postgres-group";
import { OwnCommits, stampOf, takesRows } from "./postgres-own";
import { pgEqualitiesOf, pgJudge, reviseAdded, type AddedRow } from "./postgres-revise";
import type { RowJudge } from "./revise";
import { LAST_CHANGE_SQL, markOf, type MarkRow } from "./postgres-marks";
import { migrateInternal, SCHEMA_LOCK, syncResource } from "./postgres-schema";
import { PgJobs } from "./postgres-jobs";
import { PgAccessStore } from "./access-postgres";
import { FOLD_BATCH, foldCounts, maintainedCount } from "./postgres-counts";
import { FairGate } from "./fair-share";
import { Arrival, othersQuery, othersThere, Presence } from "./postgres-presence";
import type { AccessStore, InstanceBus, CompiledQuery, DetachedReads, HistoryEntry, SchemaChange, SqlValue, Store, StoreTx, StoredRecord, TxOptions } from "./types";

/** Rows per cached page (larger pages are not kept). */
const PAGE_CACHE_ROWS = 200;
/**
 * Rows a kept page reads just ahead of itself: new rows that sort before it push it down by one
 * row each, and it takes its first rows from there instead of being read again (revise.ts). With
 * two instances, pages of a newest-first list at deep offsets were read again after nearly every
 * commit that reached them, by each instance.
 */
const PAGE_MARGIN_ROWS = 20;
/**
 * Pages a deep page reads after itself, in its own statement, and keeps: they cost a few more rows
 * on top of the `offset` the statement scans past anyway (expression indexes on JSON allow no
 * index-only scan, so each skipped row is fetched: about 5 ms for a page at offset 1,000). Only
 * from an offset of as many pages, where the skipped rows outnumber the extra ones.
 */
const READ_AHEAD_PAGES = 4;
/** Rows per fetch when the search lists of a resource are built (short texts: a few hundred kB). */
const TEXT_BATCH = 5000;
/** The channel on which every commit is announced to the other instances. */
const CHANNEL = "resd_commits";
/** PostgreSQL's bound on a notification's payload is 8000 bytes, less than that in practice. */
const NOTIFY_MAX_BYTES = 7999;
/** How a schema change is announced on it (before the instance id). */
const SCHEMA_NOTICE = "schema:";
/**
 * Read connections list queries of callers never take: single records, sessions and sign-ins keep
 * answering while lists fill the rest (see `lists`).
 */
const RESERVED_READS = 2;

/** Beyond the query budget, how long a COMMIT may go unanswered before later commits stop waiting for it (see OwnCommits). */
const COMMIT_PATIENCE_MS = 5000;

/**
 * This store's connections' name, `resd/host/pid/store`: each store keeps caches of its own, and
 * other processes tell whether anyone is there by these names (postgres-presence.ts), so the last
 * part is random. Two machines (or containers) may share a host name and a PID.
 */
const applicationName = () => {
  const tail = `/${process.pid}/${crypto.randomUUID().slice(0, 8)}`;
  return `resd/${hostname().slice(0, 63 - "resd/".length - tail.length)}${tail}`;
};
/** This process, as its stores' names begin: `resd/host/pid`. */
const processOf = (application: string) => application.split("/").slice(0, 3).join("/");
/** How often committed count deltas are folded into the counts (postgres-counts.ts), and how much at most at a time. */
const FOLD_EVERY_MS = 1000;
const FOLD_ROUNDS = 40;
/** Folded rows after which the delta table is vacuumed at once. */
const FOLD_VACUUM_AFTER = 20_000;
/** The advisory lock of the history purge, and how long one purge stands for all instances (under the hour: timers drift). */
const PURGE_LOCK = 0x72657370;
const PURGE_EVERY_MS = 55 * 60 * 1000;

/**
 * `directUrl`: the pools' URL goes through a pooler in transaction mode (PgBouncer), and this one
 * reaches the database itself (for LISTEN).
 */
export type PgOptions = { cacheMaxBytes?: number; queryBudgetMs?: number; maxQueriesPerCaller?: number; max?: number; directUrl?: string };

/** Seconds another instance's commit may take to reach this one's answers (changeLead). */
const OTHERS_LEAD_SEC = 3;

export class PgStore implements Store {
  readonly dialect = new PgDialect();
  readonly jobs: PgJobs;
  readonly access: AccessStore;
  /** Reads (and streams). */
  readonly sql: SQL;
  /** Transactions. */
  private readonly writeSql: SQL;
  private readonly memo: CommitMemo;
  private readonly instance = crypto.randomUUID();
  private readonly application = applicationName();
  private local = 0;
  private listening: { unlisten(): Promise<void> } | null = null;
  private folding: ReturnType<typeof setInterval> | null = null;
  /** Transactions: BEGIN … COMMIT with retries, and the transaction object writes go through. */
  private readonly txs: PgTransactions;
  /**
   * The read connections callers' list queries (pages, totals, streams) may hold, shared out in
   * turn with a bound per caller, as SQLite's read workers are: without it one caller's slow pages
   * took every connection of the pool, and everyone's reads, sign-ins included, waited.
   */
  private readonly lists: FairGate;

  private constructor(readonly url: string, opts: PgOptions) {
    this.queryBudgetMs = opts.queryBudgetMs ?? 10_000;
    const pooled = opts.directUrl !== undefined;
    const options = {
      max: opts.max ?? 10,
      connectionTimeout: 10,
      // A pooler in transaction mode hands each transaction a server connection of its own: a
      // statement prepared by name on one is unknown on the next, and a startup setting such as
      // the time budget is refused (it is set in each transaction instead).
      prepare: !pooled,
      // Named per process, so that a process can tell which other resd processes use the database.
      connection: { application_name: this.application, ...(pooled ? {} : { statement_timeout: this.queryBudgetMs }) },
    };
    // Two pools: a write waits for the row locks of other writes (on every instance) while it holds
    // its connection; with one pool, waiting writes took every connection and pages waited behind
    // them (13 pages/s under writes instead of hundreds).
    this.sql = new SQL(url, options);
    this.writeSql = new SQL(url, options);
    // LISTEN holds a session: through a pooler it needs a connection of its own to the database.
    this.listenSql = pooled ? new SQL(opts.directUrl!, { max: 1, connectionTimeout: 10, connection: { application_name: this.application } }) : this.sql;
    this.budget = pooled ? `; SET LOCAL statement_timeout = ${Math.floor(this.queryBudgetMs)}` : "";
    const cacheBytes = opts.cacheMaxBytes ?? DEFAULT_CACHE_BYTES;
    this.arrival = new Arrival(this.sql, this.application);
    this.memo = new CommitMemo(memoShare(cacheBytes), () => this.othersVersion());
    // Search lists are only built once warm (warmTexts): they need no cold version of their own.
    this.gramLists = new GramLists(listShare(cacheBytes), () => this.foreign);
    // New rows take their place in answers that did not see their commit (their stamp, see takesRows).
    const revise = (own: boolean) => (writes: Map<string, ResourceWrite>, added: Map<string, AddedRow[]>, xid: number) => {
      try {
        this.gramIndex.committed(writes, added, xid);
      } catch (e) {
        // Half-revised lists would miss records: they go (OwnCommits drops the answers too).
        this.gramLists.dropAll();
        throw e;
      }
      // Every answer takes this instance's own rows (takesRows): nothing to judge answer by answer,
      // which cost a few per cent of the event loop with some 400 pages kept.
      this.memo.committed(writes, (resource, _above, groups, valueOf) => reviseAdded(this.judge, added.get(resource) ?? [], groups, valueOf),
        own ? undefined : takesRows(xid));
    };
    this.own = new OwnCommits(this.memo, revise(true), this.queryBudgetMs + COMMIT_PATIENCE_MS, () => this.othersCommitted(), revise(false));
    this.gramIndex = new PgGramIndex(this.gramLists, (resource) => this.warmTexts(resource), (resource) => this.dialect.plainSearch.get(resource) ?? null,
      listShare(cacheBytes), () => this.asciiFolds && this.schemaChanging === 0);
    this.txs = new PgTransactions(this.writeSql, this.dialect, this.queryBudgetMs, `BEGIN${this.budget}`, (commit, others) => {
      this.local++;
      this.othersThere = others;
      if (others) this.announcer.announce(commit);
    }, this.own);
    this.groups = new PgWriteGroups(this.txs);
    this.announcer = new Announcer((payloads) => this.writeSql.unsafe(`SELECT ${payloads.map((_, i) => `pg_notify($1, $${i + 2})`).join(", ")}`, [CHANNEL, ...payloads]), this.instance,
      (e) => console.error("telling the other instances of a commit failed (they notice within two seconds):", e), NOTIFY_MAX_BYTES);
    this.watch = new SnapshotWatch(this.sql, (moved, snapshot, marks, others) => {
      if (others !== null) this.othersConnected = others;
      if (moved) this.local++;
      if (this.own.othersMarked(snapshot, marks)) this.othersCommitted();
    });
    this.searchPlanner = new SearchPlanner(this.sql, this.dialect);
    this.lists = new FairGate(Math.max(1, options.max - RESERVED_READS), opts.maxQueriesPerCaller ?? 0);
    this.jobs = new PgJobs(this);
    this.access = new PgAccessStore(this);
  }
  private readonly queryBudgetMs: number;
  /**
   * Bumped by commits of other instances (their notices, the snapshot watch) and reconnects: the
   * cached answers all go. This instance's own commits revise them instead (postgres-own.ts).
   */
  private foreign = 0;
  /** Whether the last commit that announced found another resd process to tell (postgres-presence.ts). */
  private othersThere = true;
  /** Cold until every change of another process reaches this one: nothing is kept meanwhile. */
  private readonly arrival: Arrival;
  /** The database's oid (known once open). */
  private oid = 0;
  /** The version of other processes' commits (what the memo keeps answers by). */
  private othersVersion(): number {
    return this.warmOr(this.foreign);
  }
  /** `version` once warm; while cold, a new one at every ask (below zero: never one a counter reaches). */
  private warmOr(version: number): number {
    return this.arrival.warm ? version : --this.cold;
  }
  private cold = 0;
  private readonly own: OwnCommits;
  /** How this database orders and matches values, as far as JavaScript can tell (set at open). */
  private judge: RowJudge = pgJudge(this.dialect, false);
  /** Where LISTEN runs: a pool connection, or the direct one when the pools go through a pooler. */
  private readonly listenSql: SQL;
  /** What follows BEGIN: the time budget, where it cannot be a connection setting (behind a pooler). */
  private readonly budget: string;
  /** Writes that wait while one group of them runs go together in the next (postgres-group.ts). */
  private readonly groups: PgWriteGroups;
  /** Tells the other instances of this one's commits, after they are done (postgres-announce.ts). */
  private readonly announcer: Announcer;
  /** Notices of commits that never came (their instance died in between) count within a second. */
  private readonly watch: SnapshotWatch;
  /** Which word of a search term the trigram index is asked for. */
  private readonly searchPlanner: SearchPlanner;
  /** Row ids per search trigram, kept while this instance's writes revise them (postgres-gram-index.ts). */
  private readonly gramLists: GramLists;
  private readonly gramIndex: PgGramIndex;
  /** The database lowers a character at a time, ASCII to ASCII (see open): kept search lists can be used. */
  private asciiFolds = false;
  /** Schema changes under way (locked): kept search lists are not asked meanwhile. */
  private schemaChanging = 0;

  /**
   * Realtime changes between instances: NOTIFY on the commits channel, `<instance> <message>`,
   * queued behind the notices of the commits they follow (postgres-announce.ts).
   */
  readonly bus: InstanceBus = {
    maxBytes: NOTIFY_MAX_BYTES - this.instance.length - 1,
    send: (messages) => this.announcer.say(messages),
    heard: () => this.othersThere,
    listen: async (fn, lost) => {
      const listener = { fn, lost };
      this.busListeners.add(listener);
      return async () => void this.busListeners.delete(listener);
    },
  };
  private readonly busListeners = new Set<{ fn: (message: string) => void; lost: () => void }>();
  /** The commits channel was listened to once: a later start of listening is a reconnect. */
  private listened = false;

  /** Connects, migrates the internal tables (once, whoever starts at the same time) and listens for commits. */
  static async open(url: string, opts: PgOptions = {}): Promise<PgStore> {
    let store: PgStore;
    try {
      store = new PgStore(url, opts);
    } catch (e) {
      throw new Error(`cannot use the database at ${maskUrl(url)}: ${(e as Error).message} (percent-encode special characters of the user name and password: @ as %40, : as %3A, / as %2F)`);
    }
    try {
      // Tables of resd's own changed under the others' answers: they drop what they kept.
      await store.locked(async (db) => {
        if ((await migrateInternal(db)) > 0) await db.unsafe("SELECT pg_notify($1, $2)", [CHANNEL, store.instance]);
      });
      store.listening = await store.listenSql.listen(CHANNEL, (payload) => {
        const said = busMessage(payload);
        if (said) {
          if (said.from !== store.instance) for (const l of store.busListeners) l.fn(said.message);
          return;
        }
        // This instance's own notices come back too: their rows are not parsed for nothing.
        const from = noticeFrom(payload);
        if (from === store.instance || from === `${SCHEMA_NOTICE}${store.instance}`) return;
        store.othersTold(parseNotice(payload).commits);
        if (from.startsWith(SCHEMA_NOTICE)) for (const fn of store.schemaListeners) fn();
      }, () => {
        // Reconnected: notices may have been missed meanwhile, and others may have found no one to tell.
        if (store.listened) void store.arrival.arrive(store.oid);
        store.othersCommitted();
        for (const fn of store.schemaListeners) fn();
        if (store.listened) for (const l of store.busListeners) l.lost();
        store.listened = true;
      });
      // Text in code point order (a C collation) is compared in JavaScript when cached pages are revised.
      const [collation] = await store.sql.unsafe(`SELECT datcollate AS c, to_jsonb(d)->>'datlocprovider' AS p, lower('I') = 'i' AS ascii,
        (SELECT setting::int FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout') AS idle, oid::int AS oid
        FROM pg_database d WHERE datname = current_database()`) as { c: string; p: string | null; ascii: boolean; idle: number | null; oid: number }[];
      store.oid = collation!.oid;
      if (opts.directUrl === undefined) {
        store.txs.presence = new Presence(othersQuery(store.oid, store.application));
        store.watch.others = othersThere(store.oid, store.application);
      }
      store.txs.serverIdleLimit(Number(collation?.idle ?? 0));
      store.judge = pgJudge(store.dialect, /^(C|POSIX|C\.UTF-?8)$/i.test(collation?.c ?? "") && (collation?.p ?? "c") !== "i");
      // Kept search lists fold text a character at a time, as libc lowers it. ICU (and the builtin
      // provider's full mapping) may lower one letter to several ("İ", Lithuanian "Ì"), and a Turkic
      // ctype lowers "I" to a dotless "ı": there the trigram index answers every search.
      store.asciiFolds = (collation?.p ?? "c") === "c" && collation?.ascii === true;
      // Few deltas keep totals one short lookup; whichever instance gets there first folds them.
      store.folding = setInterval(() => void store.fold(), FOLD_EVERY_MS);
      store.folding.unref();
      await store.watch.look();
      store.watch.start();
      void store.arrival.arrive(store.oid);
    } catch (e) {
      await store.txs.close();
      await Promise.all(store.pools().map((p) => p.close())).catch(() => {});
      const pooler = /unsupported startup parameter/i.test((e as Error).message)
        ? " (a pooler in transaction mode such as PgBouncer: set RESD_DATABASE_DIRECT_URL to a direct connection to the database)" : "";
      throw new Error(`cannot use the database at ${maskUrl(url)}: ${(e as Error).message}${pooler}`);
    }
    return store;
  }

  /** The connection pools, each once (the listening one is the read pool unless behind a pooler). */
  private pools(): SQL[] {
    return this.listenSql === this.sql ? [this.sql, this.writeSql] : [this.sql, this.writeSql, this.listenSql];
  }

  /**
   * Runs `fn` in a transaction holding the schema lock, without a statement time limit. `fn` tells
   * the other instances what it changed, if anything: every CLI command and every instance's start
   * migrates and syncs its definitions here, and a notice each time dropped every other instance's
   * caches and search lists.
   */
  private async locked<T>(fn: (db: ReservedSQL) => Promise<T>): Promise<T> {
    const db = await this.writeSql.reserve();
    // The search text of a resource may change before the schema commits (or rolls back): lists
    // read over the text before are not asked meanwhile, and go after either way.
    this.schemaChanging++;
    try {
      await db.unsafe("BEGIN");
      await db.unsafe("SET LOCAL statement_timeout = 0");
      await db.unsafe("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
      const value = await fn(db);
      await db.unsafe("COMMIT");
      this.local++;
      // The SQL of a cached answer may mean something else now.
      this.memo.dropAll();
      return value;
    } catch (e) {
      await db.unsafe("ROLLBACK").catch(() => {});
      throw e;
    } finally {
      this.gramLists.dropAll();
      this.schemaChanging--;
      db.release();
    }
  }

  private foldRunning: Promise<void> | null = null;
  /**
   * Folds the counts' deltas a batch per transaction until few are left (a large import leaves a
   * million), then has the emptied delta table vacuumed if many rows died (autovacuum may be late).
   * One fold at a time: a call while one runs waits for it. `rounds`: at most this many batches.
   */
  private fold(rounds = FOLD_ROUNDS): Promise<void> {
    return (this.foldRunning ??= this.foldBatches(rounds).finally(() => {
      this.foldRunning = null;
    }));
  }

  private async foldBatches(rounds: number): Promise<void> {
    try {
      let folded = 0;
      for (let i = 0; i < rounds; i++) {
        const n = await this.raw(foldCounts);
        folded += n;
        if (n < FOLD_BATCH) break; // nothing left, or another instance is folding
      }
      if (folded >= FOLD_VACUUM_AFTER) await this.sql.unsafe("VACUUM _resd_count_deltas");
    } catch (e) {
      console.error("folding the maintained counts failed:", e);
    }
  }

  /** Estimated bytes the memo of answers holds now. */
  memoBytes(): number {
    return this.memo.bytes;
  }

  /** Estimated bytes the kept search lists hold now. */
  searchListBytes(): number {
    return this.gramLists.heldBytes;
  }

  /** Changes whenever anything commits, here or on another instance (as soon as its notice arrives). */
  version(): number {
    return this.warmOr(this.local);
  }

  /** Resolves once every commit of another process from now on is told here, or after `maxMs`. */
  ready(maxMs: number): Promise<void> {
    return this.arrival.ready(maxMs);
  }

  /**
   * Another instance's notice: commits that only added rows are revised into the kept answers and
   * search lists with those rows; any other commit (or a notice that does not say) drops them all.
   */
  private othersTold(commits: ToldCommit[] | null): void {
    if (!commits) return this.othersCommitted();
    for (const c of commits) {
      this.own.toldOf(c.xid, c.marks);
      const entries = Object.entries(c.writes);
      if (entries.some(([, rows]) => rows === null)) {
        this.othersCommitted();
        continue;
      }
      this.local++;
      this.own.foreign(c.xid, new Map(entries as [string, AddedRow[]][]));
    }
  }

  /** Another instance committed (its notice, or a move of the marks nobody told of): every cached answer goes. */
  private othersCommitted(): void {
    this.local++;
    this.foreign++;
  }

  private readonly schemaListeners = new Set<() => void>();
  onSchemaChange(fn: () => void): () => void {
    this.schemaListeners.add(fn);
    return () => this.schemaListeners.delete(fn);
  }

  async syncSchema(defs: Iterable<ResourceDef>, opts: { rollback?: boolean } = {}): Promise<SchemaChange[]> {
    const all = [...defs];
    return this.locked(async (db) => {
      const changes: SchemaChange[] = [];
      for (const def of all) {
        const r = await syncResource(db, def, this.dialect, opts.rollback ?? false);
        changes.push(...r.changes);
        for (const [name, field] of r.synced.uniqueFields) this.txs.uniqueFields.set(name, field);
        if (r.synced.uniqueFields.size) this.txs.guarded.add(def.name);
        else this.txs.guarded.delete(def.name);
      }
      // The other instances drop what they kept and check their own definitions against what changed.
      if (changes.some((c) => c.action !== "refused")) await db.unsafe("SELECT pg_notify($1, $2)", [CHANNEL, `${SCHEMA_NOTICE}${this.instance}`]);
      return changes;
    });
  }

  detachedReads(): DetachedReads | null {
    return null;
  }

  /** A read on the pool; a query past the time budget becomes a 503 the caller can retry. */
  async query<T>(sql: string, args: SqlValue[] = []): Promise<T[]> {
    try {
      return (await this.sql.unsafe(numbered(sql), args as never[])) as T[];
    } catch (e) {
      throw this.readError(e);
    }
  }

  /** A list query of `caller` (none: the server's own work) waits its turn for a connection (see `lists`). */
  private listQuery<T>(caller: string | undefined, sql: string, args: SqlValue[]): Promise<T[]> {
    return caller === undefined ? this.query<T>(sql, args) : this.lists.run(caller, () => this.query<T>(sql, args));
  }

  private readError(e: unknown): unknown {
    if ((e as PgError).errno === "57014") {
      return new AppError(503, "SERVICE_UNAVAILABLE", `the query ran past its time budget (RESD_QUERY_TIMEOUT ${this.queryBudgetMs} ms); narrow the filter or use an indexed field`, { retryAfter: 5 });
    }
    return e;
  }

  /**
   * Kept like a page until its resource is written here, or anything is committed by another
   * instance (its notice, or the snapshot watch): a record read again and again costs no round
   * trip. A missing one is not kept.
   */
  async get(resource: string, uuid: string): Promise<StoredRecord | null> {
    return this.memo.remember(BoundedMemo.key("get", resource, uuid),
      async () => (await this.query<StoredRecord>(`SELECT ${PG_COLS} FROM ${this.dialect.table(resource)} WHERE uuid = ?`, [uuid]))[0] ?? null,
      (row) => (row ? rowBytes(row) : null), () => ({ kind: "any", resource }));
  }

  async findBy(resource: string, field: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    // PostgreSQL text cannot hold U+0000: no record has such a value (a login may still ask for one).
    if (typeof value === "string" && value.includes("\u0000")) return null;
    const d = this.dialect;
    const [cond, v] = field === "uuid" ? ["uuid = ?", value] : [d.equals(d.field(field)), JSON.stringify(value)];
    return (await this.query<StoredRecord>(`SELECT ${PG_COLS} FROM ${d.table(resource)} WHERE ${cond} AND uuid != ? LIMIT 1`, [v, except ?? ""]))[0] ?? null;
  }

  async findByKey(resource: string, field: string, key: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    if (typeof value === "string" && value.includes("\u0000")) return null;
    const d = this.dialect;
    return (await this.query<StoredRecord>(`SELECT ${PG_COLS} FROM ${d.table(resource)} WHERE ${d.equals(d.fieldKey(field, key))} AND uuid != ? LIMIT 1`,
      [JSON.stringify(value), except ?? ""]))[0] ?? null;
  }

  async *all(resource: string): AsyncIterable<StoredRecord> {
    yield* this.stream(resource, { where: "", args: [], orderBy: "ORDER BY id", limit: null, offset: 0 });
  }

  /**
   * A search term shorter than a trigram gains nothing from the index: it is answered by a scan.
   * A longer one whose candidates the kept trigram lists narrow to a few reads those rows by id
   * (postgres-gram-index.ts). Otherwise a rare term asks the index for its rarest word, and the
   * whole term filters what that finds (postgres-search.ts); a common one reads the table in the
   * page's order.
   */
  private async plan<Q extends Pick<CompiledQuery, "where" | "args" | "search">>(q: Q): Promise<Q> {
    if (!q.search) return q;
    if (Array.from(q.search.term).length < 3) return { ...q, where: q.search.scan.where, args: q.search.scan.args, search: undefined };
    // compileList puts the index's condition last, and its pattern last among the arguments.
    const cond = this.dialect.searchIndex(q.search.resource);
    const at = q.where.lastIndexOf(cond);
    if (at < 0 || q.args.length === 0) return q;
    const [before, after] = [q.where.slice(0, at), q.where.slice(at + cond.length)];
    const text = this.dialect.searchText.get(q.search.resource)!;
    // `|| ''` keeps the planner from handing the term to the index too.
    const ids = this.gramIndex.candidates(q.search.resource, q.search.term);
    if (ids) return { ...q, where: `${before}id = ANY (?::int8[]) AND (${text} || '') ILIKE ?${after}`, args: [...q.args.slice(0, -1), `{${ids.join(",")}}`, q.args[q.args.length - 1]!] };
    const word = await this.searchPlanner.narrowest(q.search.resource, q.search.term);
    if (!word) return q;
    const table = this.dialect.table(q.search.resource);
    if (word === q.search.term) return { ...q, where: `${before}id = ANY (ARRAY(SELECT id FROM ${table} WHERE ${cond}))${after}` };
    const found = `id = ANY (ARRAY(SELECT id FROM ${table} WHERE ${cond} AND (${text} || '') ILIKE ?))`;
    return { ...q, where: `${before}${found}${after}`, args: [...q.args.slice(0, -1), `%${word}%`, q.args[q.args.length - 1]!] };
  }

  /** `snapshot`: with the statement's snapshot in each row (`_snap`), for a page the cache keeps. */
  private async selectSql(resource: string, q: CompiledQuery, snapshot = false): Promise<[string, SqlValue[]]> {
    const p = await this.plan(q);
    const paging = p.limit !== null ? " LIMIT ? OFFSET ?" : p.offset ? " OFFSET ?" : "";
    const args = p.limit !== null ? [...p.args, p.limit, p.offset] : p.offset ? [...p.args, p.offset] : p.args;
    const table = this.dialect.table(resource);
    // The snapshot, and each row's id (commits end out of id order: see RowJudge.rowIds), for the
    // cache. Not named `id`: ORDER BY takes a bare name for an output column first, and sorting
    // by the float would not use the indexes.
    const snap = snapshot ? `, id::float8 AS _id, (SELECT pg_current_snapshot()::text) AS _snap` : "";
    return [`SELECT ${PG_COLS}${snap} FROM ${table} ${p.where} ${p.orderBy}${paging}`, args];
  }

  /**
   * A page is kept until a write can change it, and revised by this instance's creates (see
   * postgres-own.ts); a search page goes with any write of its resource. A deep page reads the
   * pages after it in the same statement and keeps them too (READ_AHEAD_PAGES).
   */
  async page(resource: string, q: CompiledQuery): Promise<StoredRecord[]> {
    const kept = !q.search && q.limit !== null && q.limit <= PAGE_CACHE_ROWS && q.order !== undefined;
    const limit = q.limit ?? 0;
    // The margin costs no more scanning (OFFSET reads past those rows anyway), only their transfer.
    const marginAt = (offset: number) => (kept ? Math.min(offset, PAGE_MARGIN_ROWS) : 0);
    const margin = marginAt(q.offset);
    const [sql, args] = await this.selectSql(resource, margin ? { ...q, offset: q.offset - margin, limit: limit + margin } : q, true);
    // A page's key: the statement that reads it alone with its margin (offset 20 with 20 ahead
    // reads what offset 0 does: the margin is in the key).
    const keyOf = (pageArgs: SqlValue[], m: number) => BoundedMemo.key("page", sql, JSON.stringify(pageArgs), String(m));
    const keyAt = (offset: number) => {
      const m = marginAt(offset);
      return keyOf([...args.slice(0, -2), limit + m, offset - m], m);
    };
    const ahead = kept && q.offset >= READ_AHEAD_PAGES * limit && limit * (READ_AHEAD_PAGES + 1) <= PAGE_CACHE_ROWS ? READ_AHEAD_PAGES : 0;
    const read = ahead ? [...args.slice(0, -2), margin + limit * (ahead + 1), q.offset - margin] : args;
    let snapshot: string | null = null;
    let before: StoredRecord[] = [];
    let filter: FilterTag | undefined;
    const tagAt = (offset: number, rows: StoredRecord[], marginRows: StoredRecord[]): MemoTag => q.search || q.limit === null ? { kind: "any", resource }
      : { kind: "rows", resource, filter: (filter ??= filterTag(q, pgEqualitiesOf)), order: q.order, orderKey: JSON.stringify(q.order ?? null), offset, limit, full: rows.length > 0 && rows.length === limit, before: marginRows };
    const bytes = (rows: StoredRecord[]) => rows.reduce((n, r) => n + rowBytes(r), 0);
    const settle = (_: unknown, since: number) => this.own.settle(snapshot, since);
    return this.memo.remember(keyOf(args, margin), async () => {
      const at = this.memo.begun();
      const rows = await this.listQuery<StoredRecord & { _snap?: string; _id?: number }>(q.caller, sql, read);
      snapshot = rows[0]?._snap ?? null;
      for (const r of rows) {
        r.id = r._id;
        delete r._id;
        delete r._snap;
      }
      // Rows ahead of an empty page are no use: the list ends before it.
      before = rows.length > margin ? rows.slice(0, margin) : [];
      for (let k = 1; k <= ahead; k++) {
        const from = margin + k * limit;
        const page = rows.slice(from, from + limit);
        if (!page.length) break;
        const offset = q.offset + k * limit;
        const m = marginAt(offset);
        const mine = rows.slice(from - m, from);
        this.memo.alongside(keyAt(offset), page, at, bytes(page) + bytes(mine), tagAt(offset, page, mine), settle, () => stampOf(snapshot));
        if (page.length < limit) break;
      }
      return kept ? rows.slice(margin, margin + limit) : rows;
    }, (rows) => (rows.length <= PAGE_CACHE_ROWS ? bytes(rows) + bytes(before) : null), (rows) => tagAt(q.offset, rows, before), settle, () => stampOf(snapshot));
  }

  /** Totals are kept like pages; creates of this instance add their matches to them. */
  async count(resource: string, q: Pick<CompiledQuery, "where" | "args" | "counted" | "search" | "caller">): Promise<number> {
    let snapshot: string | null = null;
    const settle = (_: number, since: number) => this.own.settle(snapshot, since);
    // A total the maintained counts hold is one small lookup, exact under any write load.
    const counted = q.counted;
    if (counted) {
      return this.memo.remember(BoundedMemo.key("counted", resource, JSON.stringify(counted)), async () => {
        try {
          const r = await maintainedCount(this.sql, resource, counted);
          snapshot = r.snapshot;
          return r.n;
        } catch (e) {
          throw this.readError(e);
        }
      }, undefined, () => ({ kind: "count", resource, filter: filterTag(q, pgEqualitiesOf) }), settle, () => stampOf(snapshot));
    }
    const p = await this.plan(q);
    const tag = (): MemoTag => (q.search ? { kind: "any", resource } : { kind: "count", resource, filter: filterTag(q, pgEqualitiesOf) });
    return this.memo.remember(BoundedMemo.key("count", resource, p.where, JSON.stringify(p.args)), async () => {
      const [row] = await this.listQuery<{ n: string; s: string }>(q.caller, `SELECT count(*) AS n, pg_current_snapshot()::text AS s FROM ${this.dialect.table(resource)} ${p.where}`, p.args);
      snapshot = row.s;
      return Number(row.n);
    }, undefined, tag, settle, () => stampOf(snapshot));
  }

  stream(resource: string, q: CompiledQuery): AsyncIterable<StoredRecord> {
    // Refused here, while the answer can still be a 429, not once the list has begun.
    if (q.caller !== undefined) this.lists.admit(q.caller);
    return this.planned(resource, q);
  }

  private async *planned(resource: string, q: CompiledQuery): AsyncIterable<StoredRecord> {
    const [sql, args] = await this.selectSql(resource, q);
    yield* this.cursor<StoredRecord>(sql, args, q.caller);
  }

  /**
   * A resource's search texts for a build of its lists, read once every commit of another process
   * is told here: lists built while cold could miss a commit nobody told of, and would be kept.
   */
  private async *warmTexts(resource: string): AsyncIterable<TextRow> {
    while (!this.arrival.warm) {
      if (this.arrival.stopped) return;
      await this.arrival.ready(1000);
    }
    yield* this.searchTexts(resource);
  }

  /** A resource's ids and search texts in id order, in one snapshot (named in each row), for its kept trigram lists. */
  private searchTexts(resource: string): AsyncIterable<TextRow> {
    const text = this.dialect.searchText.get(resource) ?? "''";
    return this.cursor<TextRow>(`SELECT id::float8 AS id, ${text} AS t, (SELECT pg_current_snapshot()::text) AS s FROM ${this.dialect.table(resource)} ORDER BY id`, [], undefined, TEXT_BATCH);
  }

  async otherProcesses(): Promise<string[]> {
    const rows = await this.query<{ app: string }>(`SELECT DISTINCT application_name AS app FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE 'resd/%'`, []);
    // `resd/host/pid/store` (`resd/host/pid` before stores were told apart): one entry per process, this one left out.
    const mine = processOf(this.application);
    return [...new Set(rows.map((r) => processOf(r.app)).filter((p) => p !== mine))].map((p) => p.slice("resd/".length));
  }

  async *allHistory(): AsyncIterable<HistoryEntry> {
    yield* this.cursor<HistoryEntry>(`SELECT ${historyCols()} FROM _resd_history ORDER BY id`, []);
  }

  /**
   * Rows through a cursor on a connection of its own, a batch at a time. A caller's stream holds
   * its turn at the list connections (see `lists`) until it ends: the connection is held as long.
   */
  private async *cursor<T>(sql: string, args: SqlValue[], caller?: string, batch = STREAM_BATCH): AsyncIterable<T> {
    const release = caller === undefined ? null : await this.lists.acquire(caller, true);
    let db: ReservedSQL;
    try {
      db = await this.sql.reserve();
    } catch (e) {
      release?.();
      throw e;
    }
    let open = false;
    try {
      await db.unsafe(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY${this.budget}`);
      open = true;
      // A long export is not a runaway query: the budget applies to each fetch, not to the whole.
      await db.unsafe(`DECLARE resd_rows NO SCROLL CURSOR FOR ${numbered(sql)}`, args as never[]);
      for (;;) {
        const rows = (await db.unsafe(`FETCH ${batch} FROM resd_rows`).catch((e) => Promise.reject(this.readError(e)))) as T[];
        for (const r of rows) yield r;
        if (rows.length < batch) break;
      }
    } finally {
      if (open) await db.unsafe("ROLLBACK").catch(() => {});
      db.release();
      release?.();
    }
  }

  /**
   * Alone, a commit is in the kept answers as soon as its COMMIT answers. With another resd process
   * connected, its commits arrive with their notices, or at the snapshot watch's next looks when a
   * notice is lost (within two seconds): three seconds in all. A mark read from the database may
   * count such a commit before the kept pages hold it (a list's ETag also names what its page holds).
   */
  changeLead(): number {
    return this.othersConnected ? OTHERS_LEAD_SEC : 0;
  }
  /**
   * Whether another resd process was connected at the snapshot watch's last look (every second,
   * whether or not this one commits); behind a pooler, whose connections' names say nothing, always.
   */
  private othersConnected = true;

  /** Kept until a commit (of this instance, or told of by another) writes the resource: marks of the others stay. */
  async lastChange(resource: string): Promise<number> {
    return this.memo.remember(`change\u0000${resource}`, async () => markOf(await this.query<MarkRow>(LAST_CHANGE_SQL, [resource])), undefined, () => ({ kind: "any", resource }));
  }

  async history(resource: string, uuid: string): Promise<HistoryEntry[]> {
    return this.query<HistoryEntry>(`SELECT ${historyCols()} FROM _resd_history WHERE resource = ? AND uuid = ? ORDER BY id`, [resource, uuid]);
  }

  async deleted(resource: string, since: number, limit: number): Promise<HistoryEntry[]> {
    return this.query<HistoryEntry>(`SELECT ${historyCols("h.")} FROM _resd_history h
        WHERE h.action = 'delete' AND h.at >= ? AND h.resource = ?
        AND NOT EXISTS (SELECT 1 FROM ${this.dialect.table(resource)} r WHERE r.uuid = h.uuid)
        AND h.id = (SELECT max(id) FROM _resd_history l WHERE l.resource = h.resource AND l.uuid = h.uuid)
        ORDER BY h.at DESC, h.id DESC LIMIT ?`, [since, resource, limit]);
  }

  async historyEntry(id: number): Promise<HistoryEntry | null> {
    if (!Number.isSafeInteger(id)) return null;
    return (await this.query<HistoryEntry>(`SELECT ${historyCols()} FROM _resd_history WHERE id = ?`, [id]))[0] ?? null;
  }

  /**
   * Every instance asks each hour; one of them purges (the others skip while it holds the lock, and
   * for the rest of that hour, which the database remembers).
   */
  async purgeHistory(before: number, now = Date.now()): Promise<number | null> {
    return this.raw(async (db) => {
      if (!(await db.unsafe("SELECT pg_try_advisory_xact_lock($1) AS ok", [PURGE_LOCK]))[0].ok) return null;
      const last = Number((await db.unsafe("SELECT value FROM _resd_meta WHERE key = 'history_purged'"))[0]?.value ?? 0);
      if (now - last < PURGE_EVERY_MS) return null;
      await db.unsafe(`INSERT INTO _resd_meta (key, value) VALUES ('history_purged', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [now]);
      return (await db.unsafe(`DELETE FROM _resd_history WHERE (resource, uuid) IN (
        SELECT resource, uuid FROM _resd_history h WHERE action = 'delete' AND at < $1
          AND id = (SELECT max(id) FROM _resd_history WHERE resource = h.resource AND uuid = h.uuid))`, [before])).count;
    });
  }

  async ping(): Promise<boolean> {
    try {
      await this.sql.unsafe("SELECT 1");
      return true;
    } catch {
      return false;
    }
  }

  /** Builds the search lists of large resources in the background (postgres-gram-index.ts): a server's start. */
  warmSearch(): void {
    const searched = [...this.dialect.searchText].filter(([, text]) => text !== "''").map(([resource]) => resource);
    void this.gramIndex.warm(searched, async (resource) =>
      ((await this.query<{ n: number }>("SELECT reltuples::float8 AS n FROM pg_class WHERE oid = ?::regclass", [this.dialect.table(resource)]))[0]?.n ?? 0))
      .catch((e) => console.error("building the search lists at start failed (searches build them when they need them):", e));
  }

  async close(): Promise<void> {
    this.arrival.stop();
    await this.txs.close();
    await this.gramIndex.close();
    if (this.folding) clearInterval(this.folding);
    this.watch.stop();
    await this.announcer.settled();
    // What this process wrote (an import, a migrate --to) is folded before it leaves, all of it: a
    // fold under way is waited for (returning at once left 2M deltas of a migrate --to for the
    // first server to fold, half a minute of the database's time).
    await this.foldRunning;
    await this.fold(Infinity);
    await this.listening?.unlisten().catch(() => {});
    await Promise.all(this.pools().map((p) => p.close({ timeout: 5 })));
  }

  /**
   * A transaction of plain SQL on the reserved connection (the queue, sessions, purges); it writes
   * no records (those go through `transaction`). `announce`: the other instances are told of a
   * commit of no records, and read again what depends on anything (a session signed out); their
   * kept records, pages and search lists stay. A job claim does not announce, or every idle poll of
   * every instance would have every other read its sessions again.
   */
  raw<T>(fn: (db: ReservedSQL) => Promise<T>, opts: { announce?: boolean } = {}): Promise<T> {
    return this.txs.run(async (db) => fn(db), opts.announce ?? false);
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    if (!opts.exclusive && !opts.alone) return this.groups.transaction(fn);
    return this.txs.run(async (db, touched, after) => {
      // Other writers of the table wait (readers do not); two exclusive transactions run one after the other.
      // Such a transaction is long (an import) and may first wait for another: no statement budget.
      if (opts.exclusive) {
        await db.unsafe("SET LOCAL statement_timeout = 0");
        await db.unsafe(`LOCK TABLE ${this.dialect.table(opts.exclusive)} IN SHARE ROW EXCLUSIVE MODE`);
      }
      return fn(this.txs.txFor(db, touched, after));
    }, true);
  }
}
