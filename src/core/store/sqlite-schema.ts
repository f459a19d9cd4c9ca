/** Keeps tables and indexes in step with the definitions; records each resource's schema version. */
import type { Database } from "bun:sqlite";
import type { ResourceDef } from "../definitions/types";
import type { Dialect, SchemaChange } from "./types";
import { quoteIdent } from "./dialect";

/** Internal tables, in order. Append only: index i is applied once, and recorded in user_version. */
export const MIGRATIONS: string[] = [
  `CREATE TABLE _resd_schema (resource TEXT PRIMARY KEY, version INTEGER NOT NULL, hash TEXT NOT NULL, updated INTEGER NOT NULL);
   CREATE TABLE _resd_changes (resource TEXT PRIMARY KEY, changed_ms INTEGER NOT NULL);
   CREATE TABLE _resd_history (id INTEGER PRIMARY KEY, resource TEXT NOT NULL, uuid TEXT NOT NULL, action TEXT NOT NULL,
     at INTEGER NOT NULL, user TEXT, data TEXT NOT NULL, _created INTEGER NOT NULL);
   CREATE INDEX _resd_history_record ON _resd_history (resource, uuid, id);
   CREATE INDEX _resd_history_deletes ON _resd_history (action, at);`,
  // Durable job queue (src/core/jobs): rows are written in the same transaction as the record.
  `CREATE TABLE _resd_jobs (id INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL, action TEXT NOT NULL,
     uuid TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
     run_at INTEGER NOT NULL, lease_until INTEGER, lease TEXT, last_error TEXT, created INTEGER NOT NULL, updated INTEGER NOT NULL);
   CREATE INDEX _resd_jobs_due ON _resd_jobs (state, run_at);
   CREATE INDEX _resd_jobs_lease ON _resd_jobs (state, lease_until);`,
  // Sessions and failed-login counters (src/core/access, src/core/store/access-sqlite.ts).
  `CREATE TABLE _resd_sessions (id TEXT PRIMARY KEY, user TEXT NOT NULL, pfp TEXT NOT NULL, created INTEGER NOT NULL,
     seen INTEGER NOT NULL, expires INTEGER NOT NULL);
   CREATE INDEX _resd_sessions_expires ON _resd_sessions (expires);
   CREATE TABLE _resd_login_failures (account TEXT PRIMARY KEY, failures INTEGER NOT NULL, last_ms INTEGER NOT NULL,
     locked_until INTEGER NOT NULL);`,
];

export function migrateInternal(db: Database): void {
  const current = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  for (let i = current; i < MIGRATIONS.length; i++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[i]);
      db.exec(`PRAGMA user_version = ${i + 1}`);
    })();
  }
}

const prefix = (resource: string) => `ix:${resource}:`;

/** The indexes a definition wants: name → CREATE statement. */
function wantedIndexes(def: ResourceDef, d: Dialect): Map<string, string> {
  const out = new Map<string, string>();
  const table = d.table(def.name);
  for (const cols of def.indexes) {
    const name = `${prefix(def.name)}${cols.join(",")}`;
    out.set(name, `CREATE INDEX ${quoteIdent(name)} ON ${table} (${cols.map((c) => d.field(c)).join(", ")})`);
  }
  for (const col of def.unique) {
    // A translated field is unique per language: one index per language value, not the whole object.
    const languages = def.fields[col]?.i18n ? (def.raw.languages ?? []) : [];
    if (!languages.length) {
      const name = `${prefix(def.name)}unique:${col}`;
      out.set(name, `CREATE UNIQUE INDEX ${quoteIdent(name)} ON ${table} (${d.field(col)})`);
    }
    for (const lang of languages) {
      const name = `${prefix(def.name)}unique:${col}.${lang}`;
      out.set(name, `CREATE UNIQUE INDEX ${quoteIdent(name)} ON ${table} (${d.fieldKey(col, lang)})`);
    }
  }
  return out;
}

export function syncResource(db: Database, def: ResourceDef, d: Dialect): SchemaChange[] {
  const changes: SchemaChange[] = [];
  const table = d.table(def.name);
  const exists = db.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?").get(`r:${def.name}`);
  if (!exists) {
    db.exec(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, data TEXT NOT NULL,
      _created INTEGER NOT NULL, _modified INTEGER NOT NULL, _created_by TEXT, _modified_by TEXT)`);
    db.exec(`CREATE INDEX ${quoteIdent(`${prefix(def.name)}_created`)} ON ${table} (_created)`);
    db.exec(`CREATE INDEX ${quoteIdent(`${prefix(def.name)}_modified`)} ON ${table} (_modified)`);
    changes.push({ resource: def.name, action: "created", detail: `table ${table}` });
  }
  const have = new Map(
    (db.query("SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name=? AND name LIKE ?").all(`r:${def.name}`, `${prefix(def.name)}%`) as { name: string; sql: string }[])
      .filter((r) => !r.name.endsWith(":_created") && !r.name.endsWith(":_modified"))
      .map((r) => [r.name, r.sql]),
  );
  const want = wantedIndexes(def, d);
  for (const [name, sql] of have) {
    if (want.get(name) !== sql) {
      db.exec(`DROP INDEX ${quoteIdent(name)}`);
      changes.push({ resource: def.name, action: "index-dropped", detail: name });
    }
  }
  for (const [name, sql] of want) {
    if (have.get(name) === sql) continue;
    try {
      db.exec(sql);
    } catch (e) {
      throw new Error(`${def.file ?? def.name}: cannot create index ${name}: ${(e as Error).message} (duplicate values in a unique field?)`);
    }
    changes.push({ resource: def.name, action: "index-added", detail: name });
  }
  const hash = Bun.hash(JSON.stringify(def.raw)).toString(16);
  const row = db.query("SELECT version, hash FROM _resd_schema WHERE resource=?").get(def.name) as { version: number; hash: string } | null;
  if (!row || row.hash !== hash) {
    db.query("INSERT INTO _resd_schema (resource, version, hash, updated) VALUES (?, ?, ?, ?) ON CONFLICT(resource) DO UPDATE SET version=excluded.version, hash=excluded.hash, updated=excluded.updated")
      .run(def.name, (row?.version ?? 0) + 1, hash, Date.now());
    if (row) changes.push({ resource: def.name, action: "updated", detail: `schema version ${row.version + 1}` });
  }
  return changes;
}
