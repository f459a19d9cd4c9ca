/**
 * The record reads that checking a write needs (write rules, import matching), on one connection.
 * The store answers them on its reader; an import's reading worker opens its own read-only
 * connection to the same file (WAL readers run beside the writer) and asks the same SQL there.
 */
import { Database, type Statement } from "bun:sqlite";
import { sqliteDialect } from "./dialect";
import type { Dialect, RecordReads, SqlValue, StoredRecord } from "./types";

export const COLS = "uuid, data, _created, _modified, _created_by, _modified_by";

export class SqliteReads implements RecordReads {
  /** The hottest statement of all (every read of one record): prepared once per resource. */
  private readonly getStmts = new Map<string, Statement>();

  constructor(private readonly db: Database, private readonly d: Dialect = sqliteDialect) {}

  async get(resource: string, uuid: string): Promise<StoredRecord | null> {
    return this.getNow(resource, uuid);
  }

  getNow(resource: string, uuid: string): StoredRecord | null {
    let stmt = this.getStmts.get(resource);
    if (!stmt) {
      stmt = this.db.prepare(`SELECT ${COLS} FROM ${this.d.table(resource)} WHERE uuid = ?`);
      this.getStmts.set(resource, stmt);
    }
    return stmt.get(uuid) as StoredRecord | null;
  }

  async findBy(resource: string, field: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    const col = field === "uuid" ? "uuid" : this.d.field(field);
    return this.db
      .query(`SELECT ${COLS} FROM ${this.d.table(resource)} WHERE ${col} = ? AND uuid != ? LIMIT 1`)
      .get(value as never, (except ?? "") as never) as StoredRecord | null;
  }

  async findByKey(resource: string, field: string, key: string, value: SqlValue, except?: string): Promise<StoredRecord | null> {
    return this.db
      .query(`SELECT ${COLS} FROM ${this.d.table(resource)} WHERE ${this.d.fieldKey(field, key)} = ? AND uuid != ? LIMIT 1`)
      .get(value as never, (except ?? "") as never) as StoredRecord | null;
  }

  async *all(resource: string): AsyncIterable<StoredRecord> {
    yield* this.db.query(`SELECT ${COLS} FROM ${this.d.table(resource)} ORDER BY id`).iterate() as IterableIterator<StoredRecord>;
  }
}

/** A read-only connection of its own to a site's database file, for a worker thread. */
export function openSqliteReads(path: string): SqliteReads & { close(): void } {
  const db = new Database(path, { readonly: true, strict: true });
  db.exec("PRAGMA busy_timeout=5000; PRAGMA cache_size=-16384; PRAGMA mmap_size=0; PRAGMA temp_store=MEMORY;");
  return Object.assign(new SqliteReads(db), { close: () => db.close() });
}
