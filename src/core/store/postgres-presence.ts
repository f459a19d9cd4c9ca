/**
 * Whether anyone is there to tell. A commit's notice (with its rows) and its realtime messages are
 * for the other resd processes on the database; an instance alone was paying for them on every
 * write, a statement of its own that PostgreSQL commits and flushes: 4,556 creates a second
 * without them against 4,022 (c64, 1M records, three alternating runs each).
 *
 * - Each commit that announces asks, in its COMMIT's message, whether another resd process has a
 *   connection to the database (`othersQuery`: pg_stat_get_activity, by application_name; every
 *   process listens on a connection of its own, direct even behind a pooler). Only when one has
 *   are its notice and messages sent.
 * - A process that connects is seen by every commit that asks after that. A commit that asked
 *   before may still be running when the newcomer reads: the newcomer stays cold (keeps no
 *   answers; a server does not listen yet) until the transactions that resd processes had open
 *   when it arrived have ended (`Arrival`). So does a process whose listening connection came
 *   back, unseen meanwhile.
 */
import type { SQL } from "bun";
import { textLit } from "./postgres-dialect";

/** How often an arrival looks whether the transactions it waits for have ended. */
const LOOK_MS = 50;

/**
 * Connections of other resd processes to database `oid`, by their application_name
 * (`resd/host/pid/store`). The function under pg_stat_activity, without the view's joins: the view
 * cost PostgreSQL 0.5 ms a commit to plan and run, the function 0.05 ms.
 */
const OTHERS = (oid: number, application: string) =>
  `pg_stat_get_activity(NULL) s WHERE s.datid = ${Math.trunc(oid)} AND s.application_name LIKE 'resd/%' AND s.application_name <> ${textLit(application)}`;

/** The statement a commit sends before its COMMIT: `others` is whether anyone else is there. */
export const othersQuery = (oid: number, application: string) => `SELECT ${othersThere(oid, application)} AS others`;
/** The same question as an expression (the snapshot watch asks it every second). */
export const othersThere = (oid: number, application: string) => `EXISTS (SELECT 1 FROM ${OTHERS(oid, application)})`;

/** How long after another resd process was seen commits tell without asking. */
const SEEN_FOR_MS = 1000;

/**
 * What a commit asks before its COMMIT. Once another process was seen, the commits of the next
 * second tell without asking: telling when nobody listens only costs the notice, while the look
 * at every backend cost PostgreSQL 0.1–0.3 ms a commit, its most expensive statement under two
 * instances' writes (they commit three times as often as one, in smaller groups). A process that
 * left is noticed within the second; one that arrives is told meanwhile anyway.
 */
export class Presence {
  private seenUntil = 0;

  /**
   * `question`: an `othersQuery`; null until the database is known, and behind a pooler (whose
   * connections' names say nothing): then every commit tells.
   */
  constructor(private readonly question: string | null = null) {}

  /** The statement a commit sends before its COMMIT; null: it tells without asking. */
  statement(now = performance.now()): string | null {
    return this.question === null || now < this.seenUntil ? null : this.question;
  }

  /** The answer to a `statement()`. */
  answered(others: boolean, now = performance.now()): void {
    if (others) this.seenUntil = now + SEEN_FOR_MS;
  }
}

export class Arrival {
  /** Every change of another process from now on reaches this one: answers may be kept. */
  warm = false;
  /** The store closed: it will not be warm. */
  stopped = false;
  private settled: Promise<void> = Promise.resolve();
  /** Bumped by every (re)arrival and by stop: an older wait gives up. */
  private generation = 0;

  constructor(private readonly sql: SQL, private readonly application: string) {}

  /** (Again) newly arrived on database `oid`: cold until the transactions other resd processes hold open now have ended. */
  arrive(oid: number): Promise<void> {
    const generation = ++this.generation;
    this.warm = false;
    this.settled = this.wait(generation, oid);
    return this.settled;
  }

  /** Resolves once warm, or after `maxMs` (still cold: a transaction of another process runs long). */
  ready(maxMs: number): Promise<void> {
    return Promise.race([this.settled, Bun.sleep(maxMs)]);
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
  }

  private async wait(generation: number, oid: number): Promise<void> {
    let open: { pid: number; xid: string }[] | null = null;
    while (generation === this.generation) {
      try {
        open ??= (await this.sql.unsafe(`SELECT s.pid, s.backend_xid::text AS xid FROM ${OTHERS(oid, this.application)} AND s.backend_xid IS NOT NULL`)) as { pid: number; xid: string }[];
        if (!open.length) break;
        const still = (await this.sql.unsafe(`SELECT count(*)::int AS n FROM pg_stat_get_activity(NULL) s WHERE (s.pid, s.backend_xid::text) IN (${open.map((o) => `(${Number(o.pid)}, ${textLit(o.xid)})`).join(", ")})`)) as { n: number }[];
        if (still[0]!.n === 0) break;
      } catch {
        // The database does not answer now (requests report that themselves): cold until it does.
      }
      await Bun.sleep(LOOK_MS);
    }
    if (generation === this.generation) this.warm = true;
  }
}
