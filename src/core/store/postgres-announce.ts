/**
 * Telling the other instances that something committed, off the write path.
 *
 * A NOTIFY inside a write transaction takes, at commit, a lock that every notifying transaction of
 * the cluster shares, and holds it until the commit is flushed: such transactions commit one after
 * another. So the notice is sent after the commit instead, in a statement of its own; commits that
 * end while one is on its way share the next one, so an instance has at most one in flight.
 *
 * A notice tells what a commit of records wrote: the rows it created (the others revise their kept
 * answers with them, OwnCommits.foreign), or that it wrote anything else (they drop them). The
 * realtime feed's messages take the same channel and queue, after the notice of their commit.
 *
 * Sent after the commit, a notice can be lost with the process (it died between the two), and the
 * others would keep what they cached. `SnapshotWatch` covers that: each instance looks every second
 * at the database's snapshot, which moves with every transaction that writes anywhere, and at the
 * sum of the change marks, which every commit of records moves. A move of the snapshot counts as a
 * commit for what depends on anything (sessions); marks that grew beyond the commits of this
 * instance and those told of by notices, and are still unexplained at the next look, count as
 * another instance's commit nobody told of (OwnCommits.othersMarked), and drop the cached answers.
 */
import type { SQL } from "bun";
import type { AddedRow } from "./postgres-revise";

/** Payloads sent in one statement at most. */
const NOTICES_PER_STATEMENT = 50;

/**
 * A commit of records as a notice tells it: its transaction id, how many resources it marked, and
 * per resource the rows it added, or null where it wrote anything else. Another instance revises
 * its kept answers with the rows instead of dropping them all (OwnCommits.foreign).
 */
export type ToldCommit = { xid: number; marks: number; writes: Record<string, AddedRow[] | null> };

type WireRow = [number, string, string, number, number, string | null, string | null];
const toWire = (r: AddedRow): WireRow => [r.id, r.uuid, r.data, r._created, r._modified, r._created_by, r._modified_by];
const fromWire = ([id, uuid, data, created, modified, createdBy, modifiedBy]: WireRow): AddedRow =>
  ({ id, uuid, data, _created: created, _modified: modified, _created_by: createdBy, _modified_by: modifiedBy });

/**
 * The payloads that tell of `commits` (null: a commit that is not told in detail): `<instance>`
 * says that something committed; `<instance>|<JSON>` lists commits with their rows, as many as fit
 * in one payload of at most `maxBytes`. A commit too large for a payload of its own is told as
 * `<instance>` (the others drop what they kept).
 */
export function noticePayloads(instance: string, commits: (ToldCommit | null)[], maxBytes: number): string[] {
  const out: string[] = [];
  let plain = false;
  let batch: string[] = [];
  let bytes = 0;
  const room = maxBytes - Buffer.byteLength(instance) - 3;
  const flush = () => {
    if (batch.length) out.push(`${instance}|[${batch.join(",")}]`);
    batch = [];
    bytes = 0;
  };
  for (const c of commits) {
    if (!c) {
      plain = true;
      continue;
    }
    const writes: Record<string, WireRow[] | null> = {};
    for (const [r, rows] of Object.entries(c.writes)) writes[r] = rows ? rows.map(toWire) : null;
    const one = JSON.stringify([c.xid, c.marks, writes]);
    const size = Buffer.byteLength(one) + 1;
    if (size > room) {
      plain = true;
      continue;
    }
    if (bytes + size > room) flush();
    batch.push(one);
    bytes += size;
  }
  flush();
  if (plain) out.push(instance);
  return out;
}

/** The instance a notice is from. */
export function noticeFrom(payload: string): string {
  const bar = payload.indexOf("|");
  return bar < 0 ? payload : payload.slice(0, bar);
}

/** The instance a payload is from, and the commits it lists (null: something committed, not said what). */
export function parseNotice(payload: string): { from: string; commits: ToldCommit[] | null } {
  const from = noticeFrom(payload);
  if (from.length === payload.length) return { from, commits: null };
  try {
    const list = JSON.parse(payload.slice(from.length + 1)) as [number, number, Record<string, WireRow[] | null>][];
    if (!Array.isArray(list) || !list.every(wellFormed)) return { from, commits: null };
    return {
      from,
      commits: list.map(([xid, marks, writes]) => ({
        xid, marks, writes: Object.fromEntries(Object.entries(writes).map(([r, rows]) => [r, rows ? rows.map(fromWire) : null])),
      })),
    };
  } catch {
    // Not a notice this version can read (another version of resd): something committed.
    return { from, commits: null };
  }
}

