/**
 * Where a read of the SQLite store runs: in place on the event loop, on the connection whose cache
 * is warm (`warm`), or on a read worker of the pool (started on first use), and rows of a long read
 * a batch at a time. The store (sqlite.ts) and its parts (counts, search) read through one of these.
 */
import { Database } from "bun:sqlite";
import { ReadPool, type Asker } from "./read-pool";
import type { SqlValue } from "./types";

/**
 * A bounded page cache per connection keeps memory flat at any database size. Only the connection
 * that answers short reads may map the file (`mmapBytes`, RESD_MMAP_SIZE, off by default): a read of
 * one record through the mapping costs ~9.5 µs instead of ~18 µs in process, though through HTTP
 * the gain was lost in noise and mapped pages count as resident. Scans, counts and exports run on
 * connections without a mapping, so a long scan never maps the whole file.
 */
export function configure(db: Database, busyMs: number, cacheMiB: number, mmapBytes = 0) {
  db.exec(`PRAGMA busy_timeout=${busyMs}; PRAGMA cache_size=-${cacheMiB * 1024}; PRAGMA mmap_size=${mmapBytes}; PRAGMA temp_store=MEMORY;`);
}

export class SqliteReadRoute {
  private pool: ReadPool | null = null;

  /** `workers`: read workers of the pool (0: every read runs in place, as for ":memory:"). */
  constructor(
    private readonly path: string,
    private readonly writer: Database,
    private readonly reader: Database,
    readonly workers: number,
    private readonly queryBudgetMs: number,
    private readonly maxQueriesPerCaller: number,
  ) {}

  /**
   * The connection for a short read on the event loop: the writer while no transaction is open on
   * it (it then holds nothing uncommitted), else the reader. Every commit of another connection
   * empties a connection's page cache, so the reader re-reads from the file after each of the
   * writer's commits (a page of 20 cost ~210 µs instead of ~50 µs under writes); the writer's own
   * commits leave its cache warm.
   */
  warm(): Database {
    return this.writer.inTransaction ? this.reader : this.writer;
  }

  /** The worker pool, started on first use (a CLI command that never lists starts none). */
  readPool(): ReadPool | null {
    if (!this.workers) return null;
    return (this.pool ??= new ReadPool(this.path, this.workers, this.queryBudgetMs, this.maxQueriesPerCaller));
  }

  /** A read in a worker (in place when `small`); `ask` names whose it is, for the workers' fair share. */
  async readAll<T>(sql: string, args: SqlValue[], small = false, ask: Asker = {}): Promise<T[]> {
    const pool = small ? null : this.readPool();
    return pool ? pool.all<T>(sql, args, ask) : (this.warm().query(sql).all(...(args as never[])) as T[]);
  }

  async readGet<T>(sql: string, args: SqlValue[], small = false, ask: Asker = {}): Promise<T | null> {
    const pool = small ? null : this.readPool();
    return pool ? pool.get<T>(sql, args, ask) : ((this.warm().query(sql).get(...(args as never[])) as T | null) ?? null);
  }

  /** Rows of one snapshot, read on a worker (or a connection of their own), a batch at a time. */
  async *rows<T>(sql: string, args: SqlValue[], caller?: string): AsyncIterable<T> {
    const pool = this.readPool();
    if (pool) {
      yield* pool.stream<T>(sql, args, caller);
      return;
    }
    const db = new Database(this.path, { readonly: true, strict: true });
    configure(db, 5000, 4);
    try {
      for (const row of db.query(sql).iterate(...(args as never[]))) yield row as T;
    } finally {
      db.close();
    }
  }

  /** Stops the workers, if any started. */
  close(): void {
    this.pool?.close();
  }
}
