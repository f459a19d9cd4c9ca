/**
 * Writes on PostgreSQL grouped into shared transactions, as the SQLite store groups its commits.
 *
 * A record table carries its trigger (maintained counts) and indexes (search trigrams among them);
 * one small transaction per write spent most of PostgreSQL's time on BEGIN, COMMIT and the flush
 * between: 1,100-1,800 single creates a second on 2 cores against about 3,000 rows a second as
 * 16 creates per transaction (pgbench, measured in bench/scale-out). So writes that wait while a
 * group runs go together in the next one: one BEGIN, their statements one after the other, one
 * COMMIT.
 *
 * No savepoint per write: each would be a subtransaction, and past 64 of them in one transaction
 * every other session's snapshots get slower. Instead a write that fails without having tried to
 * write (a 404, a failed precondition) simply fails; one that fails after trying, or whose statement
 * PostgreSQL refused, rolls the group back, and the others run again, each in a transaction of its
 * own. A group is all-or-nothing per write, like one transaction per write.
 *
 * One group runs its statements at a time per instance (the next one starts while it commits): two
 * groups holding the locks of different records could each wait for the other's (a deadlock, which
 * PostgreSQL resolves only after a second).
 *
 * A group of creates costs one round trip: its transaction was opened ahead (postgres-tx.ts), and
 * its rows go in the COMMIT's message. Each round trip is a turn of the event loop, which under
 * pages is long: 1,980 creates a second at c8 against 1,580 with three round trips (alternating runs).
 */
import { AppError } from "../errors";
import { BufferFailed, retried, type PgTransactions } from "./postgres-tx";
import type { StoreTx } from "./types";

/**
 * Writes of one group at most. With 64, the 64 clients of a create bench moved as one convoy: one
 * group held them all, and its BEGIN, INSERT and COMMIT, then its answers and the next requests on
 * the event loop, came one after the other while PostgreSQL and the loop each idled half the time.
 * Half of that keeps two groups in turn, one in the database while the other's clients come back:
 * 4,019 creates a second against 3,491 (c64, 1M records, five and six alternating runs); 16 a group
 * paid a COMMIT per 16 rows and fell to 2,500-2,900.
 */
const GROUP = 32;

type Job = { fn: (tx: StoreTx) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void; solo: boolean };
type Settled = { job: Job; ok: boolean; value: unknown };

/** Rolls the group back: `job` failed after trying to write, or its statement was refused (null: whose is not known). */
class GroupBroken extends Error {
  constructor(readonly job: Job | null, readonly reason: unknown) {
    super("a write of the group failed");
  }
}

const errno = (e: unknown) => (e as { errno?: string }).errno;
/** PostgreSQL refused a statement because an earlier one of the transaction had failed. */
const afterEarlierFailure = (e: unknown) => errno(e) === "25P02";

export class PgWriteGroups {
  private readonly queue: Job[] = [];
  private running = false;
  private scheduled = false;

  constructor(private readonly txs: PgTransactions) {}

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, solo: false });
      this.schedule();
    });
  }

  /** The next group starts at the end of this turn of the event loop, with every write queued by then. */
  private schedule(): void {
    if (this.running || this.scheduled || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.next();
    });
  }

  private async next(): Promise<void> {
    if (this.running || !this.queue.length) return;
    this.running = true;
    // The next group may start once this one only has its COMMIT's message left: it holds its locks
    // until then and asks for none on existing rows (the message adds its held creates, new rows, and
    // its change marks in a slot of its own), so the two do not wait on each other. Only a uuid that
    // both create could make one wait for the other; a cycle from that is a deadlock PostgreSQL ends,
    // and the group runs again.
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.running = false;
      this.schedule();
    };
    try {
      const job = this.queue[0]!;
      if (job.solo) await this.alone(this.queue.shift()!, release);
      else {
        const end = this.queue.findIndex((j) => j.solo);
        await this.group(this.queue.splice(0, Math.min(GROUP, end < 0 ? this.queue.length : end)), release);
      }
    } finally {
      release();
      // Writes put back after the COMMIT's message failed, when the next group may be under way already.
      this.schedule();
    }
  }

  /** One write in a transaction of its own. */
  private async alone(job: Job, committing: () => void): Promise<void> {
    try {
      job.resolve(await this.txs.run((db, writes, after) => job.fn(this.txs.txFor(db, writes, after)), true, committing));
    } catch (e) {
      job.reject(e);
    }
  }

  private async group(jobs: Job[], committing: () => void): Promise<void> {
    let settled: Settled[] = [];
    try {
      await this.txs.run(async (db, writes, after, buffer) => {
        // Run again from the start after a deadlock: nothing of an earlier attempt counts.
        settled = [];
        const kept: (() => void)[] = [];
        const owners = new Map<object, Job>();
        const broken = (e: unknown, job: Job | null) =>
          e instanceof BufferFailed ? new GroupBroken(owners.get(e.owner as object) ?? null, e.reason) : new GroupBroken(job, e);
        for (const job of jobs) {
          const mine: (() => void)[] = [];
          const wrote = { wrote: false };
          owners.set(wrote, job);
          try {
            settled.push({ job, ok: true, value: await job.fn(this.txs.txFor(db, writes, mine, wrote, buffer)) });
            kept.push(...mine);
          } catch (e) {
            // A deadlock or serialization failure: the whole group runs again (PgTransactions.run).
            if (retried(e)) throw e;
            if (e instanceof BufferFailed && retried(e.reason)) throw e.reason;
            if (wrote.wrote || !(e instanceof AppError)) throw broken(e, job);
            settled.push({ job, ok: false, value: e });
          }
        }
        after.push(...kept);
      }, true, committing);
    } catch (caught) {
      // A held create refused in the COMMIT's message: whose is not known.
      const e = caught instanceof BufferFailed ? new GroupBroken(null, caught.reason) : caught;
      if (!(e instanceof GroupBroken)) {
        // The commit itself failed: nothing of the group stays, and every write hears why.
        for (const job of jobs) job.reject(e);
        return;
      }
      // The failed write is told (unless it only saw the failure of one before it); every other
      // runs again by itself, in order, ahead of writes that came later.
      const blamed = afterEarlierFailure(e.reason) ? null : e.job;
      blamed?.reject(this.txs.callerError(e.reason));
      this.queue.unshift(...jobs.filter((j) => j !== blamed).map((j) => ({ ...j, solo: true })));
      return;
    }
    for (const s of settled) {
      if (s.ok) s.job.resolve(s.value);
      else s.job.reject(s.value);
    }
  }
}
