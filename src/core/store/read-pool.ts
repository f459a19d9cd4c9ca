/**
 * Reads that can be slow (a filter no index serves, a count over many rows, a search fallback, the
 * next batch of a streamed list) run in a small pool of worker threads, each with its own read-only
 * connection (WAL readers run side by side), so the event loop keeps answering. A query past the
 * time budget is ended by ending its worker (SQLite cannot be interrupted from here) and answers
 * 503 with Retry-After; a fresh worker takes its place. Callers take turns at the workers, and each
 * has a bounded number of queries waiting or running (see FairShare).
 *
 * The worker is created from source text (a Blob), so it works the same from source and from the
 * compiled executable, with no extra entry point.
 */
import { AppError } from "../errors";
import { FairShare } from "./fair-share";
import type { SqlValue } from "./types";

const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
let path = "";
// A stream reads on a connection of its own: an open statement pins its snapshot, and other
// queries of this worker must see every commit.
const streams = new Map();
const open = (cacheKiB) => {
  const c = new Database(path, { readonly: true, strict: true });
  c.exec("PRAGMA busy_timeout=5000; PRAGMA cache_size=-" + cacheKiB + "; PRAGMA mmap_size=0; PRAGMA temp_store=MEMORY;");
  return c;
};
self.onmessage = (event) => {
  const m = event.data;
  try {
    switch (m.type) {
      case "open":
        path = m.path;
        db = open(m.cacheKiB);
        postMessage({ id: m.id, ok: true });
        break;
      case "all":
        postMessage({ id: m.id, ok: true, value: db.query(m.sql).all(...m.args) });
        break;
      case "get":
        postMessage({ id: m.id, ok: true, value: db.query(m.sql).get(...m.args) ?? null });
        break;
      case "stream": {
        let s = streams.get(m.stream);
        if (!s) { const c = open(4096); s = { c, it: c.prepare(m.sql).iterate(...m.args) }; streams.set(m.stream, s); }
        const rows = [];
        let done = false;
        while (rows.length < m.max) {
          const next = s.it.next();
          if (next.done) { done = true; break; }
          rows.push(next.value);
        }
        if (done) { streams.delete(m.stream); s.c.close(); }
        postMessage({ id: m.id, ok: true, value: { rows, done } });
        break;
      }
      case "close": {
        const s = streams.get(m.stream);
        if (s) { s.it.return?.(); s.c.close(); streams.delete(m.stream); }
        postMessage({ id: m.id, ok: true });
        break;
      }
    }
  } catch (err) {
    postMessage({ id: m.id, ok: false, error: String(err && err.message ? err.message : err) });
  }
};
`;

type Request = { type: "all" | "get"; sql: string; args: SqlValue[] } | { type: "stream"; stream: number; sql: string; args: SqlValue[]; max: number } | { type: "close"; stream: number };
type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void };
type Slot = { worker: Worker; busy: boolean; ready: Promise<unknown>; pending: Map<number, Pending>; streams: Set<number> };
type Job = { req: Request; resolve: (v: unknown) => void; reject: (e: unknown) => void; slot?: Slot; caller: string; part?: boolean };

/**
 * Who asks, for the fair share: `caller` as the HTTP layer names it (none: work of the server
 * itself). `admitted`: part of a query admitted already (a stream's next batch, a count split in
 * parts), never refused midway. `part`: a second or later part of a count split in parts, which
 * counts once against the caller's bound (see Fair).
 */
export type Asker = { caller?: string; admitted?: boolean; part?: boolean };

export class ReadPool {
  private readonly slots: Slot[] = [];
  private readonly fair: FairShare<Job>;
  /** Streams stay on the worker that opened them (it holds their read transaction). */
  private readonly streamSlot = new Map<number, Slot>();
  private nextId = 1;
  private nextStream = 1;
  private readonly url: string;
  private closed = false;

  /** `perCaller`: list queries one caller may have waiting or running (RESD_MAX_QUERIES_PER_CALLER; 0 = no bound). */
  constructor(private readonly path: string, size: number, private readonly budgetMs: number, perCaller = 0, private readonly cacheKiB = 16 * 1024) {
    this.fair = new FairShare<Job>(perCaller);
    this.url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(this.url);
    const slot: Slot = { worker, busy: false, ready: Promise.resolve(), pending: new Map(), streams: new Set() };
    worker.onmessage = (e: MessageEvent<{ id: number; ok: boolean; value?: unknown; error?: string }>) => {
      const p = slot.pending.get(e.data.id);
      if (!p) return;
      slot.pending.delete(e.data.id);
      if (e.data.ok) p.resolve(e.data.value);
      else p.reject(new Error(e.data.error));
    };
    // The worker keeps no event loop of ours alive: the process may exit while it idles.
    worker.unref();
    slot.ready = this.send(slot, { type: "open", path: this.path, cacheKiB: this.cacheKiB });
    return slot;
  }

  private send(slot: Slot, msg: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ ...msg, id });
    });
  }

  /** Starts queued jobs on free workers, callers in turn; a stream's batch waits for its own worker. */
  private pump(): void {
    for (;;) {
      const free = this.slots.find((s) => !s.busy);
      if (!free) return;
      const job = this.fair.take((j) => !j.slot || !j.slot.busy);
      if (!job) return;
      void this.run(job.slot ?? free, job);
    }
  }

  private async run(slot: Slot, job: Job): Promise<void> {
    slot.busy = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await slot.ready;
      const answer = this.send(slot, job.req);
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new AppError(503, "SERVICE_UNAVAILABLE", `the query ran past its time budget (RESD_QUERY_TIMEOUT ${this.budgetMs} ms); narrow the filter or use an indexed field`, { retryAfter: 5 })), this.budgetMs);
      });
      job.resolve(await Promise.race([answer, expired]));
    } catch (e) {
      if (e instanceof AppError && e.status === 503) this.replace(slot, e);
      job.reject(e);
    } finally {
      clearTimeout(timer);
      slot.busy = false;
      this.fair.done(job.caller, job.part);
      this.pump();
    }
  }

  /** Ends a worker stuck in a query; its open streams fail, the rest of the pool goes on. */
  private replace(slot: Slot, why: AppError): void {
    slot.worker.terminate();
    for (const p of slot.pending.values()) p.reject(why);
    for (const s of slot.streams) this.streamSlot.delete(s);
    const i = this.slots.indexOf(slot);
    if (i >= 0 && !this.closed) this.slots[i] = this.spawn();
  }

  private submit<T>(req: Request, ask: Asker, slot?: Slot): Promise<T> {
    if (this.closed) return Promise.reject(new AppError(503, "SERVICE_UNAVAILABLE", "the server is shutting down"));
    const caller = ask.caller ?? "";
    return new Promise<T>((resolve, reject) => {
      if (!ask.admitted) this.fair.admit(caller);
      this.fair.add({ req, resolve: resolve as (v: unknown) => void, reject, slot, caller, part: ask.part });
      this.pump();
    });
  }

  /** Throws 429 now when `caller` may not start another query (see FairShare). */
  admit(caller: string | undefined): void {
    this.fair.admit(caller ?? "");
  }

  all<T>(sql: string, args: SqlValue[], ask: Asker = {}): Promise<T[]> {
    return this.submit<T[]>({ type: "all", sql, args }, ask);
  }

  get<T>(sql: string, args: SqlValue[], ask: Asker = {}): Promise<T | null> {
    return this.submit<T | null>({ type: "get", sql, args }, ask);
  }

  /**
   * Rows of a query in batches, read in a worker; closing early ends its read transaction. Its
   * batches take turns with other callers' queries but are never refused: a list cut off midway
   * would look complete to a client reading it (callers check `admit` before the answer starts).
   */
  async *stream<T>(sql: string, args: SqlValue[], caller?: string, batch = 2000): AsyncGenerator<T> {
    const ask: Asker = { caller, admitted: true };
    const stream = this.nextStream++;
    const slot = this.slots.find((s) => !s.busy) ?? this.slots[stream % this.slots.length];
    this.streamSlot.set(stream, slot);
    slot.streams.add(stream);
    let done = false;
    // One batch is always on its way while the caller works through the last: the worker reads
    // while the event loop writes.
    const fetchBatch = () => {
      const owner = this.streamSlot.get(stream);
      if (!owner) return Promise.reject(new AppError(503, "SERVICE_UNAVAILABLE", "the list was ended by the query time budget"));
      return this.submit<{ rows: T[]; done: boolean }>({ type: "stream", stream, sql, args, max: batch }, ask, owner);
    };
    let next: Promise<{ rows: T[]; done: boolean }> | null = fetchBatch();
    try {
      while (next) {
        const r: { rows: T[]; done: boolean } = await next;
        done = r.done;
        next = done ? null : fetchBatch();
        // A batch not yet asked for must not fail unheard if the caller stops early.
        next?.catch(() => undefined);
        yield* r.rows;
      }
    } finally {
      if (next) await next.catch(() => undefined);
      const owner = this.streamSlot.get(stream);
      this.streamSlot.delete(stream);
      owner?.streams.delete(stream);
      if (!done && owner) await this.submit({ type: "close", stream }, ask, owner).catch(() => undefined);
    }
  }

  close(): void {
    this.closed = true;
    for (const s of this.slots) s.worker.terminate();
    for (const j of this.fair.drain()) j.reject(new AppError(503, "SERVICE_UNAVAILABLE", "the server is shutting down"));
  }
}