/** What waits to be sent: a commit, or messages of the realtime feed (`InstanceBus.send`). */
type Pending = { commit: ToldCommit | null } | { messages: string[]; sent: PromiseWithResolvers<void> };

/**
 * A payload on the commits channel that is a message of another instance's realtime feed
 * (`<instance> <message>`, a space where a notice has `|` or nothing): the message, else null.
 */
export function busMessage(payload: string): { from: string; message: string } | null {
  const space = payload.indexOf(" ");
  const bar = payload.indexOf("|");
  if (space < 0 || (bar >= 0 && bar < space)) return null;
  return { from: payload.slice(0, space), message: payload.slice(space + 1) };
}

const isWireRow = (r: unknown): boolean => Array.isArray(r) && r.length === 7 && Number.isSafeInteger(r[0]) && typeof r[1] === "string" && typeof r[2] === "string"
  && typeof r[3] === "number" && typeof r[4] === "number" && (r[5] === null || typeof r[5] === "string") && (r[6] === null || typeof r[6] === "string");

/** A listed commit as this version writes it; anything else makes the notice say only that something committed. */
function wellFormed(c: unknown): boolean {
  if (!Array.isArray(c) || c.length !== 3 || !Number.isSafeInteger(c[0]) || !Number.isSafeInteger(c[1])) return false;
  const writes = c[2] as unknown;
  if (!writes || typeof writes !== "object" || Array.isArray(writes)) return false;
  return Object.values(writes).every((rows) => rows === null || (Array.isArray(rows) && rows.length > 0 && rows.every(isWireRow)));
}

export class Announcer {
  private pending: Pending[] = [];
  private sending: Promise<void> | null = null;

  /**
   * `notify`: sends payloads in one statement, in order; `failed`: hears of notices that could not
   * be sent. Realtime messages go through the same queue on the same channel after the notice of
   * their commit: another instance revises its answers before it hears of the change (a client
   * told of a change and reading the list again finds it there).
   */
  constructor(private readonly notify: (payloads: string[]) => Promise<unknown>, private readonly instance: string, private readonly failed: (e: unknown) => void, private readonly maxBytes = 7999) {}

  /** A commit to tell of (with its rows, or not): sent now, or with the next notice if one is on its way. */
  announce(commit: ToldCommit | null = null): void {
    this.pending.push({ commit });
    this.sending ??= this.send();
  }

  /** Messages of the realtime feed, sent after every commit announced before them; resolves once sent. */
  say(messages: string[]): Promise<void> {
    const sent = Promise.withResolvers<void>();
    this.pending.push({ messages, sent });
    this.sending ??= this.send();
    return sent.promise;
  }

  /** Resolves once every commit announced so far has been told (or failed to be). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(): Promise<void> {
    // What the rest of this turn queues (the realtime messages of the commit just announced, other
    // commits of the group) goes in the same statement: each statement that notifies is a
    // transaction of its own, committed and flushed under PostgreSQL's one lock for notifications.
    await null;
    while (this.pending.length) {
      const items = this.pending;
      this.pending = [];
      const payloads: string[] = [];
      const said: PromiseWithResolvers<void>[] = [];
      let commits: (ToldCommit | null)[] = [];
      const told = () => {
        if (commits.length) payloads.push(...noticePayloads(this.instance, commits, this.maxBytes));
        commits = [];
      };
      for (const item of items) {
        if ("commit" in item) {
          commits.push(item.commit);
          continue;
        }
        told();
        for (const m of item.messages) payloads.push(`${this.instance} ${m}`);
        said.push(item.sent);
      }
      told();
      try {
        for (let i = 0; i < payloads.length; i += NOTICES_PER_STATEMENT) await this.notify(payloads.slice(i, i + NOTICES_PER_STATEMENT));
        for (const s of said) s.resolve();
      } catch (e) {
        if (said.length) for (const s of said) s.reject(e);
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
  constructor(private readonly sql: SQL, private readonly seen: (moved: boolean, snapshot: string, marks: number, others: boolean | null) => void) {}

  /** An expression saying whether another resd process is connected, asked at each look (null: none asked). */
  others: string | null = null;

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
    let row: { s: string; n: number; o?: boolean };
    try {
      const others = this.others === null ? "" : `, ${this.others} AS o`;
      row = ((await this.sql.unsafe(`SELECT pg_current_snapshot()::text AS s, (SELECT coalesce(sum(n), 0) FROM _resd_changes)::float8 AS n${others}`)) as { s: string; n: number; o?: boolean }[])[0]!;
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
    this.seen(moved, row.s, Number(row.n), typeof row.o === "boolean" ? row.o : null);
  }
}
