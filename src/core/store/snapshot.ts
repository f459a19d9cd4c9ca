/**
 * Whole-database copies for backup and restore. `VACUUM INTO` runs inside one read transaction of
 * a connection of its own: the copy is exactly the database as of its start, and in WAL mode the
 * server's writer keeps committing meanwhile. (bun:sqlite has no online-backup API; `serialize()`
 * would hold the whole database in memory.)
 */
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { AppError } from "../errors";

/** Writes a consistent, compacted copy of the database at `dbPath` to `outPath` (which must not exist). */
export function snapshotDatabase(dbPath: string, outPath: string): void {
  if (!existsSync(dbPath)) throw new AppError(404, "RESOURCE_NOT_FOUND", `no database at ${dbPath}`);
  const db = new Database(dbPath, { readonly: true, strict: true });
  try {
    db.exec("PRAGMA busy_timeout=10000");
    db.query("VACUUM INTO ?").run(outPath);
  } finally {
    db.close();
  }
}

/** "ok", or what SQLite found wrong with the file (restore refuses such a database). */
export function checkDatabase(path: string): string {
  try {
    const db = new Database(path, { readonly: true, strict: true });
    try {
      const rows = db.query("PRAGMA quick_check").all() as { quick_check: string }[];
      return rows.map((r) => r.quick_check).join("; ");
    } finally {
      db.close();
    }
  } catch (e) {
    return (e as Error).message;
  }
}
