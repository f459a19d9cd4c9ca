/**
 * List queries of many callers for a few executors (SQLite's read workers, PostgreSQL's read
 * connections), handed out in turn. First come, first served let one caller's eight slow pages
 * hold every executor and queue everyone else behind them (a 2 ms list took 2.6–3.9 s). Here each
 * caller has a queue of its own, and a free executor takes the next query of the waiting caller
 * that has the fewest running (of those, the one served longest ago): another caller's query waits
 * only for the first executor to finish its current query, however many the first caller queued.
 * (Plain turns were not enough: a caller arriving at the back of the turn order waited for the
 * flooding caller's next query too, up to two slow queries.) A caller's queries waiting or running
 * are bounded too: past the bound a new one is refused at once (429 with Retry-After) instead of
 * lengthening its queue.
 *
 * Callers are keys the HTTP layer gives (a user, an anonymous client's address); work nobody asked
 * for in person (the sitemap, exports, the CLI) has the key "" and is never refused.
 */
import { AppError } from "../errors";

/** What a caller should wait before asking again: its queries take up to RESD_QUERY_TIMEOUT, most far less. */
const RETRY_AFTER_S = 1;

/** `part`: a further part of one query already counted (a count split among executors): it takes turns, but does not count against the bound again. */
export type Fair = { caller: string; part?: boolean };

/** A caller's queued jobs, and its jobs waiting or running (`parts` of them further parts of one query). */
type Held<J> = { waiting: J[]; held: number; parts: number };

export class FairShare<J extends Fair> {
  /** Served longest ago first: the caller served last moves to the back. */
  private readonly callers = new Map<string, Held<J>>();

  /** `perCaller`: queries one caller may have waiting or running; 0 = no bound. */
  constructor(private readonly perCaller: number) {}

  /** Throws 429 when a new query of `caller` would pass its bound. */
  admit(caller: string): void {
    if (caller === "" || this.perCaller <= 0) return;
    const c = this.callers.get(caller);
    if (!c || c.held - c.parts < this.perCaller) return;
    throw new AppError(429, "TOO_MANY_REQUESTS",
      `you have ${this.perCaller} list queries waiting or running already (RESD_MAX_QUERIES_PER_CALLER); ask again when one has answered`,
      { retryAfter: RETRY_AFTER_S });
  }

  /** Queues a job; it counts against its caller until `done`. */
  add(job: J): void {
    let c = this.callers.get(job.caller);
    if (!c) this.callers.set(job.caller, (c = { waiting: [], held: 0, parts: 0 }));
    c.waiting.push(job);
    c.held++;
    if (job.part) c.parts++;
  }

  /** The next job that `fits` (an executor is free for it): of the caller with the fewest running. */
  take(fits: (job: J) => boolean): J | undefined {
    let best: { key: string; c: Held<J>; i: number; running: number } | null = null;
    for (const [key, c] of this.callers) {
      const running = c.held - c.waiting.length;
      if (best && running >= best.running) continue;
      const i = c.waiting.findIndex(fits);
      if (i >= 0) best = { key, c, i, running };
      if (running === 0 && best?.key === key) break;
    }
    if (!best) return undefined;
    const job = best.c.waiting.splice(best.i, 1)[0];
    this.callers.delete(best.key);
    this.callers.set(best.key, best.c);
    return job;
  }

  /** A job taken earlier has ended (`part`: as it was added). */
  done(caller: string, part = false): void {
    const c = this.callers.get(caller);
    if (!c) return;
    if (part) c.parts--;
    if (--c.held <= 0 && c.waiting.length === 0) this.callers.delete(caller);
  }

  /** Every job still waiting, removed (the executors are closing). */
  drain(): J[] {
    const all = [...this.callers.values()].flatMap((c) => c.waiting);
    this.callers.clear();
    return all;
  }
}

/**
 * A FairShare in front of `slots` executors that are not told apart (connections of a pool): `run`
 * waits for a slot in turn, holds it while `fn` runs, then gives it to the next caller in turn.
 */
export class FairGate {
  private running = 0;
  private readonly share: FairShare<Fair & { start: (release: () => void) => void }>;

  constructor(private readonly slots: number, perCaller: number) {
    this.share = new FairShare(perCaller);
  }

  admit(caller: string): void {
    this.share.admit(caller);
  }

  /**
   * A slot for `caller` once its turn comes; the returned function gives it back (only the first
   * call counts). `admitted`: the query was admitted already (see `admit`) and is not refused now.
   */
  acquire(caller: string, admitted = false): Promise<() => void> {
    if (!admitted) this.share.admit(caller);
    return new Promise((resolve) => {
      this.share.add({ caller, start: resolve });
      this.pump();
    });
  }

  async run<T>(caller: string, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire(caller);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private pump(): void {
    while (this.running < this.slots) {
      const next = this.share.take(() => true);
      if (!next) return;
      this.running++;
      let given = false;
      next.start(() => {
        if (given) return;
        given = true;
        this.running--;
        this.share.done(next.caller);
        this.pump();
      });
    }
  }
}
