/**
 * Moves WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit
 * that crosses its threshold, on the writer's thread: copying pages into the database file and
 * waiting for them to reach the disk then holds up every request. A worker thread with a connection
 * of its own runs a PASSIVE checkpoint (it never blocks writers or readers) every interval instead;
 * the writer keeps a much higher automatic threshold as a fallback, should the worker fall behind.
 *
 * The WAL is only reused from its start by a transaction that begins after a complete checkpoint,
 * with no reader left on the old frames. Under a steady stream of commits the next transaction has
 * always begun before the checkpoint ends, so the WAL grew until the writer's fallback checkpoint
 * ran on the event loop, whose fsync froze the whole server for 0.3–0.6 s every few seconds of
 * writes. So once the WAL passes `quietFrames`, the worker asks for a quiet moment: the store
 * starts no transaction until the worker has run a RESTART checkpoint (it copies what is left,
 * waits up to `quietWaitMs` for readers of older frames to finish, and makes the next transaction
 * write the WAL from its start); reads go on. Most frames were copied by the previous rounds, so
 * the pause is short; it is bounded by `quietMaxMs` whatever happens. A round that a long reader
 * (an export) kept from finishing is tried again after twice the wait of the one before (up to 8 s),
 * so writes are not held again and again for nothing.
 *
 * Created from source text (a Blob) like the read pool, so it works from the compiled executable.
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
import { statSync } from "node:fs";
let db = null;
let walPath = "";
let limitBytes = 0;
let timer = null;
let nextAsk = 0;
let interval = 250;
let backoff = 250;
self.onmessage = (event) => {
  const m = event.data;
  if (m.type === "start") {
    db = new Database(m.path, { strict: true });
    walPath = m.path + "-wal";
    limitBytes = m.limitBytes;
    db.exec("PRAGMA busy_timeout=1000; PRAGMA cache_size=-2048; PRAGMA mmap_size=0;");
    interval = backoff = m.intervalMs;
    timer = setInterval(() => {
      try {
        const r = db.query("PRAGMA wal_checkpoint(PASSIVE)").get();
        if (r.log >= m.quietFrames && Date.now() >= nextAsk) {
          nextAsk = Infinity; // until this round has run
          Atomics.store(m.wanted, 0, 1);
        }
      } catch {}
    }, m.intervalMs);
  } else if (m.type === "go") {
    // A failed round (an error counts as one) backs off like a busy one; the store goes on either way.
    let r = null;
    db.exec("PRAGMA busy_timeout=" + m.waitMs);
    try {
      // A WAL file grown past the limit (a long reader held old frames) is cut back here, not by the writer.
      const grown = (statSync(walPath, { throwIfNoEntry: false })?.size ?? 0) > limitBytes;
      r = db.query(grown ? "PRAGMA wal_checkpoint(TRUNCATE)" : "PRAGMA wal_checkpoint(RESTART)").get();
    } catch {
      r = null;
    } finally {
      db.exec("PRAGMA busy_timeout=1000");
    }
    backoff = r && r.busy === 0 ? interval : Math.min(backoff * 2, 8000);
    nextAsk = Date.now() + backoff;
    postMessage({ type: "done", seq: m.seq, busy: r ? r.busy : -1 });
  } else if (m.type === "stop") {
    clearInterval(timer);
    db?.close();
    postMessage({ type: "stopped" });
  }
};
`;

/**
 * The writer's automatic checkpoint threshold while the worker runs: 1 GB of WAL (4 KiB pages), a
 * last resort should the worker fall behind. A reader holding one snapshot for long (a slow
 * export) keeps any checkpoint from passing it, so the WAL grows meanwhile (580 MB during a 20 s
 * export under 32 creating clients). With the threshold at 64 MB, the first commit after that
 * reader let go copied the whole backlog on the event loop: every request stopped for 1.2–1.7 s.
 * The worker copies it in the background instead.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 262144;

/** Size a WAL file is cut back to after it grew (SQLite's journal_size_limit; the worker does it while it runs). */
export const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export type CheckpointerOptions = {
  intervalMs?: number;
  /** WAL frames past which the worker asks for a quiet moment (16 MB of 4 KiB pages). */
  quietFrames?: number;
  /** Longest the quiet checkpoint waits for readers of older frames. */
  quietWaitMs?: number;
  /** Longest the store holds its transactions back for one quiet checkpoint. */
  quietMaxMs?: number;
  /** A WAL file larger than this is cut back in a quiet round (WAL_SIZE_LIMIT). */
  walLimitBytes?: number;
};

export class Checkpointer {
  private readonly worker: Worker;
  private readonly quietMaxMs: number;
  private readonly quietWaitMs: number;
  /**
   * Set by the worker when it wants a quiet moment: shared memory, not a message, because a store
   * committing back to back runs from one microtask to the next and would not hear a message.
   */
  private readonly wants = new Int32Array(new SharedArrayBuffer(4));
  private waiting: ((m: { type: string; seq?: number }) => void) | null = null;
  /** Quiet moments given so far. */
  rounds = 0;

  /** `onFailure` runs if the worker dies (it cannot open the database, say): the writer then checkpoints as before. */
  constructor(path: string, onFailure: () => void, opts: CheckpointerOptions = {}) {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    this.quietMaxMs = opts.quietMaxMs ?? 1000;
    this.quietWaitMs = opts.quietWaitMs ?? 200;
    this.worker = new Worker(url);
    this.worker.unref();
    this.worker.onerror = () => {
      Atomics.store(this.wants, 0, 0);
      onFailure();
    };
    this.worker.onmessage = (event: MessageEvent<{ type: string; seq?: number }>) => this.waiting?.(event.data);
    this.worker.postMessage({
      type: "start",
      path,
      intervalMs: opts.intervalMs ?? 250,
      quietFrames: opts.quietFrames ?? 4096,
      limitBytes: opts.walLimitBytes ?? WAL_SIZE_LIMIT,
      wanted: this.wants,
    });
  }

  /** The worker asked for a quiet moment and has not had it yet. */
  get wanted(): boolean {
    return Atomics.load(this.wants, 0) === 1;
  }

  /**
   * Called by the store outside any transaction of its own, when `wanted`: the worker checkpoints
   * while the store waits (at most quietMaxMs), so that nothing new lands in the WAL meanwhile.
   */
  quiet(): Promise<void> {
    Atomics.store(this.wants, 0, 0);
    this.rounds++;
    // Numbered: the late answer of a round the store stopped waiting for never ends the next one.
    return this.ask({ type: "go", waitMs: this.quietWaitMs, seq: this.rounds }, "done", this.quietMaxMs);
  }

  /** Stops checkpointing and closes the worker's connection (so that a final TRUNCATE can complete). */
  async stop(): Promise<void> {
    this.worker.onerror = null; // the store is closing: nothing to fall back to
    Atomics.store(this.wants, 0, 0);
    await this.ask({ type: "stop" }, "stopped", 1000);
    this.worker.terminate();
  }

  private ask(message: { type: string; waitMs?: number; seq?: number }, answer: string, boundMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting = null;
        resolve();
      };
      const timer = setTimeout(done, boundMs);
      this.waiting = (m) => {
        if (m.type === answer && m.seq === message.seq) done();
      };
      this.worker.postMessage(message);
    });
  }
}
