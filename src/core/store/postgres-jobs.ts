/**
 * The durable job queue on PostgreSQL (table `_resd_jobs`), the same leases as on SQLite. Several
 * instances claim at once: a claim locks the row it takes and skips rows others hold
 * (`FOR UPDATE SKIP LOCKED`), so each job runs once.
 */
import type { ReservedSQL } from "bun";
import type { JobQueue, JobRow, JobState, NewJob } from "./types";
import type { PgHost } from "./postgres-host";

const COLS = `id::float8 AS id, type, resource, action, uuid, payload, state, attempts, run_at::float8 AS run_at,
  lease_until::float8 AS lease_until, lease, last_error, created::float8 AS created, updated::float8 AS updated`;

export async function insertPgJob(db: ReservedSQL, job: NewJob, now = Date.now()): Promise<void> {
  await db.unsafe(`INSERT INTO _resd_jobs (type, resource, action, uuid, payload, state, attempts, run_at, created, updated)
            VALUES ($1, $2, $3, $4, $5, 'queued', 0, $6, $7, $8)`, [job.type, job.resource, job.action, job.uuid, job.payload, job.run_at, now, now]);
}

const EXPIRED = `SELECT ${COLS} FROM _resd_jobs WHERE state = 'running' AND lease_until <= $1 ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED`;
const QUEUED = `SELECT ${COLS} FROM _resd_jobs WHERE state = 'queued' AND run_at <= $1 ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`;

export class PgJobs implements JobQueue {
  constructor(private readonly store: PgHost) {}

  private async changes(sql: string, args: unknown[]): Promise<boolean> {
    return this.store.raw(async (db) => (await db.unsafe(sql, args)).count > 0);
  }

  claim(now: number, leaseMs: number, maxAttempts: number): Promise<JobRow | null> {
    return this.store.raw(async (db) => {
      for (;;) {
        // A job whose worker died (lease expired) goes first: it is older than anything queued.
        const row = ((await db.unsafe(EXPIRED, [now]))[0] ?? (await db.unsafe(QUEUED, [now]))[0]) as JobRow | undefined;
        if (!row) return null;
        if (row.state === "running" && row.attempts >= maxAttempts) {
          // Its last attempt never settled: the process died each time. Stop the loop here.
          await db.unsafe(`UPDATE _resd_jobs SET state = 'dead', lease = NULL, lease_until = NULL, updated = $1,
                    last_error = coalesce(last_error || '; ', '') || 'attempt ' || attempts || ' never finished (lease expired)' WHERE id = $2`, [now, row.id]);
          continue;
        }
        const lease = crypto.randomUUID();
        await db.unsafe(`UPDATE _resd_jobs SET state = 'running', attempts = attempts + 1, lease = $1, lease_until = $2, updated = $3 WHERE id = $4`,
          [lease, now + leaseMs, now, row.id]);
        return { ...row, state: "running", attempts: row.attempts + 1, lease, lease_until: now + leaseMs, updated: now };
      }
    });
  }

  extend(id: number, lease: string, until: number): Promise<boolean> {
    return this.changes(`UPDATE _resd_jobs SET lease_until = $1 WHERE id = $2 AND lease = $3 AND state = 'running'`, [until, id, lease]);
  }

  complete(id: number, lease: string, now: number): Promise<boolean> {
    return this.changes(`UPDATE _resd_jobs SET state = 'done', lease = NULL, lease_until = NULL, updated = $1 WHERE id = $2 AND lease = $3 AND state = 'running'`, [now, id, lease]);
  }

  fail(id: number, lease: string, now: number, error: string, retryAt: number | null): Promise<boolean> {
    return this.changes(`UPDATE _resd_jobs SET state = $1, run_at = coalesce($2, run_at), last_error = $3, lease = NULL, lease_until = NULL, updated = $4
                WHERE id = $5 AND lease = $6 AND state = 'running'`, [retryAt === null ? "dead" : "queued", retryAt, error.slice(0, 2000), now, id, lease]);
  }

  release(id: number, lease: string, now: number): Promise<boolean> {
    // The interrupted attempt is not held against the job: it did not fail, it was stopped.
    return this.changes(`UPDATE _resd_jobs SET state = 'queued', attempts = GREATEST(attempts - 1, 0), run_at = $1, lease = NULL, lease_until = NULL, updated = $2
                WHERE id = $3 AND lease = $4 AND state = 'running'`, [now, now, id, lease]);
  }

  async list(opts: { state?: JobState; limit: number }): Promise<JobRow[]> {
    return opts.state
      ? this.store.query<JobRow>(`SELECT ${COLS} FROM _resd_jobs WHERE state = ? ORDER BY id DESC LIMIT ?`, [opts.state, opts.limit])
      : this.store.query<JobRow>(`SELECT ${COLS} FROM _resd_jobs ORDER BY id DESC LIMIT ?`, [opts.limit]);
  }

  async get(id: number): Promise<JobRow | null> {
    if (!Number.isSafeInteger(id)) return null;
    return (await this.store.query<JobRow>(`SELECT ${COLS} FROM _resd_jobs WHERE id = ?`, [id]))[0] ?? null;
  }

  retry(id: number, now: number): Promise<JobRow | null> {
    return this.store.raw(async (db) => {
      const rows = await db.unsafe(`UPDATE _resd_jobs SET state = 'queued', attempts = 0, run_at = $1, lease = NULL, lease_until = NULL, updated = $2
                          WHERE id = $3 AND state != 'running' RETURNING ${COLS}`, [now, now, id]);
      return (rows[0] as JobRow | undefined) ?? null;
    });
  }

  purgeDone(before: number): Promise<number> {
    return this.store.raw(async (db) => (await db.unsafe("DELETE FROM _resd_jobs WHERE state = 'done' AND updated < $1", [before])).count);
  }
}
