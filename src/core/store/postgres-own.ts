/**
 * This instance's own commits of records, as its cached answers see them.
 *
 * Dropping every cached page at every commit made a site under writes read each page from the
 * database (pages under writes at a quarter of a bare server's). So a commit of this instance
 * revises the answers instead, as on SQLite (revise.ts): it knows the rows it added. Three things
 * make that exact on PostgreSQL, where reads run beside the commit on other connections:
 *
 * - Commits are revised in the order their COMMIT was sent (a group may be acknowledged before the
 *   one sent ahead of it), and a write's caller hears of it only once it is revised.
 * - Each transaction learns its id at BEGIN; every page and total read with the answer its
 *   statement's snapshot (`pg_current_snapshot()`), which tells which commits it saw. An answer
 *   is kept as it is when it saw every commit revised while it ran and none still to be revised;
 *   one that saw a commit still to be revised is kept only until its resource is written
 *   ("loose"); any other is not kept (CommitMemo.remember's settle).
 * - The snapshot watch (postgres-announce.ts) tells other instances' commits from these: the sum
 *   of the change marks may grow only by the marks of commits of this instance its snapshot saw.
 */
import type { CommitMemo, ResourceWrite, StampJudge } from "./memo";
import type { AddedRow } from "./postgres-revise";
import { MAX_NEW_ROWS } from "./revise";

/** What a snapshot says of transaction ids: those below xmin ended, those from xmax on had not begun, xip were running. */
export type Snapshot = { xmin: number; xmax: number; xip: Set<number> };

/** `pg_current_snapshot()::text`: `xmin:xmax:xip,xip,…`. */
export function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(":");
  return { xmin: Number(xmin), xmax: Number(xmax), xip: new Set(xip ? xip.split(",").map(Number) : []) };
}

/**
 * What a kept answer was read in (its stamp in CommitMemo): the statement's snapshot, ranked by its
 * xmax (the first id not yet ended then, which never falls): a transaction with an id from there on
 * had not ended when the answer was read.
 */
export type ReadStamp = { snapshot: Snapshot; rank: number };

/** Applies a commit's writes to the memo (CommitMemo.committed with the right reviser). */
type Reviser = (writes: Map<string, ResourceWrite>, added: Map<string, AddedRow[]>, xid: number) => void;

export function stampOf(snapshot: string | null): ReadStamp | undefined {
  if (snapshot === null) return undefined;
  const s = parseSnapshot(snapshot);
  return { snapshot: s, rank: s.xmax };
}

/**
 * What an answer makes of the rows of another instance's commit `xid`, by its stamp
 * (CommitMemo.committed's judge):
 * it takes them when it did not see that commit, and is kept as it is when it did (it was read
 * after the commit and before its notice arrived). Where the rows go among the answer's rows is the
 * reviser's to say, by their keys and then their ids, which kept pages carry: ids are taken at
 * INSERT, not at COMMIT, so a page may hold a row of a later transaction (of this instance or
 * another) whose commit ended first. This instance's own commits are never seen by an answer kept
 * as it is (CommitMemo's settle): every answer takes their rows, unjudged. An answer without a stamp
 * (an empty page) cannot tell whether it saw another instance's commit, and goes. An answer whose
 * snapshot's xmax is at most `xid` did not see it.
 */
export function takesRows(xid: number): StampJudge {
  return {
    verdict: (stamp) => (stamp === undefined ? "drop" : ended((stamp as ReadStamp).snapshot, xid) ? "keep" : "revise"),
    takenUpTo: xid,
  };
}

/** The transaction had ended when the snapshot was taken (committed, for a transaction known to have). */
export const ended = (s: Snapshot, xid: number) => xid < s.xmin || (xid < s.xmax && !s.xip.has(xid));

/** What one transaction wrote to records: per resource the rows it added, or anything else (`rewritten`). */
export class TxWrites {
  readonly added = new Map<string, AddedRow[]>();
  readonly rewritten = new Set<string>();

  add(resource: string, row: AddedRow): void {
    if (this.rewritten.has(resource)) return;
    let rows = this.added.get(resource);
    if (!rows) this.added.set(resource, (rows = []));
    rows.push(row);
    // More than revising would look at (an import): not kept row by row, its answers all go.
    if (rows.length > MAX_NEW_ROWS) this.rewrite(resource);
  }

