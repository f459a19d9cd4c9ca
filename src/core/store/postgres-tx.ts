/**
 * Transactions on PostgreSQL: BEGIN … COMMIT on a reserved connection of the write pool, run again
 * when PostgreSQL ends one to break a deadlock or a serialization conflict (`run`), and the
 * transaction object a write goes through (`txFor`), which maps constraint failures to the API's
 * errors. Each transaction marks the resources it changed (postgres-marks.ts); one that announces
 * has the other instances told once it committed. postgres.ts opens these and keeps the entry
 * points (transaction, raw).
 */
import type { ReservedSQL, SQL } from "bun";
import { AppError } from "../errors";
import { historyCols, numbered, PG_COLS, textLit, type PgDialect } from "./postgres-dialect";
import { insertPgJob } from "./postgres-jobs";
import { LAST_CHANGE_SQL, markOf, markSql, SlotPool } from "./postgres-marks";
import { TxWrites, type OwnCommits } from "./postgres-own";
import type { ToldCommit } from "./postgres-announce";
import { Presence } from "./postgres-presence";
import type { HistoryEntry, SqlValue, StoreTx, StoredRecord } from "./types";

/** Rows a stream fetches from its cursor at a time. */
export const STREAM_BATCH = 500;
/** Rows of one INSERT when many are copied at once (6 values each, well under the 65,535 parameters). */
const INSERT_BATCH = 500;
/** Attempts of a transaction that PostgreSQL ended to break a deadlock or a serialization conflict. */
const TX_ATTEMPTS = 3;

export type PgError = Error & { errno?: string; constraint?: string; detail?: string };
type Opened = { db: ReservedSQL; xid: number | null };

/** How long a spare transaction waits for a write before it is rolled back. */
const SPARE_IDLE_MS = 1000;

/** The start of an INSERT of stored records into `table`. */
const insertInto = (table: string) => `INSERT INTO ${table} (uuid, data, _created, _modified, _created_by, _modified_by)`;

/** PostgreSQL ended the transaction to break a deadlock or a serialization conflict: it may run again. */
export const retried = (e: unknown) => {
  const code = (e as PgError).errno;
  return code === "40P01" || code === "40001";
};

/**
 * PostgreSQL refused a statement for what it holds (a data exception, class 22, or a broken
 * constraint, class 23): nothing of the transaction stays. Not a lost connection (class 08, 57):
 * a COMMIT may have gone through before it.
 */
const refused = (e: unknown) => /^2[23]/.test((e as PgError).errno ?? "");

export class PgTransactions {
  /** Per unique index, the field it guards (for the 422 naming it); filled by the schema sync. */
  readonly uniqueFields = new Map<string, string>();
  /** Resources with unique fields (their writes may be refused by an index); kept by the schema sync. */
  readonly guarded = new Set<string>();

  /** The change mark rows this instance's transactions write (one transaction per slot at a time). */
  private readonly slots = new SlotPool();

  /**
   * `begin`: the statement that opens a transaction (with its time budget behind a pooler);
   * `announced`: called once a commit that announces is done (the store's version moves, the others are told),
   * with whether another resd process used the database as it committed (`others`, a query sent with the COMMIT);
   * `own`: where commits of records are revised into the cached answers, in order.
   */
  constructor(
    private readonly writeSql: SQL,
    private readonly dialect: PgDialect,
    private readonly queryBudgetMs: number,
    private readonly begin: string,
    private readonly announced: (commit: ToldCommit | null, others: boolean) => void,
    private readonly own: OwnCommits,
  ) {}

  /** What a commit asks of whether another resd process is there (postgres-presence.ts). */
  presence = new Presence();

