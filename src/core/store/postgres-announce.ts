/**
 * Telling the other instances that something committed, off the write path.
 *
 * A NOTIFY inside a write transaction takes, at commit, a lock that every notifying transaction of
 * the cluster shares, and holds it until the commit is flushed: such transactions commit one after
 * another. So the notice is sent after the commit instead, in a statement of its own; commits that
 * end while one is on its way share the next one, so an instance has at most one in flight.
 *
 * Sent after the commit, a notice can be lost with the process (it died between the two), and the
 * others would keep what they cached. `SnapshotWatch` covers that: each instance looks every second
 * at the database's snapshot, which moves with every transaction that writes anywhere, and at the
 * sum of the change marks, which every commit of records moves. A move of the snapshot counts as a
 * commit for what depends on anything (sessions); a move of the marks beyond this instance's own
 * commits counts as another instance's commit of records (OwnCommits.othersMarked), and drops the
 * cached answers.
 */
import type { SQL } from "bun";

export class Announcer {
  private wanted = false;
  private sending: Promise<void> | null = null;

  /** `notify`: sends one notice; `failed`: hears of a notice that could not be sent. */
  constructor(private readonly notify: () => Promise<unknown>, private readonly failed: (e: unknown) => void) {}

  /** A commit to tell of: sent now, or with the next notice if one is on its way. */
  announce(): void {
    this.wanted = true;
    this.sending ??= this.send();
  }

  /** Resolves once every commit announced so far has been told (or failed to be). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(): Promise<void> {
    while (this.wanted) {
      this.wanted = false;
      try {
        await this.notify();
      } catch (e) {
        this.failed(e);
      }
    }
    this.sending = null;
  }
}

/** How often the snapshot is looked at. */
export const WATCH_EVERY_MS = 1000;

export class SnapshotWatch {
  private last: string | null = null;
  /** A look failed: the next one that succeeds counts as a move, whatever it sees. */
  private unsure = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private looking = false;

  /**
   * `seen`, after each look: whether the snapshot moved since the last one (something committed or
   * began to write, or a look failed in between), and the snapshot and the sum of the change marks
   * read together.
   */
  constructor(private readonly sql: SQL, private readonly seen: (moved: boolean, snapshot: string, marks: number) => void) {}

  start(): void {
    this.timer = setInterval(() => void this.look(), WATCH_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * The snapshot is the transactions running (and the next id to give): it stays the same exactly
   * while nothing writes.
   */
  async look(): Promise<void> {
    if (this.looking) return;
    this.looking = true;
    let row: { s: string; n: number };
    try {
      row = ((await this.sql.unsafe("SELECT pg_current_snapshot()::text AS s, (SELECT coalesce(sum(n), 0) FROM _resd_changes)::float8 AS n")) as { s: string; n: number }[])[0]!;
    } catch {
      // The database does not answer now (requests report that themselves); whatever was
      // committed meanwhile is counted once it answers again.
      this.unsure = true;
      return;
    } finally {
      this.looking = false;
    }
    const moved = (this.last !== null && row.s !== this.last) || this.unsure;
    this.last = row.s;
    this.unsure = false;
    this.seen(moved, row.s, Number(row.n));
  }
}