  /** Rows for `resource` are on their way (the creates a group writes with its COMMIT): it gets its mark. */
  expect(resource: string): void {
    if (!this.rewritten.has(resource) && !this.added.has(resource)) this.added.set(resource, []);
  }

  rewrite(resource: string): void {
    this.added.delete(resource);
    this.rewritten.add(resource);
  }

  /** The resources written (each gets its change mark). */
  resources(): Set<string> {
    return new Set([...this.added.keys(), ...this.rewritten]);
  }

  get size(): number {
    return this.added.size + this.rewritten.size;
  }
}

type Entry = { xid: number; writes: TxWrites; marks: number; state: "sent" | "ok" | "failed"; revised: PromiseWithResolvers<void>; timer: ReturnType<typeof setTimeout> };

/** Revised commits remembered for judging answers that ran across them. */
const LOG = 256;

export class OwnCommits {
  /** Sent, not yet revised, in the order their COMMIT went. */
  private readonly queue: Entry[] = [];
  /** Revised lately: the memo's commit count after each, and the transaction's id. */
  private readonly log: { epoch: number; xid: number }[] = [];
  /** Sent, and not yet seen ended by a look of the snapshot watch. */
  private unseen: Entry[] = [];
  /** A commit counted by a look failed after all: the next look cannot tell. */
  private unsure = false;
  private lastMarks: number | null = null;
  /** Other instances' commits told of by their notices, not yet seen ended by a look of the snapshot watch. */
  private told: { xid: number; marks: number }[] = [];
  /** The snapshots of the last two looks. */
  private lastLook: Snapshot | null = null;
  private lookBefore: Snapshot | null = null;
  /**
   * How far the marks grew at the last look beyond every commit it could explain: commits of other
   * instances whose notices were still on their way then (they pay it back as they arrive), or
   * lost. Still owed at the next look, it counts as a commit nobody told of.
   */
  private owed = 0;

  /**
   * `revise`: applies a commit's writes to the memo (CommitMemo.committed with the right reviser);
   * `patienceMs`: how long a COMMIT may stay unanswered before the commits sent after it stop
   * waiting for it (its answers are dropped as if it had failed); `late`: such a COMMIT answered
   * after all (what was kept since may lack its rows, as after another instance's commit).
   */
  constructor(
    private readonly memo: CommitMemo,
    private readonly revise: Reviser,
    private readonly patienceMs: number,
    private readonly late: () => void,
    private readonly reviseForeign: Reviser = () => {},
  ) {}

  /** Transaction `xid` is about to send its COMMIT with a mark for each resource it wrote. */
  sending(xid: number, writes: TxWrites): Entry {
    const e: Entry = {
      xid, writes, marks: writes.resources().size, state: "sent", revised: Promise.withResolvers<void>(),
      // A COMMIT that never answers (a connection gone quiet) must not hold every later write.
      timer: setTimeout(() => {
        if (e.state === "sent") this.failed(e);
      }, this.patienceMs),
    };
    e.timer.unref?.();
    this.queue.push(e);
    this.unseen.push(e);
    return e;
  }

  /** Another instance's notice told of its commit `xid`, which marked `marks` resources (for the snapshot watch). */
  toldOf(xid: number, marks: number): void {
    const last = this.lastLook;
    if (!last || !ended(last, xid)) {
      this.told.push({ xid, marks });
      return;
    }
    // The last look counted its marks as owed, unless the look before counted them already (they
    // were owed then, and went as a commit nobody told of) or they were there at the first look.
    if (this.lookBefore && !ended(this.lookBefore, xid)) this.owed -= marks;
  }

  /**
   * Another instance's commit `xid` that only added `added` rows, told of with its rows: revised
   * into the kept answers like a commit of this instance, right away (its COMMIT is done).
   */
  foreign(xid: number, added: Map<string, AddedRow[]>): void {
    this.apply(this.reviseForeign, this.placed(added.keys(), added, true), added, xid, "another instance's commit");
  }