  /**
   * BEGIN … COMMIT on a reserved connection. PostgreSQL ends one of two transactions that wait on
   * each other (deadlock) or conflict; that one runs again from the start, up to three times.
   * `committing`: told when the transaction has done its work and only the COMMIT is left. A
   * transaction that announces may write records: it knows its id before its COMMIT, which tells
   * the caches whether a read saw its commit (postgres-own.ts). Creates held in `buffer` go in the
   * COMMIT's message.
   */
  async run<T>(fn: (db: ReservedSQL, writes: TxWrites, after: (() => void)[], buffer: InsertBuffer) => Promise<T>, announce: boolean, committing?: () => void): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const writes = new TxWrites();
      const after: (() => void)[] = [];
      const buffer = new InsertBuffer(this.dialect, writes);
      const { db, xid } = await this.open(announce);
      const slot = this.slots.take();
      let sent: ReturnType<OwnCommits["sending"]> | null = null;
      try {
        const value = await fn(db, writes, after, buffer);
        committing?.();
        const held = buffer.held();
        if (xid !== null && writes.size) sent = this.own.sending(xid, writes);
        // The held creates, the marks and the COMMIT in one message: one round trip for a group of creates.
        // A commit that announces asks, last before its COMMIT, whether anyone is there to tell (unless it just learnt).
        const asked = announce ? this.presence.statement() : null;
        const message = `${held.sql}${writes.size ? `${markSql(writes.resources(), this.slots.slot(slot))}; ` : ""}${asked ? `${asked}; ` : ""}COMMIT`;
        const results = await db.unsafe(message).catch((e: unknown) => {
          // A held create refused (a clash of uuids): whose is not known, the group finds out.
          throw held.sql && refused(e) ? new BufferFailed(null, e) : e;
        }) as unknown as unknown[][];
        held.took(results);
        if (sent) {
          const revised = this.own.committed(sent);
          sent = null;
          await revised;
        }
        // After-commit work first (the realtime feed hands its messages to the bus there): the notice
        // of this commit then goes out with them in one statement (Announcer).
        for (const f of after) queueMicrotask(f);
        if (announce) {
          const others = asked === null || othersIn(results);
          if (asked !== null) this.presence.answered(others);
          // A commit of no records (a session's, or a group whose writes all failed before writing)
          // is told as one: the others read sessions again and keep their records, pages and lists.
          this.announced(xid !== null ? told(xid, writes) : null, others);
        }
        return value;
      } catch (e) {
        if (sent) this.own.failed(sent);
        await db.unsafe("ROLLBACK").catch(() => {});
        if (retried(e) && attempt < TX_ATTEMPTS) continue;
        throw this.callerError(e);
      } finally {
        this.slots.give(slot);
        db.release();
      }
    }
  }

  /**
   * A transaction opened ahead, with its id, for the next write that announces (a group of
   * creates then takes one round trip, its COMMIT's): under writes, each write opens the next one's.
   */
  private spare: { open: Promise<Opened>; timer: ReturnType<typeof setTimeout> } | null = null;
  private spareIdleMs = SPARE_IDLE_MS;
  private closed = false;

  private async open(announce: boolean): Promise<Opened> {
    if (announce) {
      const spare = this.spare;
      this.spare = null;
      this.prime();
      if (spare) {
        clearTimeout(spare.timer);
        // One that failed to open leaves the write to open its own.
        const opened = await spare.open.catch(() => null);
        if (opened) return opened;
      }
    }
    return this.begun(announce);
  }

  /** Opens the spare transaction; rolled back if no write takes it soon (it holds back PostgreSQL's cleanup while open). */
  private prime(): void {
    if (this.spare || this.closed || !this.spareIdleMs) return;
    const open = this.begun(true);
    open.catch(() => {});
    const timer = setTimeout(() => {
      if (this.spare?.open !== open) return;
      this.spare = null;
      void open.then((o) => this.discard(o), () => {});
    }, this.spareIdleMs);
    timer.unref?.();
    this.spare = { open, timer };
  }

  /**
   * The server ends a session whose transaction stays idle past `idleMs`
   * (idle_in_transaction_session_timeout; 0: never): a spare then waits at most a quarter of that,
   * and none is opened below 200 ms (the write that took it would find its connection gone).
   */
  serverIdleLimit(idleMs: number): void {
    if (idleMs <= 0) return;
    const wait = Math.min(SPARE_IDLE_MS, Math.floor(idleMs / 4));
    this.spareIdleMs = wait >= 50 ? wait : 0;
  }

  private async discard(o: Opened): Promise<void> {
    await o.db.unsafe("ROLLBACK").catch(() => {});
    o.db.release();
  }

  /** Rolls the spare transaction back; none is opened after. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = null;
    if (!spare) return;
    clearTimeout(spare.timer);
    const o = await spare.open.catch(() => null);
    if (o) await this.discard(o);
  }

  /** A reserved connection with a transaction open on it, and its id when it announces (in the same message as BEGIN). */
  private async begun(announce: boolean): Promise<Opened> {
    let db: ReservedSQL;
    try {
      db = await this.writeSql.reserve();
    } catch (e) {
      throw new AppError(503, "SERVICE_UNAVAILABLE", `the database does not answer: ${(e as Error).message}`, { retryAfter: 5 });
    }
    try {
      if (!announce) {
        await db.unsafe(this.begin);
        return { db, xid: null };
      }
      const begun = (await db.unsafe(`${this.begin}; SELECT pg_current_xact_id()::text AS x`)) as unknown as { x: string }[][];
      return { db, xid: Number(begun[begun.length - 1]![0]!.x) };
    } catch (e) {
      await db.unsafe("ROLLBACK").catch(() => {});
      db.release();
      throw e;
    }
  }

  /** What a write's caller is told of PostgreSQL's error `e`: past the time budget is a 503, the rest as it is. */
  callerError(e: unknown): unknown {
    if ((e as PgError).errno !== "57014") return e;
    return new AppError(503, "SERVICE_UNAVAILABLE", `the write ran past its time budget (RESD_QUERY_TIMEOUT ${this.queryBudgetMs} ms)`, { retryAfter: 5 });
  }

  /** Maps constraint failures to domain errors; everything else stays an internal error (`named`: with the record it was about). */
  private writeError(e: unknown, resource: string, uuid: string, named = false): never {
    const err = e as PgError;
    if (err.errno === "23505") {
      if (err.constraint?.endsWith("_uuid_key")) throw new AppError(409, "RESOURCE_EXISTS", `${resource}/${uuid} already exists`);
      const field = err.constraint ? this.uniqueFields.get(err.constraint) : undefined;
      if (field) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors: { [field]: "this value is already used by another record" } });
    }
    if (named) throw new Error(`${resource}/${uuid}: ${err.message}`, { cause: e });
    throw e;
  }

  private cursors = 0;
  /** Rows through a cursor inside the transaction open on `db`, a batch at a time. */
  private async *cursorOn<T>(db: ReservedSQL, sql: string, buffer?: InsertBuffer): AsyncIterable<T> {
    if (buffer?.size) await buffer.flush(db);
    const name = `resd_tx_${++this.cursors}`;
    await db.unsafe(`DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`);
    try {
      for (;;) {
        const rows = (await db.unsafe(`FETCH ${STREAM_BATCH} FROM ${name}`)) as T[];
        yield* rows;
        if (rows.length < STREAM_BATCH) break;
      }
    } finally {
      // The transaction may be failing already: its own error is the one to report.
      await db.unsafe(`CLOSE ${name}`).catch(() => undefined);
    }
  }


  /**
   * The transaction object of a transaction open on `db`; `writes` collects what it wrote,
   * `after` what runs after the commit, `wrote` is set as soon as a write is tried (postgres-group.ts:
   * a job that fails after that may have left something behind).
   */
  txFor(db: ReservedSQL, writes: TxWrites, after: (() => void)[], wrote: { wrote: boolean } = { wrote: false }, buffer?: InsertBuffer): StoreTx {
    const t = (r: string) => this.dialect.table(r);
    // Creates held back by the group go first: every statement sees them, as if written one by one.
    const q = async (sql: string, args: SqlValue[] = []) => {
      if (buffer?.size) await buffer.flush(db);
      return db.unsafe(numbered(sql), args as never[]);
    };
    /**
     * A write that a unique index may refuse: inside a savepoint, so that the transaction stays
     * usable after the refusal (an import rejects that row and goes on), as SQLite's statements do.
     */
    const guardedWrite = async (resource: string, uuid: string, sql: string, args: SqlValue[]) => {
      await q("SAVEPOINT row");
      try {
        const r = await q(sql, args);
        await q("RELEASE SAVEPOINT row");
        return r;
      } catch (e) {
        await q("ROLLBACK TO SAVEPOINT row");
        await q("RELEASE SAVEPOINT row");
        this.writeError(e, resource, uuid);
      }
    };
    return {
      // Locked until the transaction ends: a concurrent update of the same record waits and then sees this one.
      get: async (resource, uuid) => ((await q(`SELECT ${PG_COLS} FROM ${t(resource)} WHERE uuid = ? FOR UPDATE`, [uuid]))[0] as StoredRecord | undefined) ?? null,
      insert: async (resource, rec) => {
        wrote.wrote = true;
        const args = [rec.uuid, rec.data, rec._created, rec._modified, rec._created_by, rec._modified_by];
        if (buffer && !this.guarded.has(resource)) {
          buffer.add(resource, rec, wrote);
          return;
        }
        let made: { id: number }[];
        if (!this.guarded.has(resource)) {
          // Only the uuid can clash: no savepoint needed (one round trip per row of an import).
          made = await q(`${insertInto(t(resource))} VALUES (?, (?::text)::json, ?, ?, ?, ?)
            ON CONFLICT (uuid) DO NOTHING RETURNING id::float8 AS id`, args);
          if (!made.length) throw new AppError(409, "RESOURCE_EXISTS", `${resource}/${rec.uuid} already exists`);
        } else {
          made = await guardedWrite(resource, rec.uuid, `${insertInto(t(resource))} VALUES (?, (?::text)::json, ?, ?, ?, ?)
            RETURNING id::float8 AS id`, args);
        }
        writes.add(resource, { ...rec, id: made[0]!.id });
      },
      update: async (resource, rec) => {
        wrote.wrote = true;
        const sql = `UPDATE ${t(resource)} SET data = (?::text)::json, _modified = ?, _modified_by = ? WHERE uuid = ?`;
        const args = [rec.data, rec._modified, rec._modified_by, rec.uuid];
        if (this.guarded.has(resource)) await guardedWrite(resource, rec.uuid, sql, args);
        else await q(sql, args);
        writes.rewrite(resource);
      },
      delete: async (resource, uuid) => {
        wrote.wrote = true;
        const r = await q(`DELETE FROM ${t(resource)} WHERE uuid = ?`, [uuid]);
        if (!r.count) return false;
        writes.rewrite(resource);
        return true;
      },
      deleteAll: async (resource, history) => {
        wrote.wrote = true;
        if (history) {
          // Records never changed get their creation entry first, as any single delete would.
          await q(`INSERT INTO _resd_history (resource, uuid, action, at, "user", data, _created)
              SELECT ?, r.uuid, 'create', r._created * 1000, r._created_by, r.data::text, r._created FROM ${t(resource)} r
              WHERE NOT EXISTS (SELECT 1 FROM _resd_history h WHERE h.resource = ? AND h.uuid = r.uuid) ORDER BY r.id`, [resource, resource]);
          await q(`INSERT INTO _resd_history (resource, uuid, action, at, "user", data, _created)
              SELECT ?, uuid, 'delete', ?, ?, data::text, _created FROM ${t(resource)} ORDER BY id`, [resource, history.at, history.user]);
        }
        const n = (await q(`DELETE FROM ${t(resource)}`)).count;
        writes.rewrite(resource);
        return n;
      },
      addHistory: async (e) => {
        wrote.wrote = true;
        await q(`INSERT INTO _resd_history (resource, uuid, action, at, "user", data, _created, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          [e.resource, e.uuid, e.action, e.at, e.user, e.data, e._created, e.via ?? null]);
      },
      insertMany: async (resource, recs) => {
        wrote.wrote = true;
        // One statement per few hundred rows: a copy of a million records is not a million round trips.
        for (let i = 0; i < recs.length; i += INSERT_BATCH) {
          const batch = recs.slice(i, i + INSERT_BATCH);
          const values = batch.map(() => "(?, (?::text)::json, ?, ?, ?, ?)").join(", ");
          await q("SAVEPOINT batch");
          try {
            await q(`${insertInto(t(resource))} VALUES ${values}`,
              batch.flatMap((r) => [r.uuid, r.data, r._created, r._modified, r._created_by, r._modified_by]));
            await q("RELEASE SAVEPOINT batch");
          } catch (e) {
            // Name the record that was refused: the batch again, row by row, up to the one that fails.
            await q("ROLLBACK TO SAVEPOINT batch");
            for (const r of batch) {
              try {
                await q(`${insertInto(t(resource))} VALUES (?, (?::text)::json, ?, ?, ?, ?)`,
                  [r.uuid, r.data, r._created, r._modified, r._created_by, r._modified_by]);
              } catch (one) {
                this.writeError(one, resource, r.uuid, true);
              }
            }
            throw e;
          }
        }
        writes.rewrite(resource);
      },
      readAll: (resource) => this.cursorOn<StoredRecord>(db, `SELECT ${PG_COLS} FROM ${t(resource)} ORDER BY id`, buffer),
      readHistory: () => this.cursorOn<HistoryEntry>(db, `SELECT ${historyCols()} FROM _resd_history ORDER BY id`, buffer),
      addCreationIfMissing: async (resource, row) => {
        wrote.wrote = true;
        await q(`INSERT INTO _resd_history (resource, uuid, action, at, "user", data, _created)
            SELECT ?, ?, 'create', ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM _resd_history WHERE resource = ? AND uuid = ?)`,
        [resource, row.uuid, row._created * 1000, row._created_by, row.data, row._created, resource, row.uuid]);
      },
      lastChange: async (resource) => markOf(await q(LAST_CHANGE_SQL, [resource])),
      afterCommit: (fn) => after.push(fn),
      enqueueJob: async (job) => {
        wrote.wrote = true;
        await insertPgJob(db, job);
      },
    };
  }
}

/**
 * Writing held-back creates failed: `owner` is the write whose create clashed with an existing
 * record (`reason` its 409), or null when PostgreSQL refused the statement (whose row is not known).
 */
export class BufferFailed extends Error {
  constructor(readonly owner: unknown, readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}

/**
 * Creates of a group held back and written together, a statement per resource: a record table's
 * trigger and indexes cost PostgreSQL far less per row that way (16 rows to a statement: 8,000 rows
 * a second against 3,000 one by one, bench/scale-out). Only creates that nothing but a clash of
 * uuids can refuse are held (no unique field). They go in the COMMIT's message (`held`), or before
 * a statement of the group that must see them (`flush`, which tells a clash to the write that made
 * it; in the COMMIT's message it fails the group, whose writes then run again one by one).
 */
export class InsertBuffer {
  private readonly rows = new Map<string, { recs: StoredRecord[]; owners: unknown[] }>();
  private count = 0;

  constructor(private readonly dialect: PgDialect, private readonly writes: TxWrites) {}

  get size(): number {
    return this.count;
  }

  add(resource: string, rec: StoredRecord, owner: unknown): void {
    let r = this.rows.get(resource);
    if (!r) this.rows.set(resource, (r = { recs: [], owners: [] }));
    r.recs.push(rec);
    r.owners.push(owner);
    this.count++;
  }

  /**
   * The held creates as statements to send with the COMMIT, their values written out (a message of
   * several statements takes no parameters); `took` reads their ids from the message's results.
   * Without ON CONFLICT: a clash must fail the message, or the COMMIT after it would keep the rest.
   */
  held(): { sql: string; took: (results: unknown[][]) => void } {
    if (!this.count) return { sql: "", took: () => {} };
    const all = this.take();
    for (const [resource] of all) this.writes.expect(resource);
    const sql = all.map(([resource, { recs }]) => `${insertInto(this.dialect.table(resource))} VALUES ${
      recs.map((r) => `(${textLit(r.uuid)}, ${textLit(r.data)}::json, ${int(r._created)}, ${int(r._modified)}, ${orNull(r._created_by)}, ${orNull(r._modified_by)})`).join(", ")
    } RETURNING uuid, id::float8 AS id; `).join("");
    return {
      sql,
      took: (results) => all.forEach(([resource, { recs }], i) => this.took(resource, recs, results[i] as { uuid: string; id: number }[])),
    };
  }

  /** The held rows, per resource; the buffer is empty after. */
  private take(): [string, { recs: StoredRecord[]; owners: unknown[] }][] {
    const all = [...this.rows];
    this.rows.clear();
    this.count = 0;
    return all;
  }

  /** The rows written, in the order of their ids: the caches place new records by it. */
  private took(resource: string, recs: StoredRecord[], made: { uuid: string; id: number }[]): void {
    const ids = new Map(made.map((m) => [m.uuid, m.id]));
    for (const r of recs) this.writes.add(resource, { ...r, id: ids.get(r.uuid)! });
  }

  async flush(db: ReservedSQL): Promise<void> {
    const all = this.take();
    for (const [resource, { recs, owners }] of all) {
      let made: { uuid: string; id: number }[];
      try {
        made = (await db.unsafe(`${insertInto(this.dialect.table(resource))}
            SELECT u, d::json, c, m, cb, mb FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[]) AS x(u, d, c, m, cb, mb)
            ON CONFLICT (uuid) DO NOTHING RETURNING uuid, id::float8 AS id`,
        [recs.map((r) => r.uuid), recs.map((r) => r.data), recs.map((r) => r._created), recs.map((r) => r._modified),
          recs.map((r) => r._created_by), recs.map((r) => r._modified_by)] as never[])) as { uuid: string; id: number }[];
      } catch (e) {
        throw new BufferFailed(null, e);
      }
      if (made.length === recs.length) {
        this.took(resource, recs, made);
        continue;
      }
      // The first row of each uuid that went in takes it; any other row of that uuid clashed.
      const inserted = new Set(made.map((m) => m.uuid));
      const i = recs.findIndex((r) => !inserted.delete(r.uuid));
      throw new BufferFailed(owners[i], new AppError(409, "RESOURCE_EXISTS", `${resource}/${recs[i]!.uuid} already exists`));
    }
  }
}

const int = (n: number) => {
  if (!Number.isSafeInteger(n)) throw new Error(`${n} is not a whole number`);
  return String(n);
};
const orNull = (s: string | null) => (s === null ? "NULL" : textLit(s));

/** The answer of the query for other processes, the statement before the COMMIT's (none: assume there are). */
function othersIn(results: unknown[][]): boolean {
  const row = results[results.length - 2]?.[0] as { others?: unknown } | undefined;
  return row?.others !== false;
}

/** What the other instances are told of a commit: per resource its new rows, or null where it wrote anything else (none: no records). */
function told(xid: number, writes: TxWrites): ToldCommit {
  const out: ToldCommit["writes"] = {};
  for (const r of writes.resources()) out[r] = writes.added.get(r) ?? null;
  return { xid, marks: writes.resources().size, writes: out };
}
