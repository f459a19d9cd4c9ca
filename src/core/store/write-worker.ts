/**
 * The write thread (see WriteThread): commits record inserts on a connection of its own. SQLite's
 * share of a create (the row and its indexes, the search index, the counts, writing the WAL) then
 * runs beside the event loop, on the other core, instead of on it.
 *
 * `open` comes as a message; then `insert`s and `close` come through a ring in shared memory.
 * Inserts that arrive while a batch commits commit together in the next one (group commit); each
 * commit answers once in the reply ring, naming its messages.
 */
import { Database, type Statement } from "bun:sqlite";
import { sqliteDialect } from "./dialect";
import { finishWrites, lastCommit } from "./sqlite-commit";
import { COLS } from "./sqlite-reads";
import { ReplyRing } from "./reply-ring";
import type { Committed, InsertReply, InsertRow, ThreadMessage, WriteThreadRequest } from "./write-thread";

declare const self: Worker;

type InsertMessage = Extract<WriteThreadRequest, { type: "insert" }> & { id: number };

/** Rows per commit at most. */
const BATCH = 512;

let db: Database | null = null;
let writer = "";
/** The number of the store's last commit this thread knows of (its own, or the one the store names). */
let lastN = -1;
const inserts = new Map<string, Statement>();
/** Insert messages not yet committed, in arrival order. */
const waiting: InsertMessage[] = [];
/** Where commits are answered (see ReplyRing). */
let replies: ReplyRing | null = null;

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));
const send = (m: ThreadMessage) => postMessage(m);

function insertStmt(conn: Database, resource: string): Statement {
  let s = inserts.get(resource);
  if (!s) inserts.set(resource, (s = conn.prepare(`INSERT INTO ${sqliteDialect.table(resource)} (${COLS}) VALUES (?, ?, ?, ?, ?, ?)`)));
  return s;
}

/** One BEGIN…COMMIT for the rows; a refused row (a taken uuid or unique value) rolls back alone. */
function insertBatch(conn: Database, rows: InsertRow[]): InsertReply {
  try {
    conn.exec("BEGIN IMMEDIATE");
  } catch (e) {
    return { ok: false, busy: /locked|busy/i.test(messageOf(e)), error: messageOf(e) };
  }
  const savepoints = rows.length > 1;
  const idsBefore = new Map<string, number>();
  const upTo = new Map<string, number>();
  const refused: (string | null)[] = [];
  try {
    for (const { resource, values } of rows) {
      if (!idsBefore.has(resource)) {
        const max = conn.query(`SELECT max(id) AS m FROM ${sqliteDialect.table(resource)}`).get() as { m: number | null };
        idsBefore.set(resource, max.m ?? 0);
      }
      if (savepoints) conn.exec("SAVEPOINT job");
      try {
        const r = insertStmt(conn, resource).run(...values);
        if (savepoints) conn.exec("RELEASE job");
        upTo.set(resource, Number(r.lastInsertRowid));
        refused.push(null);
      } catch (e) {
        if (savepoints) conn.exec("ROLLBACK TO job; RELEASE job");
        refused.push(messageOf(e));
      }
    }
    if (!upTo.size) {
      conn.exec("ROLLBACK");
      return { ok: true, refused, written: [], n: null, foreign: false };
    }
    // Under the write lock: a last commit other than the one we know of is another process's.
    const foreign = lastCommit(conn).n !== lastN;
    // New rows are all above idsBefore: no older row was changed.
    const written = new Map<string, Set<number> | null>([...upTo.keys()].map((r) => [r, new Set<number>()]));
    for (const r of idsBefore.keys()) if (!upTo.has(r)) idsBefore.delete(r);
    const n = finishWrites(conn, sqliteDialect, { written, idsBefore, before: new Map() }, upTo.keys(), writer);
    conn.exec("COMMIT");
    lastN = n;
    return { ok: true, refused, written: [...upTo].map(([r, last]) => [r, idsBefore.get(r)!, last]), n, foreign };
  } catch (e) {
    // The commit itself failed (I/O, disk full): nothing of the batch stays.
    if (conn.inTransaction) conn.exec("ROLLBACK");
    return { ok: false, busy: false, error: messageOf(e) };
  }
}

/** Commits what waits, a batch at a time, each answered as soon as it is done. */
function commitWaiting(): void {
  while (waiting.length) {
    const batch: InsertMessage[] = [];
    let rows = 0;
    while (waiting.length && (rows === 0 || rows + waiting[0]!.rows.length <= BATCH)) {
      const m = waiting.shift()!;
      batch.push(m);
      rows += m.rows.length;
      lastN = Math.max(lastN, m.after);
    }
    const reply = insertBatch(db!, batch.flatMap((m) => m.rows));
    replies!.write({ ids: batch.map((m) => m.id), reply } satisfies Committed);
    send({ type: "wake" });
  }
}

/**
 * The thread's life after `open`: it sleeps on the request ring (not on its event loop, which would
 * add a turn before each commit), commits everything that came meanwhile in one go, and so on
 * until `close`.
 */
function serve(requests: ReplyRing): void {
  for (;;) {
    requests.waitForMessage(60_000);
    for (const m of requests.read() as (WriteThreadRequest & { id: number })[]) {
      if (m.type === "close") {
        commitWaiting();
        for (const s of inserts.values()) s.finalize();
        inserts.clear();
        db?.close();
        db = null;
        send({ type: "done", id: m.id, error: null });
        return;
      }
      if (m.type === "insert") waiting.push(m);
    }
    commitWaiting();
  }
}

self.onmessage = (event: MessageEvent<WriteThreadRequest & { id: number }>) => {
  const m = event.data;
  if (m.type !== "open") return;
  try {
    writer = m.writer;
    replies = new ReplyRing(m.replies);
    db = new Database(m.path, { strict: true });
    // As the event loop's writer, except that waiting for another process's write lock blocks
    // only this thread, so SQLite may wait the whole 15 s itself.
    db.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA busy_timeout=15000;
      PRAGMA cache_size=-${m.cacheMiB * 1024}; PRAGMA temp_store=MEMORY; PRAGMA journal_size_limit=-1; PRAGMA wal_autocheckpoint=${m.autocheckpointPages};`);
  } catch (e) {
    send({ type: "done", id: m.id, error: messageOf(e) });
    return;
  }
  send({ type: "done", id: m.id, error: null });
  serve(new ReplyRing(m.requests));
};
