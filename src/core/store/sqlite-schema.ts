/** Keeps tables and indexes in step with the definitions; records each resource's schema version. */
import type { Database } from "bun:sqlite";
import type { ResourceDef } from "../definitions/types";
import type { Dialect, SchemaChange } from "./types";
import { quoteIdent } from "./dialect";
import { countedFields, isCompound, searchFields } from "../definitions/derived";

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
  // Structures derived from records (search index, maintained counts) and what each was built for.
  `CREATE TABLE _resd_derived (resource TEXT NOT NULL, kind TEXT NOT NULL, spec TEXT NOT NULL, PRIMARY KEY (resource, kind));
   CREATE TABLE _resd_counts (resource TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (resource, key)) WITHOUT ROWID;`,
  // A change an AI agent made for its asker names the agent (core/agents): "through agent <id>".
  `ALTER TABLE _resd_history ADD COLUMN via TEXT;`,
];

export function migrateInternal(db: Database): void {
  const version = () => (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (version() >= MIGRATIONS.length) return;
  // Two processes may open a new database at once: the version is read again under the write lock,
  // so the second finds the first's work done instead of creating its tables twice.
  db.transaction(() => {
    for (let i = version(); i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
  }).immediate();
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
  // The row ids alone, in order: a deep page in insertion order skips its offset over this small
  // index instead of over the records (offset 500,000 of 1M: 117 ms → 5-13 ms).
  const idIndex = `${prefix(def.name)}_id`;
  if (!db.query("SELECT 1 FROM sqlite_master WHERE type='index' AND name=?").get(idIndex)) {
    db.exec(`CREATE INDEX ${quoteIdent(idIndex)} ON ${table} (id)`);
    if (exists) changes.push({ resource: def.name, action: "index-added", detail: idIndex });
  }
  const have = new Map(
    (db.query("SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name=? AND name LIKE ?").all(`r:${def.name}`, `${prefix(def.name)}%`) as { name: string; sql: string }[])
      .filter((r) => !r.name.endsWith(":_created") && !r.name.endsWith(":_modified") && !r.name.endsWith(":_id"))
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
  changes.push(...syncSearch(db, def, d), ...syncCounts(db, def, d));
  const hash = Bun.hash(JSON.stringify(def.raw)).toString(16);
  const row = db.query("SELECT version, hash FROM _resd_schema WHERE resource=?").get(def.name) as { version: number; hash: string } | null;
  if (!row || row.hash !== hash) {
    db.query("INSERT INTO _resd_schema (resource, version, hash, updated) VALUES (?, ?, ?, ?) ON CONFLICT(resource) DO UPDATE SET version=excluded.version, hash=excluded.hash, updated=excluded.updated")
      .run(def.name, (row?.version ?? 0) + 1, hash, Date.now());
    if (row) changes.push({ resource: def.name, action: "updated", detail: `schema version ${row.version + 1}` });
  }
  return changes;
}

const jsonPath = (field: string) => `'$.${quoteIdent(field).replace(/'/g, "''")}'`;

/** The text `search` matches in one row (`row` is NEW or OLD in a trigger, or the table). */
function searchText(def: ResourceDef, row: string): string {
  const parts = searchFields(def).map((n) =>
    isCompound(def.fields[n])
      ? `(SELECT group_concat(value, char(31)) FROM json_each(${row}.data, ${jsonPath(n)}))`
      : `json_extract(${row}.data, ${jsonPath(n)})`);
  // The unit separator keeps a term from matching across two values.
  return parts.length ? parts.map((p) => `coalesce(${p}, '')`).join(" || char(31) || ") : "''";
}

function derivedSpec(db: Database, resource: string, kind: string): string | null {
  return (db.query("SELECT spec FROM _resd_derived WHERE resource = ? AND kind = ?").get(resource, kind) as { spec: string } | null)?.spec ?? null;
}

function setSpec(db: Database, resource: string, kind: string, spec: string): void {
  db.query("INSERT INTO _resd_derived (resource, kind, spec) VALUES (?, ?, ?) ON CONFLICT(resource, kind) DO UPDATE SET spec = excluded.spec").run(resource, kind, spec);
}

export const searchTable = (resource: string) => quoteIdent(`s:${resource}`);
/**
 * The index's own copy of each record's search text (FTS5's content table, column c0): a tenth of
 * the records' size, so scanning it is the cheapest way to count a term most records hold.
 */
export const searchTextTable = (resource: string) => quoteIdent(`s:${resource}_content`);
const trigger = (resource: string, what: string) => quoteIdent(`t:${resource}:${what}`);

/**
 * Segments per level before FTS5 merges them (its default is 4). Every commit writes a segment; at
 * 4, a stream of small commits after a merged index spent 300-700 us per commit merging for its first
 * thousand or so commits (30 us once past them); at 8, 30 us throughout, for a third less merge
 * work in all. Reads of the index rarely feel the extra segments: searches keep their trigram lists.
 */
const FTS_AUTOMERGE = 8;

/**
 * The search index: an FTS5 trigram table holding each record's search text. The store notes the
 * records each transaction writes and flushSearchIndex brings them into the index in one statement
 * just before COMMIT — so the index is part of the same transaction (never stale, whichever resd
 * process writes). Not a trigger per row: FTS5 flushes its buffer at every statement, which made an
 * import 4x slower. Rebuilt when the searched fields change.
 */

function syncSearch(db: Database, def: ResourceDef, d: Dialect): SchemaChange[] {
  const table = d.table(def.name);
  const fts = searchTable(def.name);
  const text = searchText(def, "t");
  const spec = JSON.stringify({ v: 4, text });
  const had = derivedSpec(db, def.name, "search");
  if (had === spec) return [];
  // Version 3 only added the merge of the index's segments (below), version 4 the merge setting: an
  // older index of the same text is merged or set, not rebuilt (about 1 s instead of 9 s on a
  // million records).
  const old = had ? (JSON.parse(had) as { v: number; text: string }) : null;
  if (old?.text === text && (old.v === 2 || old.v === 3)) {
    const merge = old.v === 2;
    if (merge) db.exec(`INSERT INTO ${fts} (${fts}) VALUES ('optimize')`);
    db.exec(`INSERT INTO ${fts} (${fts}, rank) VALUES ('automerge', ${FTS_AUTOMERGE})`);
    setSpec(db, def.name, "search", spec);
    return [{ resource: def.name, action: "index-added", detail: merge ? "search index merged into one segment" : `search index merges ${FTS_AUTOMERGE} segments at a time` }];
  }
  for (const t of ["search-insert", "search-update", "search-delete"]) db.exec(`DROP TRIGGER IF EXISTS ${trigger(def.name, t)}`);
  db.exec(`DROP TABLE IF EXISTS ${fts}`);
  db.exec(`CREATE VIRTUAL TABLE ${fts} USING fts5(text, tokenize='trigram case_sensitive 0', detail='none')`);
  db.exec(`INSERT INTO ${fts} (rowid, text) SELECT t.id, ${text} FROM ${table} AS t`);
  // A bulk build leaves thousands of segments; one segment makes each search's MATCH a quarter
  // cheaper (320 -> 245 us for three trigrams on a million records). Later writes add small ones
  // that FTS5 merges as it goes.
  db.exec(`INSERT INTO ${fts} (${fts}) VALUES ('optimize')`);
  db.exec(`INSERT INTO ${fts} (${fts}, rank) VALUES ('automerge', ${FTS_AUTOMERGE})`);
  setSpec(db, def.name, "search", spec);
  return [{ resource: def.name, action: "index-added", detail: `search index over ${searchFields(def).join(", ") || "no field"}` }];
}

/**
 * Brings written records into their resource's search index; call inside the transaction, before
 * COMMIT. `ids` names the records older than the transaction that it wrote, and may hold more (a
 * rolled-back savepoint's rows): the index is made to match the table for each of them. Rows above
 * `idsBefore` (each resource's largest id before the transaction) are new and all added. `null`
 * re-reads the whole resource (after a delete of all).
 */
export function flushSearchIndex(db: Database, d: Dialect, written: Map<string, Set<number> | null>, idsBefore: Map<string, number>): void {
  for (const [resource, ids] of written) {
    const spec = derivedSpec(db, resource, "search");
    if (!spec) continue;
    const fts = searchTable(resource);
    const text = (JSON.parse(spec) as { text: string }).text;
    if (ids === null) {
      db.exec(`DELETE FROM ${fts}`);
      db.exec(`INSERT INTO ${fts} (rowid, text) SELECT t.id, ${text} FROM ${d.table(resource)} AS t`);
      continue;
    }
    // Ids above the largest one before the transaction were never in the index: nothing to delete.
    const gone = idsIn("rowid", ids);
    if (gone) db.query(`DELETE FROM ${fts} WHERE ${gone.sql}`).run(...gone.args);
    const add = writtenRows(ids, idsBefore.get(resource) ?? 0);
    db.query(`INSERT INTO ${fts} (rowid, text) SELECT t.id, ${text} FROM ${d.table(resource)} AS t WHERE ${add.sql}`).run(...add.args);
  }
}

/** The rows of `t` a transaction wrote: the older ones it names, and every row above `idsBefore`. */
function writtenRows(ids: Set<number>, idsBefore: number): { sql: string; args: (number | string)[] } {
  const old = idsIn("t.id", ids);
  return old ? { sql: `(t.id > ? OR ${old.sql})`, args: [idsBefore, ...old.args] } : { sql: "t.id > ?", args: [idsBefore] };
}

/**
 * A condition naming a set of row ids: as ranges when they are few (rows written by one import or
 * one burst of creates mostly have consecutive ids, and a range is a plain rowid scan), else as a
 * JSON list. Null for no ids.
 */
function idsIn(col: string, ids: Iterable<number>): { sql: string; args: (number | string)[] } | null {
  const sorted = Float64Array.from(ids).sort();
  if (!sorted.length) return null;
  const ranges: [number, number][] = [];
  for (const id of sorted) {
    const last = ranges[ranges.length - 1];
    if (last && id <= last[1] + 1) last[1] = Math.max(last[1], id);
    else ranges.push([id, id]);
  }
  if (ranges.length > 32) return { sql: `${col} IN (SELECT value FROM json_each(?))`, args: [JSON.stringify(Array.from(sorted))] };
  return { sql: `(${ranges.map(() => `${col} BETWEEN ? AND ?`).join(" OR ")})`, args: ranges.flat() };
}

/**
 * Maintained counts: the number of records, and per value of each counted field, kept in the write
 * transaction. An equality filter on such a field then has its exact total at once.
 *
 * Not triggers: any trigger on a record table (even an empty one) made each insert ~3x slower, a
 * third of an import's time. The store instead notes what a transaction writes and, just before
 * COMMIT, adds the keys of the written rows as they now are and takes away the keys they had before
 * (captured at their first update or delete in the transaction): see flushCounts.
 */
function syncCounts(db: Database, def: ResourceDef, d: Dialect): SchemaChange[] {
  const table = d.table(def.name);
  const fields = countedFields(def);
  const spec = JSON.stringify({ v: 3, fields });
  if (derivedSpec(db, def.name, "counts") === spec) return [];
  for (const t of ["count-insert", "count-update", "count-delete"]) db.exec(`DROP TRIGGER IF EXISTS ${trigger(def.name, t)}`);
  recount(db, def.name, table, spec);
  setSpec(db, def.name, "counts", spec);
  return [{ resource: def.name, action: "index-added", detail: `maintained counts${fields.length ? ` per ${fields.join(", ")}` : ""}` }];
}

/** A row's count key for one field: the field, NUL, and quote() of its value (see countKey in derived.ts). */
const fieldKey = (field: string, row: string) => `'${field.replace(/'/g, "''")}' || char(0) || quote(json_extract(${row}.data, ${jsonPath(field)}))`;

const fieldsOf = (spec: string) => (JSON.parse(spec) as { fields: string[] }).fields;

/** A JSON array of a row's count keys: '' (every record) and one per counted field. */
const countKeys = (spec: string, row: string) => `json_array(''${fieldsOf(spec).map((f) => `, ${fieldKey(f, row)}`).join("")})`;

/**
 * Adds the keys of the rows matching `where` to the counts, row by row into the counts table. Not a
 * GROUP BY: its sorter held every row's key in memory (225 MB for an import of a million rows).
 */
function addKeyCounts(db: Database, resource: string, table: string, spec: string, where: { sql: string; args: (number | string)[] }): void {
  const bump = "ON CONFLICT(resource, key) DO UPDATE SET n = n + excluded.n";
  db.query(`INSERT INTO _resd_counts (resource, key, n) SELECT ?, '', count(*) FROM ${table} AS t WHERE ${where.sql} ${bump}`).run(resource, ...where.args);
  for (const f of fieldsOf(spec)) {
    db.query(`INSERT INTO _resd_counts (resource, key, n) SELECT ?, ${fieldKey(f, "t")}, 1 FROM ${table} AS t WHERE ${where.sql} ${bump}`).run(resource, ...where.args);
  }
}

function recount(db: Database, resource: string, table: string, spec: string): void {
  db.query("DELETE FROM _resd_counts WHERE resource = ?").run(resource);
  addKeyCounts(db, resource, table, spec, { sql: "1", args: [] });
}

/** The SQL that reads one row's id and count keys by uuid (before its update or delete), or null when the resource keeps none. */
export function countCaptureSql(db: Database, resource: string, d: Dialect): string | null {
  const spec = derivedSpec(db, resource, "counts");
  return spec ? `SELECT t.id AS id, ${countKeys(spec, "t")} AS k FROM ${d.table(resource)} AS t WHERE t.uuid = ?` : null;
}

/**
 * Brings the counts up to date with what the transaction wrote; call before COMMIT. `written` holds
 * the ids of older records written (null: the whole resource), rows above `idsBefore` are new, and
 * `before` holds the keys the older ones had before the transaction. Rows of rolled-back savepoints need no care: their state now is their state before.
 */
export function flushCounts(db: Database, d: Dialect, written: Map<string, Set<number> | null>, idsBefore: Map<string, number>, before: Map<string, Map<number, string>>): void {
  for (const [resource, ids] of written) {
    const spec = derivedSpec(db, resource, "counts");
    if (!spec) continue;
    if (ids === null) {
      recount(db, resource, d.table(resource), spec);
      continue;
    }
    addKeyCounts(db, resource, d.table(resource), spec, writtenRows(ids, idsBefore.get(resource) ?? 0));
    const delta = new Map<string, number>();
    for (const keys of before.get(resource)?.values() ?? []) for (const k of JSON.parse(keys) as string[]) delta.set(k, (delta.get(k) ?? 0) - 1);
    const bump = db.query("INSERT INTO _resd_counts (resource, key, n) VALUES (?, ?, ?) ON CONFLICT(resource, key) DO UPDATE SET n = n + excluded.n");
    for (const [key, n] of delta) if (n !== 0) bump.run(resource, key, n);
  }
}
