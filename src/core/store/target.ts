/**
 * What a database that a site is to be copied into (`resd migrate --to`) already holds, looked at
 * without changing it: nothing may be created there before it is known to be empty.
 */
import { SQL } from "bun";
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";

/** A resd that opened the database once left the built-in admin role there: that alone counts as empty. */
const BUILT_IN_ONLY = (table: string, uuids: string[]) => table === "r:roles" && uuids.length === 1 && uuids[0] === "admin";

/** Tables of resd's own making (records, search index, internal); anything else is someone else's. */
const OURS = /^(r:|s:|_resd_|sqlite_)/;

type Probe = { tables: string[]; rows(table: string): Promise<string[]> };

/** Why `probe`'s database is not empty, or null. `rows` gives up to two uuids (or ids) of a table. */
async function whyNotEmpty(probe: Probe): Promise<string | null> {
  const foreign = probe.tables.filter((t) => !OURS.test(t));
  if (foreign.length) return `it holds tables that are not resd's (${foreign.slice(0, 3).join(", ")}${foreign.length > 3 ? ", …" : ""})`;
  for (const t of probe.tables.filter((t) => t.startsWith("r:")).sort()) {
    const rows = await probe.rows(t);
    if (rows.length && !BUILT_IN_ONLY(t, rows)) return `it holds ${t.slice(2)} records`;
  }
  for (const t of ["_resd_history", "_resd_jobs"]) {
    if (probe.tables.includes(t) && (await probe.rows(t)).length) return `it holds ${t === "_resd_history" ? "record history" : "jobs"}`;
  }
  return null;
}

export async function postgresTargetContents(url: string): Promise<string | null> {
  const sql = new SQL(url, { max: 1, connectionTimeout: 10 });
  try {
    const tables = ((await sql.unsafe(`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname = current_schema()`)) as { name: string }[]).map((r) => r.name);
    const quote = (t: string) => `"${t.replace(/"/g, '""')}"`;
    return await whyNotEmpty({
      tables,
      rows: async (t) => ((await sql.unsafe(`SELECT ${t.startsWith("r:") ? "uuid" : "id::text"} AS k FROM ${quote(t)} LIMIT 2`)) as { k: string }[]).map((r) => r.k),
    });
  } finally {
    await sql.close();
  }
}

export async function sqliteTargetContents(path: string): Promise<string | null> {
  if (!existsSync(path)) return null;
  const db = new Database(path, { readonly: true });
  try {
    const tables = (db.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").all() as { name: string }[]).map((r) => r.name);
    const quote = (t: string) => `"${t.replace(/"/g, '""')}"`;
    return await whyNotEmpty({
      tables,
      rows: async (t) => (db.query(`SELECT ${t.startsWith("r:") ? "uuid" : "CAST(id AS TEXT)"} AS k FROM ${quote(t)} LIMIT 2`).all() as { k: string }[]).map((r) => r.k),
    });
  } finally {
    db.close();
  }
}
