/**
 * The queue worker inside `resd serve`: claims due jobs, runs the handler an extension registered
 * for the type, and settles them. At-least-once: a job is marked done only after its handler
 * returned, so a crash between the two runs it again. Failures retry with exponential backoff
 * and end in the `dead` state after `jobAttempts` attempts (`resd jobs retry ID` revives one).
 */
import type { Site, WriteEvent } from "../site";
import type { JobRow } from "../store/types";
import { onJobQueued } from "./enqueue";

/** What a job handler receives: the write event that queued it plus the job's own facts. */
export type JobContext = WriteEvent & {
  id: number;
  type: string;
  /** 1 for the first run. */
  attempt: number;
  maxAttempts: number;
  /** When the job was queued (ms since the epoch). */
  queued: number;
  /** The job's payload as queued (JSON text): the write event, or what a built-in job type queued. */
  payload: string;
};
export type JobHandler = (job: JobContext) => unknown;

const BACKOFF_CAP_MS = 3600_000;
const DONE_KEPT_MS = 7 * 24 * 3600_000;
/** How long stop() waits for running handlers before handing their jobs back to the queue. */
const STOP_GRACE_MS = 10_000;

export const backoffMs = (base: number, attempt: number) => Math.min(base * 2 ** Math.max(attempt - 1, 0), BACKOFF_CAP_MS);

export type Worker = { start(): void; stop(): Promise<void> };

export function createWorker(site: Site, handlerFor: (type: string) => JobHandler | undefined): Worker {
  const q = site.store.jobs;
  const cfg = site.config;
  const leaseMs = cfg.jobLease * 1000;
  let running = false;
  let loops: Promise<void>[] = [];
  const active = new Map<number, string>(); // job id → lease
  const sleepers = new Set<() => void>();
  let unsubscribe = () => {};
  let purgeTimer: ReturnType<typeof setInterval> | null = null;

  // Counts wake-ups, so that one arriving while a worker's claim was still on its way (it found
  // nothing, and the job was queued just after) is not slept through until the next poll.
  let wakes = 0;
  const wakeAll = () => {
    wakes++;
    sleepers.forEach((fn) => fn());
  };
  const idle = (seen = wakes) =>
    new Promise<void>((resolve) => {
      if (wakes !== seen) return resolve();
      const done = () => {
        clearTimeout(t);
        sleepers.delete(done);
        resolve();
      };
      const t = setTimeout(done, cfg.jobPoll);
      sleepers.add(done);
    });

  async function run(job: JobRow & { lease: string }): Promise<void> {
    active.set(job.id, job.lease);
    const beat = setInterval(() => {
      q.extend(job.id, job.lease, Date.now() + leaseMs).catch((e) => console.error(`job ${job.id}: lease renewal failed:`, e));
    }, Math.max(leaseMs / 3, 50));
    try {
      const handler = handlerFor(job.type);
      if (!handler) throw new Error(`no handler is registered for job type "${job.type}"`);
      const event = JSON.parse(job.payload) as WriteEvent;
      await handler({ ...event, payload: job.payload, id: job.id, type: job.type, attempt: job.attempts, maxAttempts: cfg.jobAttempts, queued: job.created });
      clearInterval(beat);
      await q.complete(job.id, job.lease, Date.now());
    } catch (e) {
      clearInterval(beat);
      if (!running && !active.has(job.id)) return; // handed back by stop(); the next start runs it
      const dead = job.attempts >= cfg.jobAttempts;
      const retryAt = dead ? null : Date.now() + backoffMs(cfg.jobBackoff, job.attempts);
      const message = e instanceof Error ? e.message : String(e);
      await q.fail(job.id, job.lease, Date.now(), message, retryAt);
      console.error(`job ${job.id} (${job.type}) attempt ${job.attempts}/${cfg.jobAttempts} failed: ${message}; ${dead ? "dead-lettered" : `retry at ${new Date(retryAt!).toISOString()}`}`);
    } finally {
      clearInterval(beat);
      active.delete(job.id);
    }
  }

  async function loop(): Promise<void> {
    while (running) {
      try {
        const seen = wakes;
        const job = await q.claim(Date.now(), leaseMs, cfg.jobAttempts);
        if (!job || !running) {
          if (job) await q.release(job.id, job.lease!, Date.now());
          else await idle(seen);
          continue;
        }
        await run(job as JobRow & { lease: string });
      } catch (e) {
        // The queue itself failed (database busy or closing): log, wait, try again.
        console.error("job worker:", e);
        if (running) await idle();
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      unsubscribe = onJobQueued(site, wakeAll);
      loops = Array.from({ length: cfg.jobConcurrency }, () => loop());
      const purge = () => q.purgeDone(Date.now() - DONE_KEPT_MS).catch((e) => console.error("job purge failed:", e));
      void purge();
      purgeTimer = setInterval(purge, 3600_000);
      purgeTimer.unref();
    },
    async stop() {
      if (!running) return;
      running = false;
      unsubscribe();
      if (purgeTimer) clearInterval(purgeTimer);
      wakeAll();
      const all = Promise.all(loops);
      const finished = await Promise.race([all.then(() => true), Bun.sleep(STOP_GRACE_MS).then(() => false)]);
      if (!finished) {
        // Handlers still running: give their jobs back so the next start runs them without
        // waiting for the lease to expire (at-least-once: they may run twice).
        const left = [...active];
        active.clear();
        for (const [id, lease] of left) await q.release(id, lease, Date.now());
      }
    },
  };
}
