/**
 * The end of every write transaction of a resd process, on the event loop's connection and on the
 * write thread's alike (see WriteThread): the derived data of the rows it wrote (search index,
 * counts), each written resource's change time, and the commit's number.
 *
 * The number is what lets a server keep its cached answers while its write thread commits: that
 * thread's commits move the event loop connection's data_version exactly as another process's do,
 * and `_resd_commits` says whose the last commit was and how many came before it.
 */
import type { Database } from "bun:sqlite";
import type { Dialect } from "./types";
import { flushCounts, flushSearchIndex } from "./sqlite-schema";

/**
 * What a transaction wrote, for its derived data: per resource, the ids of rows that existed before
 * it and were changed (null: all of them), its largest row id before it (rows above are all new),
 * and the count keys of changed rows as they were before.
 */
export type TxWrites = {
  written: Map<string, Set<number> | null>;
  idsBefore: Map<string, number>;
  before: Map<string, Map<number, string>>;
};

/** The last statements of a write transaction before COMMIT; returns the commit's number. */
export function finishWrites(db: Database, d: Dialect, w: TxWrites, touched: Iterable<string>, writer: string): number {
  flushSearchIndex(db, d, w.written, w.idsBefore);
  flushCounts(db, d, w.written, w.idsBefore, w.before);
  const now = Date.now();
  const mark = db.query("INSERT INTO _resd_changes (resource, changed_ms) VALUES (?, ?) ON CONFLICT(resource) DO UPDATE SET changed_ms = max(changed_ms + 1, excluded.changed_ms)");
  for (const r of touched) mark.run(r, now);
  return (db.query("UPDATE _resd_commits SET n = n + 1, writer = ? WHERE id = 1 RETURNING n").get(writer) as { n: number }).n;
}

/** The number and writer of the last commit of any resd process (see finishWrites). */
export function lastCommit(db: Database): { n: number; writer: string } {
  return db.query("SELECT n, writer FROM _resd_commits WHERE id = 1").get() as { n: number; writer: string };
}
