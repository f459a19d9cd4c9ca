/**
 * A thread that commits record creates (see write-worker.ts). A create's own work on the event loop
 * is then its request, its checks and its answer; SQLite's share (about two thirds of a create's
 * time on the event loop: the row and six indexes, the search index, the counts, the WAL) runs on
 * the other core. The store decides what goes to the thread and when (see SqliteStore.enqueue), so
 * that its two connections never write at the same time.
 */
import { WRITE_WORKER, workerSpecifier } from "../../build/worker-url";
import { ReplyRing } from "./reply-ring";
import type { StoredRecord } from "./types";

export type InsertRow = { resource: string; values: [string, string, number, number, string | null, string | null] };

export const insertRow = (resource: string, r: StoredRecord): InsertRow => ({
  resource,
  values: [r.uuid, r.data, r._created, r._modified, r._created_by, r._modified_by],
});

/** `after`: the number of the store's last commit the event loop knows of (see write-worker.ts). */
export type WriteThreadRequest =
  | { type: "open"; path: string; writer: string; cacheMiB: number; autocheckpointPages: number; requests: SharedArrayBuffer; replies: SharedArrayBuffer }
  | { type: "insert"; rows: InsertRow[]; after: number }
  | { type: "close" };

/**
 * One commit's outcome: per row, null when inserted or SQLite's message when refused; per resource
 * written, its largest row id before the commit and its last new one; the commit's number (null:
 * nothing committed); whether another process committed since the store's last commit.
 * `ok: false`: the transaction failed as a whole (`busy`: another process held the write lock).
 */
export type InsertReply =
  | { ok: true; refused: (string | null)[]; written: [string, number, number][]; n: number | null; foreign: boolean }
  | { ok: false; busy: boolean; error: string };

/** A commit, as the thread writes it to the ring: the insert messages it settles, in order, and how. */
export type Committed = { ids: number[]; reply: InsertReply };

/** `wake`: the ring holds commits (for an event loop that is not waiting for them). */
export type ThreadMessage = { type: "wake" } | { type: "done"; id: number; error: string | null };

/** What the store hears of each commit: the messages it settles (their ids, in order) and how. */
export type CommitListener = (ids: number[], reply: InsertReply) => void;

/** The request ring's size: 8 MiB; a record that could take more than a quarter of it is not sent. */
const REQUEST_RING_BYTES = 8 << 20;

/** Longest the event loop waits for the thread's commit, once per turn that sent inserts (see scheduleWait). */
const WAIT_MS = Number(process.env.RESD_WT_WAIT ?? 1);

export class WriteThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, (error: string | null) => void>();
  private nextId = 1;
  /** Insert messages sent and not yet answered, by id. */
  private readonly unanswered = new Set<number>();
  private readonly ring = ReplyRing.create();
  private readonly requests = ReplyRing.create(REQUEST_RING_BYTES);
  private waitScheduled = false;
  private readonly opened: Promise<string | null>;
  /** Set once the thread died: the store then commits on the event loop again. */
  failed: Error | null = null;

  constructor(path: string, writer: string, opts: { cacheMiB: number; autocheckpointPages: number }, private readonly onCommit: CommitListener, private readonly onFail: (e: Error, ids: number[]) => void) {
    this.worker = new Worker(workerSpecifier(WRITE_WORKER));
    this.worker.onmessage = (e: MessageEvent<ThreadMessage>) => this.heard(e.data);
    this.worker.onerror = (e) => this.fail(new Error(`the write thread stopped: ${e.message}`));
    this.worker.unref();
    this.opened = this.ask({ type: "open", path, writer, ...opts, requests: this.requests.buffer, replies: this.ring.buffer }, false);
    void this.opened.then((error) => error !== null && this.fail(new Error(`the write thread could not open the database: ${error}`)));
  }

  private heard(m: ThreadMessage): void {
    if (m.type === "wake") return this.collect();
    this.waiting.get(m.id)?.(m.error);
    this.waiting.delete(m.id);
  }

  private collecting = false;
  /** Hands every commit the ring holds to the store, in order; cheap when it holds none. */
  collect(): void {
    if (this.collecting || !this.ring.pending()) return;
    this.collecting = true;
    try {
      this.collectAll();
    } finally {
      this.collecting = false;
    }
  }

  private collectAll(): void {
    for (const c of this.ring.read() as Committed[]) {
      for (const id of c.ids) this.unanswered.delete(id);
      // An idle thread keeps nothing alive; one with inserts on their way keeps the process up.
      if (!this.unanswered.size) this.worker.unref();
      this.onCommit(c.ids, c.reply);
    }
  }

  /**
   * Bun delivers a worker's message after the event loop's next poll for I/O, a whole turn later
   * (~2 ms under load): a create would wait that long for its commit, heard of only then. Instead,
   * once per turn that sent inserts, the loop waits briefly for the thread (which has been
   * committing them meanwhile) and reads its answers from the ring.
   */
  private scheduleWait(): void {
    if (this.waitScheduled) return;
    this.waitScheduled = true;
    setImmediate(() => {
      this.waitScheduled = false;
      const deadline = performance.now() + WAIT_MS;
      for (;;) {
        this.collect();
        const left = deadline - performance.now();
        if (!this.unanswered.size || left <= 0 || this.failed) break;
        this.ring.waitForMessage(left);
      }
    });
  }

  private fail(e: Error): void {
    if (this.failed) return;
    this.failed = e;
    const lost = [...this.unanswered];
    this.unanswered.clear();
    for (const answer of this.waiting.values()) answer(e.message);
    this.waiting.clear();
    this.worker.unref();
    this.onFail(e, lost);
  }

  /** A request answered with `done`: by message before the thread serves its ring, through the ring after. */
  private ask(req: WriteThreadRequest, ring = true): Promise<string | null> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      if (ring) this.requests.write({ ...req, id });
      else this.worker.postMessage({ ...req, id });
    });
  }

  /** Can these rows go through the request ring? (A huge record commits on the event loop instead.) */
  fits(rows: InsertRow[]): boolean {
    let bytes = 0;
    for (const r of rows) bytes += r.values[1].length * 3 + 256;
    return bytes <= REQUEST_RING_BYTES / 4;
  }

  /** Sends rows to commit; returns the message's id, which a later commit names (see CommitListener). */
  insert(rows: InsertRow[], after: number): number {
    const id = this.nextId++;
    if (!this.unanswered.size) this.worker.ref();
    this.unanswered.add(id);
    this.requests.write({ type: "insert", rows, after, id });
    this.scheduleWait();
    return id;
  }

  /** Closes the thread's connection (after its last commit), then ends the thread. */
  async close(): Promise<void> {
    if (!this.failed && (await this.opened) === null) await this.ask({ type: "close" });
    this.worker.terminate();
  }
}
