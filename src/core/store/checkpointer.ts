/**
 * Moves WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit
 * that crosses its threshold, on the writer's thread: copying a few MB of pages into the database
 * file then holds up every request (the p99 of reads under a steady write load). A worker thread
 * with a connection of its own runs a PASSIVE checkpoint (it never blocks writers or readers) every
 * interval instead; the writer keeps a much higher automatic threshold as a fallback, should the
 * worker fall behind.
 *
 * Created from source text (a Blob) like the read pool, so it works from the compiled executable.
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
self.onmessage = (event) => {
  const m = event.data;
  if (m.type === "start") {
    db = new Database(m.path, { strict: true });
    db.exec("PRAGMA busy_timeout=1000; PRAGMA cache_size=-2048; PRAGMA mmap_size=0;");
    timer = setInterval(() => {
      try { db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch {}
    }, m.intervalMs);
  } else if (m.type === "stop") {
    clearInterval(timer);
    db?.close();
    postMessage({ stopped: true });
  }
};
`;

/** The writer's automatic checkpoint threshold while the worker runs: 64 MB of WAL (4 KiB pages). */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 16384;

export class Checkpointer {
  private readonly worker: Worker;

  /** `onFailure` runs if the worker dies (it cannot open the database, say): the writer then checkpoints as before. */
  constructor(path: string, onFailure: () => void, intervalMs = 250) {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    this.worker = new Worker(url);
    this.worker.unref();
    this.worker.onerror = () => onFailure();
    this.worker.postMessage({ type: "start", path, intervalMs });
  }

  /** Stops checkpointing and closes the worker's connection (so that a final TRUNCATE can complete). */
  stop(): Promise<void> {
    this.worker.onerror = null; // the store is closing: nothing to fall back to
    return new Promise((resolve) => {
      const done = () => {
        this.worker.terminate();
        resolve();
      };
      const t = setTimeout(done, 1000);
      this.worker.onmessage = () => {
        clearTimeout(t);
        done();
      };
      this.worker.postMessage({ type: "stop" });
    });
  }
}
