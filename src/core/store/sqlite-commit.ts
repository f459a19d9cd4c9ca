/**
 * The SQLite store's write queue. Writes are group-committed: transactions that queue while one
 * commits run together in the next BEGIN…COMMIT, each inside its own SAVEPOINT, so a failing one
 * rolls back alone. One transaction per insert is the wall for create throughput; this shares one
 * commit between all requests waiting at that moment. After a commit, the kept records, cached
 * answers and search lists are revised (they belong to the store, which hands them in).
 */
import type { Database } from "bun:sqlite";
import { AppError } from "../errors";
import type { Checkpointer } from "./checkpointer";
import { flushCounts, flushSearchIndex, searchTextTable } from "./sqlite-schema";
import type { CommitMemo, ResourceWrite } from "./memo";
import type { ChangedRecords, RecordCache } from "./record-cache";
import type { GramLists } from "./gram-lists";
import { reviseAnswers } from "./sqlite-revise";
import type { SqliteTxWrites } from "./sqlite-tx";
import type { Dialect, StoreTx, TxOptions } from "./types";

const BATCH = 512;

type Job = { fn: (tx: StoreTx) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void; alone: boolean };
type Settled = { job: Job; ok: boolean; value: unknown; after: (() => void)[] };

export class SqliteWriteQueue {
  private queue: Job[] = [];
  /** A drain is waiting for the end of this turn of the event loop, or running. */
  private drainScheduled = false;
  private draining = false;
  /** Writes queued so far in this turn of the event loop, and in the last turn that had any. */
  private arrivals = 0;
  private lastTurnArrivals = 0;
  private turnMarked = false;

  /**
   * `txWrites`: the transaction's write side (statements, notes); `checkpointer`: the checkpoint
   * worker (servers only), given a quiet moment between batches when it asks; `records`, `memo`,
   * `gramLists`: what the store keeps, revised after each commit.
   */
  constructor(
    private readonly writer: Database,
    private readonly dialect: Dialect,
    private readonly txWrites: SqliteTxWrites,
    private readonly checkpointer: Checkpointer | null,
    private readonly records: RecordCache,
    private readonly memo: CommitMemo,
    private readonly gramLists: GramLists,
  ) {}

  /** A transaction is queued, waiting or running (the store closes once none is). */
  get busy(): boolean {
    return this.draining || this.drainScheduled || this.queue.length > 0;
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
    this.txWrites.forgetWrites();
    // A job alone needs no savepoint: its failure rolls back the transaction, which holds nothing
    // else. A savepoint makes SQLite copy every page it first changes (a large import's updates ran
    // 6 times slower inside one).
    const single = batch.length === 1;
    try {
      for (const job of batch) done.push(await this.runJob(job, touched, !single));
      if (single && !done[0]!.ok) {
        this.writer.exec("ROLLBACK");
        this.txWrites.forgetWrites();
        done[0]!.job.reject(done[0]!.value);
        return;
      }
      flushSearchIndex(this.writer, this.dialect, this.txWrites.written, this.txWrites.idsBefore);
      flushCounts(this.writer, this.dialect, this.txWrites.written, this.txWrites.idsBefore, this.txWrites.before);
      writes = this.txWrites.writesOf(touched);
      changed = this.txWrites.changed;
      this.txWrites.forgetWrites();
      const now = Date.now();
      const mark = this.writer.query("INSERT INTO _resd_changes (resource, changed_ms) VALUES (?, ?) ON CONFLICT(resource) DO UPDATE SET changed_ms = max(changed_ms + 1, excluded.changed_ms)");
      for (const r of touched) mark.run(r, now);
      this.writer.exec("COMMIT");
    } catch (e) {
      // The commit or the savepoint machinery itself failed (I/O, disk full): nothing of the batch
      // stays, every request hears of it, and the writer is left outside any transaction.
      if (this.writer.inTransaction) this.writer.exec("ROLLBACK");
      this.txWrites.forgetWrites();
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
      const value = await job.fn(this.txWrites.txFor(touched, after));
      if (savepoint) this.writer.query("RELEASE job").run();
      return { job, ok: true, value, after };
    } catch (e) {
      if (savepoint) this.writer.exec("ROLLBACK TO job; RELEASE job");
      return { job, ok: false, value: e, after: [] };
    }
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
}
