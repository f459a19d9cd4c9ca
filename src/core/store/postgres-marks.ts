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
import { ended, parseSnapshot, type Snapshot } from "./postgres-snapshot";

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
    ON CONFLICT (resource, slot) DO UPDATE SET changed_ms = GREATEST(c.changed_ms + 1, excluded.changed_ms), n = c.n + 1
    RETURNING c.resource, c.changed_ms::float8 AS ms`;
}

/** What `markSql` returned: the time each resource's row now holds (a commit adds one to the resource's count). */
export function marksOf(rows: readonly unknown[]): Map<string, number> {
  return new Map((rows as { resource: string; ms: number }[]).map((r) => [r.resource, Number(r.ms)]));
}

/** The mark of a resource (`?`: its name); 0 when it was never written. */
export const LAST_CHANGE_SQL = "SELECT max(changed_ms)::float8 AS ms, sum(n)::float8 AS n FROM _resd_changes WHERE resource = ?";
export type MarkRow = { ms: number | null; n: number | null };
/** The mark of a resource with the snapshot it was read in (`?`: its name). */
const MARK_READ_SQL = "SELECT max(changed_ms)::float8 AS ms, sum(n)::float8 AS n, pg_current_snapshot()::text AS s FROM _resd_changes WHERE resource = ?";
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

/** A resource's mark as the kept answers hold it: the read one, moved by each commit revised in since. */
type Held = { ms: number; n: number; base: Snapshot };
/** A read of a mark under way: the commits revised meanwhile (`ms` null: what the commit marked is not known). */
type Reading = { folds: { xid: number; ms: number | null }[]; done: Promise<number> };

const valueOf = (h: Held) => h.ms + (h.n % FRACTION) / FRACTION;

/**
 * Each resource's change mark as the answers this instance keeps hold it. A mark read from the
 * database whenever asked may count a commit that the kept pages do not hold yet (another
 * instance's, before its notice arrives; this instance's, before its revision): a list then went
 * out with the new mark and the old page, and once the page was revised, the same mark (ETag,
 * Last-Modified) named another answer, so a client holding the old page was told it was current.
 *
 * So a mark is read once per generation of the kept answers (`gen`: they all went when it changes),
 * with the snapshot it was read in, after this instance's commits that the snapshot saw are revised
 * in; from then on every commit revised into the answers moves it as it moved the database's
 * (`fold`: its time, the latest, and one more count), unless the snapshot saw it already. Answers
 * of the resource are only read after its mark (PgStore.page, count), so they hold every commit the
 * mark counts. A commit whose mark is not known (its COMMIT failed or did not answer) makes the
 * resource's mark be read again.
 */
export class MarkBook {
  private gen: string | null = null;
  private readonly held = new Map<string, Held>();
  private readonly reading = new Map<string, Reading>();

  /** The held mark of `resource` in generation `gen`. */
  get(resource: string, gen: string): number | undefined {
    this.sync(gen);
    const h = this.held.get(resource);
    return h && valueOf(h);
  }

  private sync(gen: string): void {
    if (gen === this.gen) return;
    this.gen = gen;
    this.held.clear();
    this.reading.clear();
  }

  /** Commit `xid` was revised into the kept answers; `marks`: the time it gave each resource it wrote (null: not known). */
  fold(xid: number, resources: Iterable<string>, marks: ReadonlyMap<string, number> | null): void {
    for (const r of resources) {
      const ms = marks?.get(r) ?? null;
      this.reading.get(r)?.folds.push({ xid, ms });
      const h = this.held.get(r);
      if (!h || ended(h.base, xid)) continue;
      if (ms === null) this.held.delete(r);
      else {
        h.ms = Math.max(h.ms, ms);
        h.n++;
      }
    }
  }

  /**
   * Reads the mark of `resource` (one read for every caller meanwhile): `query` runs MARK_READ_SQL,
   * `revised` resolves once this instance's commits that the snapshot saw are revised in.
   */
  read(resource: string, gen: string, query: (sql: string) => Promise<unknown[]>, revised: (seen: Snapshot) => Promise<void>): Promise<number> {
    this.sync(gen);
    const running = this.reading.get(resource);
    if (running) return running.done;
    const reading: Reading = { folds: [], done: Promise.resolve(0) };
    reading.done = (async () => {
      try {
        const [row] = (await query(MARK_READ_SQL)) as (MarkRow & { s: string })[];
        const base = parseSnapshot(row!.s);
        await revised(base);
        const h: Held = { ms: row!.ms === null ? 0 : Number(row!.ms), n: Number(row!.n ?? 0), base };
        let known = true;
        for (const f of reading.folds) {
          if (ended(base, f.xid)) continue;
          if (f.ms === null) known = false;
          else {
            h.ms = Math.max(h.ms, f.ms);
            h.n++;
          }
        }
        // Kept only if nothing was lost meanwhile (a new generation, a commit of unknown mark).
        if (known && this.reading.get(resource) === reading) this.held.set(resource, h);
        return valueOf(h);
      } finally {
        if (this.reading.get(resource) === reading) this.reading.delete(resource);
      }
    })();
    this.reading.set(resource, reading);
    return reading.done;
  }
}
