/**
 * Change marks on PostgreSQL: what `lastChange(resource)` reads (ETags, Last-Modified, the
 * import's re-check, the caches of tokens and roles).
 *
 * A single row per resource, updated by every write just before it commits, made concurrent
 * writers of a resource commit one after another (each waited for the row lock, held until the
 * previous commit was flushed): 8 % of PostgreSQL's own create rate. Instead each resource has a
 * row per *slot*, and a transaction marks the row of the slot it holds; a slot is held by one
 * transaction at a time on an instance (see `SlotPool`), so writers never wait on each other's
 * marks (two instances may share a slot number now and then: those two wait, nobody else).
 *
 * A row keeps the database clock's time of its last mark (`changed_ms`) and how many marks it got
 * (`n`). The mark of a resource is the latest time plus, as a fraction, the sum of the counts:
 * - the sum grows by one with every commit, in whatever order commits end, so that two states of
 *   a resource never share a mark (the latest time alone cannot tell two transactions apart that
 *   marked in the same millisecond, or one that marked first and committed last);
 * - the integer part stays the time of the last change (Last-Modified);
 * - the fraction is the sum modulo 4096 over 4096, which a double holds exactly at today's
 *   millisecond times: 4,096 commits within one millisecond of the database's clock would be needed
 *   for two states to meet. A mark is not always larger than the one before (the fraction wraps):
 *   readers compare marks for equality.
 * Rows are read the way they are committed, so every instance reads the same mark for the same
 * state: an ETag from one instance is good on another.
 */
import { lit } from "./postgres-dialect";

/** Slot numbers shared out among the instances (each starts at a random one of them). */
export const SLOTS = 64;
const FRACTION = 4096;

/**
 * The marks of one transaction, in resource order (two transactions never wait on each other's rows
 * in opposite orders). Written as text (names are quoted): it goes in one message with the COMMIT.
 */
export function markSql(resources: Iterable<string>, slot: number): string {
  const values = [...resources].sort().map((r) => `(${lit(r)}, ${slot}, (extract(epoch from clock_timestamp()) * 1000)::bigint, 1)`).join(", ");
  return `INSERT INTO _resd_changes AS c (resource, slot, changed_ms, n) VALUES ${values}
    ON CONFLICT (resource, slot) DO UPDATE SET changed_ms = GREATEST(c.changed_ms + 1, excluded.changed_ms), n = c.n + 1`;
}

/** The mark of a resource (`?`: its name); 0 when it was never written. */
export const LAST_CHANGE_SQL = "SELECT max(changed_ms)::float8 AS ms, sum(n)::float8 AS n FROM _resd_changes WHERE resource = ?";
export type MarkRow = { ms: number | null; n: number | null };
export const markOf = (rows: readonly unknown[]): number => {
  const row = rows[0] as MarkRow | undefined;
  if (!row || row.ms === null) return 0;
  return Number(row.ms) + (Number(row.n ?? 0) % FRACTION) / FRACTION;
};

/**
 * The slots of one instance: a transaction takes the lowest free one and gives it back at its end,
 * so at most as many are in use as transactions run at once (the pool's size).
 */
export class SlotPool {
  private readonly base = Math.floor(Math.random() * SLOTS);
  private readonly free: number[] = [];
  private next = 0;

  take(): number {
    return this.free.pop() ?? this.next++;
  }
  give(local: number): void {
    this.free.push(local);
  }
  /** The slot number a local one stands for in `_resd_changes`. */
  slot(local: number): number {
    return (this.base + local) % SLOTS;
  }
}
