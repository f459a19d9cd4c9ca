/**
 * The write side of one SQLite transaction (the store's write queue opens it, sqlite-commit.ts):
 * the StoreTx each job of a batch receives, with its prepared statements, and what the open
 * transaction notes as it writes (ids written, records changed, count keys as they were before)
 * so that the commit can bring the search index, the counts and the caches up to date.
 */
import type { Database, Statement } from "bun:sqlite";
import { AppError } from "../errors";
import { countCaptureSql } from "./sqlite-schema";
import { insertJob } from "./sqlite-jobs";
import { COLS } from "./sqlite-reads";
import type { ResourceWrite } from "./memo";
import type { ChangedRecords } from "./record-cache";
import type { Dialect, HistoryEntry, StoreTx, StoredRecord } from "./types";

/** Maps constraint failures to domain errors; everything else stays an internal error. */
function mapWriteError(e: unknown, resource: string, uuid: string): never {
  const msg = (e as Error).message ?? "";
  if (/UNIQUE constraint failed: .*\.uuid/.test(msg)) throw new AppError(409, "RESOURCE_EXISTS", `${resource}/${uuid} already exists`);
  const m = /UNIQUE constraint failed: index '[^']*unique:([^']+)'/.exec(msg);
  if (m) throw new AppError(422, "INVALID_DATA", "one or more fields are invalid", { errors: { [m[1]]: "this value is already used by another record" } });
  throw e;
}

/** Rows of a statement of its own, finalized however the caller stops reading. */
async function* rowsOf<T>(db: Database, sql: string): AsyncIterable<T> {
  const stmt = db.prepare(sql);
  try {
    yield* stmt.iterate() as IterableIterator<T>;
  } finally {
    stmt.finalize();
  }
}

/**
 * One per store, on its writer; the write queue reads the notes (`written`, `idsBefore`, `before`,
 * `changed`) at commit and forgets them before and after each batch.
 */
export class SqliteTxWrites {
  constructor(private readonly writer: Database, private readonly dialect: Dialect) {}

  private historyStmt: Statement | null = null;
  private creationStmt: Statement | null = null;
  /**
   * Ids of records that existed before the open transaction and were written in it, per resource
   * (null: all of them), for the search index and counts. Rows above `idsBefore` are all new in the
   * transaction and taken as a range: an import of a million rows notes no id.
   */
  readonly written = new Map<string, Set<number> | null>();
  private noteWritten(resource: string, id: number | bigint | undefined): void {
    if (id === undefined) return;
    let ids = this.written.get(resource);
    if (ids === null) return;
    if (!ids) this.written.set(resource, (ids = new Set()));
    if (Number(id) <= this.idsBefore.get(resource)!) ids.add(Number(id));
  }

  /** Per resource written in the open transaction: only rows added (above which id), or more. */
  writesOf(touched: Set<string>): Map<string, ResourceWrite> {
    const out = new Map<string, ResourceWrite>();
    for (const r of touched) {
      const ids = this.written.get(r);
      const above = this.idsBefore.get(r);
      out.set(r, ids && ids.size === 0 && above !== undefined ? { newAbove: above } : "rewritten");
    }
    return out;
  }

  /** Records the open transaction updated or deleted, per resource (null: all), for the record cache. */
  changed: ChangedRecords = new Map();
  private noteChanged(resource: string, uuid: string): void {
    const uuids = this.changed.get(resource);
    if (uuids === null) return;
    if (uuids) uuids.add(uuid);
    else this.changed.set(resource, new Set([uuid]));
  }

  /** What the open transaction noted for its derived data (search index, counts): nothing yet. */
  forgetWrites(): void {
    this.changed = new Map();
    this.written.clear();
    this.idsBefore.clear();
    this.before.clear();
  }

  /** Per resource written in the open transaction, its largest row id before it (rows above were never indexed). */
  readonly idsBefore = new Map<string, number>();
  private markStart(resource: string): void {
    if (this.idsBefore.has(resource)) return;
    const row = this.writer.query(`SELECT max(id) AS m FROM ${this.dialect.table(resource)}`).get() as { m: number | null };
    this.idsBefore.set(resource, row.m ?? 0);
  }
  /** Count keys of records as they were before the open transaction first changed them (see flushCounts). */
  readonly before = new Map<string, Map<number, string>>();
  /** Per resource, the statement reading a row's count keys (null: no counts kept). Dropped with the schema. */
  private readonly captureStmts = new Map<string, Statement | null>();
  schemaChanged(): void {
    this.captureStmts.clear();
  }
  private captureBefore(resource: string, uuid: string): void {
    const ids = this.written.get(resource);
    if (ids === null) return; // the whole resource is recounted
    let stmt = this.captureStmts.get(resource);
    if (stmt === undefined) {
      const sql = countCaptureSql(this.writer, resource, this.dialect);
      this.captureStmts.set(resource, (stmt = sql ? this.writer.prepare(sql) : null));
    }
    if (!stmt) return;
    const row = stmt.get(uuid) as { id: number; k: string } | null;
    // Created in this transaction (never counted), or written earlier in it (what it was before is known already).
    if (!row || row.id > this.idsBefore.get(resource)! || ids?.has(row.id)) return;
    let seen = this.before.get(resource);
    if (!seen) this.before.set(resource, (seen = new Map()));
    if (!seen.has(row.id)) seen.set(row.id, row.k);
    // Noted as written now, not after the write: a write a unique index refuses rolls back to its
    // savepoint, and the commit must then count the row's keys as they are against the old ones
    // (no change), not only take the old ones away.
    this.noteWritten(resource, row.id);
  }

  private readonly writeStmts = new Map<string, Record<"get" | "insert" | "update" | "delete", Statement>>();
  private writeStmtsFor(resource: string) {
    let s = this.writeStmts.get(resource);
    if (!s) {
      const t = this.dialect.table(resource);
      s = {
        get: this.writer.prepare(`SELECT ${COLS} FROM ${t} WHERE uuid = ?`),
        insert: this.writer.prepare(`INSERT INTO ${t} (${COLS}) VALUES (?, ?, ?, ?, ?, ?)`),
        update: this.writer.prepare(`UPDATE ${t} SET data = ?, _modified = ?, _modified_by = ? WHERE uuid = ? RETURNING id`),
        delete: this.writer.prepare(`DELETE FROM ${t} WHERE uuid = ? RETURNING id`),
      };
      this.writeStmts.set(resource, s);
    }
    return s;
  }

  /** The transaction object one job receives; `touched` collects the resources it wrote, `after` what runs after the commit. */
  txFor(touched: Set<string>, after: (() => void)[]): StoreTx {
    const w = this.writer;
    const t = (r: string) => this.dialect.table(r);
    const tx: StoreTx = {
      get: async (resource, uuid) => this.writeStmtsFor(resource).get.get(uuid) as StoredRecord | null,
      insert: async (resource, rec) => {
        this.markStart(resource);
        try {
          const r = this.writeStmtsFor(resource).insert.run(rec.uuid, rec.data, rec._created, rec._modified, rec._created_by, rec._modified_by);
          this.noteWritten(resource, r.lastInsertRowid);
        } catch (e) {
          mapWriteError(e, resource, rec.uuid);
        }
        touched.add(resource);
      },
      update: async (resource, rec) => {
        this.markStart(resource);
        this.captureBefore(resource, rec.uuid);
        this.noteChanged(resource, rec.uuid);
        try {
          const r = this.writeStmtsFor(resource).update.get(rec.data, rec._modified, rec._modified_by, rec.uuid) as { id: number } | null;
          this.noteWritten(resource, r?.id);
        } catch (e) {
          mapWriteError(e, resource, rec.uuid);
        }
        touched.add(resource);
      },
      delete: async (resource, uuid) => {
        this.markStart(resource);
        this.captureBefore(resource, uuid);
        const r = this.writeStmtsFor(resource).delete.get(uuid) as { id: number } | null;
        if (!r) return false;
        this.noteChanged(resource, uuid);
        this.noteWritten(resource, r.id);
        touched.add(resource);
        return true;
      },
      deleteAll: async (resource, history) => {
        if (history) {
          // Records never changed get their creation entry first, as any single delete would.
          w.query(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created)
              SELECT ?1, r.uuid, 'create', r._created * 1000, r._created_by, r.data, r._created FROM ${t(resource)} r
              WHERE NOT EXISTS (SELECT 1 FROM _resd_history h WHERE h.resource = ?1 AND h.uuid = r.uuid)`).run(resource);
          w.query(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created) SELECT ?, uuid, 'delete', ?, ?, data, _created FROM ${t(resource)}`)
            .run(resource, history.at, history.user);
        }
        const n = w.query(`DELETE FROM ${t(resource)}`).run().changes;
        this.written.set(resource, null);
        this.changed.set(resource, null);
        touched.add(resource);
        return n;
      },
      addHistory: async (e) => {
        (this.historyStmt ??= w.prepare("INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"))
          .run(e.resource, e.uuid, e.action, e.at, e.user, e.data, e._created, e.via ?? null);
      },
      insertMany: async (resource, recs) => {
        for (const rec of recs) await tx.insert(resource, rec);
      },
      readAll: (resource) => rowsOf<StoredRecord>(w, `SELECT ${COLS} FROM ${t(resource)} ORDER BY id`),
      readHistory: () => rowsOf<HistoryEntry>(w, "SELECT * FROM _resd_history ORDER BY id"),
      addCreationIfMissing: async (resource, row) => {
        (this.creationStmt ??= w.prepare(`INSERT INTO _resd_history (resource, uuid, action, at, user, data, _created)
            SELECT ?1, ?2, 'create', ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM _resd_history WHERE resource = ?1 AND uuid = ?2)`))
          .run(resource, row.uuid, row._created * 1000, row._created_by, row.data, row._created);
      },
      lastChange: async (resource) => (w.query("SELECT changed_ms FROM _resd_changes WHERE resource = ?").get(resource) as { changed_ms: number } | null)?.changed_ms ?? 0,
      afterCommit: (fn) => after.push(fn),
      enqueueJob: async (job) => insertJob(w, job),
    };
    return tx;
  }
}