  /**
   * What a commit wrote to each of `resources`, as the memo is to take it: the rows it added when
   * `ok` (`newAbove`: just below the lowest), else "rewritten".
   */
  private placed(resources: Iterable<string>, added: Map<string, AddedRow[]>, ok: boolean): Map<string, ResourceWrite> {
    const writes = new Map<string, ResourceWrite>();
    for (const r of resources) {
      const rows = added.get(r);
      writes.set(r, ok && rows ? { newAbove: rows.reduce((low, row) => Math.min(low, row.id), Infinity) - 1 } : "rewritten");
    }
    return writes;
  }

  /** Revises one commit in, and logs it for the answers read meanwhile (settle). The commit is done whatever happens here. */
  private apply(revise: Reviser, writes: Map<string, ResourceWrite>, added: Map<string, AddedRow[]>, xid: number, what: string): void {
    try {
      revise(writes, added, xid);
    } catch (err) {
      console.error(`revising the cached answers after ${what} failed (they are all dropped):`, err);
      this.memo.dropAll();
    } finally {
      this.log.push({ epoch: this.memo.commits, xid });
      if (this.log.length > LOG) this.log.shift();
    }
  }

  /** Its COMMIT was acknowledged: resolves once it is revised into the memo (after every commit sent before it). */
  committed(e: Entry): Promise<void> {
    clearTimeout(e.timer);
    // Given up on already (it answered past its patience): its answers went as if it had failed,
    // and whatever was read since, without its rows, goes before its writer hears of it.
    if (e.state !== "sent") {
      this.late();
      return e.revised.promise;
    }
    e.state = "ok";
    this.drain();
    return e.revised.promise;
  }

  /** Its COMMIT failed, or answers too late: the outcome is not known, so the answers of what it wrote go. */
  failed(e: Entry): void {
    clearTimeout(e.timer);
    if (e.state !== "sent") return;
    e.state = "failed";
    const i = this.unseen.indexOf(e);
    if (i >= 0) this.unseen.splice(i, 1);
    else this.unsure = true;
    this.drain();
  }

  private drain(): void {
    while (this.queue.length && this.queue[0].state !== "sent") {
      const e = this.queue.shift()!;
      const ok = e.state === "ok";
      // Its writer must not hear of a failure here: apply() drops the answers instead.
      this.apply(this.revise, this.placed(e.writes.resources(), e.writes.added, ok), ok ? e.writes.added : new Map(), e.xid, "a commit");
      e.revised.resolve();
    }
  }

  /** See CommitMemo's Settle: `snapshot` is the one the answer was read in (null: it has none, an empty page). */
  settle(snapshot: string | null, since: number): "keep" | "loose" | "skip" {
    const s = snapshot === null ? null : parseSnapshot(snapshot);
    const now = this.memo.commits;
    if (now !== since) {
      // Every commit revised since must be one of these (a schema change is not), and seen by the answer.
      const across = this.log.filter((l) => l.epoch > since);
      if (across.length !== now - since || s === null) return "skip";
      if (!across.every((l) => ended(s, l.xid))) return "skip";
    }
    if (!this.queue.length) return "keep";
    if (s === null) return "loose";
    return this.queue.some((e) => ended(s, e.xid)) ? "loose" : "keep";
  }

  /**
   * A look of the snapshot watch: the sum of every change mark in the same snapshot. True when it
   * grew by more than the marks of this instance's commits that ended since the last look (another
   * instance committed records without its notice arriving, or with it still on its way).
   */
  othersMarked(snapshot: string, marks: number): boolean {
    const s = parseSnapshot(snapshot);
    let mine = 0;
    const seen = (e: { xid: number; marks: number }) => {
      if (!ended(s, e.xid)) return true;
      mine += e.marks;
      return false;
    };
    this.unseen = this.unseen.filter(seen);
    this.told = this.told.filter(seen);
    const excess = this.lastMarks === null ? 0 : marks - this.lastMarks - mine;
    const moved = this.unsure || this.owed !== 0 || excess < 0;
    this.owed = Math.max(0, excess);
    this.lastMarks = marks;
    this.lookBefore = this.lastLook ?? s;
    this.lastLook = s;
    this.unsure = false;
    return moved;
  }
}
