/**
 * Tables and indexes on PostgreSQL, kept in step with the definitions. Several instances may start
 * at once: every change runs in a transaction holding one advisory lock, so they migrate once.
 */
import type { ReservedSQL } from "bun";
import type { ResourceDef } from "../definitions/types";
import { searchFields } from "../definitions/derived";
import { quoteIdent } from "./dialect";
import { plainSearchFields, searchTextSql, type PgDialect } from "./postgres-dialect";
import type { SchemaChange } from "./types";
import { COUNT_DELTAS_VACUUM, COUNT_TABLES, syncCounts } from "./postgres-counts";

/** The advisory lock key of schema changes ("resd" in ASCII). */
export const SCHEMA_LOCK = 0x72657364;

/** Internal tables, in order. Append only: entry i is applied once, and recorded in _resd_migrations. */
const MIGRATIONS: string[] = [
  `CREATE EXTENSION IF NOT EXISTS pg_trgm;
   CREATE TABLE _resd_schema (resource TEXT PRIMARY KEY, version INTEGER NOT NULL, hash TEXT NOT NULL, updated BIGINT NOT NULL);
   CREATE TABLE _resd_changes (resource TEXT PRIMARY KEY, changed_ms BIGINT NOT NULL);
   CREATE TABLE _resd_history (id BIGSERIAL PRIMARY KEY, resource TEXT NOT NULL, uuid TEXT NOT NULL, action TEXT NOT NULL,
     at BIGINT NOT NULL, "user" TEXT, data TEXT NOT NULL, _created BIGINT NOT NULL);
   CREATE INDEX _resd_history_record ON _resd_history (resource, uuid, id);
   CREATE INDEX _resd_history_deletes ON _resd_history (action, at);
   CREATE TABLE _resd_jobs (id BIGSERIAL PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL, action TEXT NOT NULL,
     uuid TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
     run_at BIGINT NOT NULL, lease_until BIGINT, lease TEXT, last_error TEXT, created BIGINT NOT NULL, updated BIGINT NOT NULL);
   CREATE INDEX _resd_jobs_due ON _resd_jobs (state, run_at);
   CREATE INDEX _resd_jobs_lease ON _resd_jobs (state, lease_until);
   CREATE TABLE _resd_sessions (id TEXT PRIMARY KEY, "user" TEXT NOT NULL, pfp TEXT NOT NULL, created BIGINT NOT NULL,
     seen BIGINT NOT NULL, expires BIGINT NOT NULL);
   CREATE INDEX _resd_sessions_expires ON _resd_sessions (expires);
   CREATE TABLE _resd_login_failures (account TEXT PRIMARY KEY, failures INTEGER NOT NULL, last_ms BIGINT NOT NULL,
     locked_until BIGINT NOT NULL);
   -- The values of a JSON array or object (a list or translated field): filters and search match any of them.
   CREATE FUNCTION resd_values(v jsonb) RETURNS SETOF jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT e FROM jsonb_array_elements(CASE WHEN jsonb_typeof(v) = 'array' THEN v ELSE '[]'::jsonb END) AS a(e)
     UNION ALL SELECT e FROM jsonb_each(CASE WHEN jsonb_typeof(v) = 'object' THEN v ELSE '{}'::jsonb END) AS o(k, e) $$;
   -- What search looks at in one record: the fields' values (a list's or translation's one by one),
   -- separated by the unit separator so that a term never matches across two values.
   CREATE FUNCTION resd_search_text(d json, fields text[]) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT coalesce(string_agg(CASE WHEN jsonb_typeof(x) IN ('array', 'object')
         THEN (SELECT coalesce(string_agg(e #>> '{}', chr(31)), '') FROM resd_values(x) AS v(e))
         ELSE coalesce(x #>> '{}', '') END, chr(31) ORDER BY i), '')
     FROM unnest(fields) WITH ORDINALITY AS f(name, i), LATERAL (SELECT (d->f.name)::jsonb AS x) AS y $$;`,
  // Every schema version a resource had, so that an instance with an older definition knows it is older.
  // `_resd_meta`: small values shared by the instances (when the hourly purge last ran).
  `CREATE TABLE _resd_schema_versions (resource TEXT NOT NULL, version INTEGER NOT NULL, hash TEXT NOT NULL, at BIGINT NOT NULL,
     PRIMARY KEY (resource, version));
   INSERT INTO _resd_schema_versions (resource, version, hash, at) SELECT resource, version, hash, updated FROM _resd_schema;
   CREATE TABLE _resd_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);`,
  COUNT_TABLES,
  COUNT_DELTAS_VACUUM,
  // A change an AI agent made for its asker names the agent (core/agents): "through agent <id>".
  `ALTER TABLE _resd_history ADD COLUMN via TEXT;`,
  // Change marks by slot, so that writers of a resource do not queue on one row (postgres-marks.ts).
  `ALTER TABLE _resd_changes ADD COLUMN slot INTEGER NOT NULL DEFAULT 0, ADD COLUMN n BIGINT NOT NULL DEFAULT 0;
   ALTER TABLE _resd_changes DROP CONSTRAINT _resd_changes_pkey, ADD PRIMARY KEY (resource, slot);`,
];

/** Applies the internal migrations this database lacks (under the schema lock); how many it applied. */
export async function migrateInternal(db: ReservedSQL): Promise<number> {
  await db.unsafe("CREATE TABLE IF NOT EXISTS _resd_migrations (n INTEGER PRIMARY KEY, at BIGINT NOT NULL)");
  const done = Number((await db.unsafe("SELECT coalesce(max(n), 0) AS n FROM _resd_migrations"))[0].n);
  for (let i = done; i < MIGRATIONS.length; i++) {
    await db.unsafe(MIGRATIONS[i]);
    await db.unsafe("INSERT INTO _resd_migrations (n, at) VALUES ($1, $2)", [i + 1, Date.now()]);
  }
  return Math.max(0, MIGRATIONS.length - done);
}

/** Index names are at most 63 bytes on PostgreSQL: each is named by a digest of what it indexes. */
const indexName = (resource: string, what: string) => `ix_${Bun.hash(`${resource}\0${what}`).toString(36)}`;

type WantedIndex = { name: string; sql: string; unique: string | null };

/** The indexes a definition wants; `unique` names the field a unique one guards (for 422 errors). */
function wantedIndexes(def: ResourceDef, d: PgDialect): WantedIndex[] {
  const table = d.table(def.name);
  const out: WantedIndex[] = [];
  const add = (what: string, cols: string[], unique: string | null, using = "") => {
    const name = indexName(def.name, `${what}\0${cols.join(",")}${using}`);
    out.push({ name, unique, sql: `CREATE ${unique ? "UNIQUE " : ""}INDEX ${quoteIdent(name)} ON ${table} ${using}(${cols.join(", ")})` });
  };
  // Unset values sort first in ascending order, as on SQLite; the index is kept in that order. The
  // row id ends it, as SQLite's rowid ends every index: pages sort by the fields, then by id.
  for (const cols of def.indexes) add("index", [...cols.map((c) => `${d.field(c)} NULLS FIRST`), "id"], null);
  for (const col of def.unique) {
    // A translated field is unique per language: one index per language value, not the whole object.
    const languages = def.fields[col]?.i18n ? (def.raw.languages ?? []) : [];
    if (!languages.length) add("unique", [d.field(col)], col);
    for (const lang of languages) add("unique", [d.fieldKey(col, lang)], col);
  }
  const fields = searchFields(def);
  if (fields.length) add("search", [`${searchTextSql(def)} gin_trgm_ops`], null, "USING gin ");
  return out;
}

/** What the store needs to know of a synced resource: which unique index guards which field. */
export type SyncedResource = { uniqueFields: Map<string, string> };

/** A resource's row of `_resd_schema`: its current version and the digest of that definition. */
type StoredSchema = { version: number; hash: string };

/** A digest of the definition as written: the same file on every instance gives the same one. */
const definitionHash = (def: ResourceDef) => Bun.hash(JSON.stringify(def.raw)).toString(16);

/**
 * Another instance already moved the resource past this definition (its hash is one of the stored
 * schema's earlier versions): this one must not undo that (drop its indexes, serve a field that is
 * gone). Returns the refusal, or null when this definition is the stored one or a new one.
 */
async function olderThanStored(db: ReservedSQL, def: ResourceDef, hash: string, row: StoredSchema | undefined): Promise<SchemaChange | null> {
  if (!row || row.hash === hash) return null;
  const mine = (await db.unsafe("SELECT max(version) AS v FROM _resd_schema_versions WHERE resource = $1 AND hash = $2", [def.name, hash]))[0] as { v: number | null };
  if (mine.v === null) return null;
  return {
    resource: def.name,
    action: "refused",
    detail: `the database holds schema version ${row.version}, newer than this instance's definition (version ${mine.v}, resources/${def.name}.json); ` +
      "it is not served here until that file matches the other instances' (resd migrate --rollback makes this file the newest version)",
  };
}

export async function syncResource(db: ReservedSQL, def: ResourceDef, d: PgDialect, rollback: boolean): Promise<{ changes: SchemaChange[]; synced: SyncedResource }> {
  const hash = definitionHash(def);
  const row = (await db.unsafe("SELECT version, hash FROM _resd_schema WHERE resource = $1", [def.name]))[0] as StoredSchema | undefined;
  const refused = await olderThanStored(db, def, hash, row);
  if (refused && !rollback) return { changes: [refused], synced: { uniqueFields: new Map() } };
  const changes: SchemaChange[] = [];
  const table = d.table(def.name);
  const exists = (await db.unsafe("SELECT 1 FROM pg_class WHERE relname = $1 AND relkind = 'r'", [`r:${def.name}`])).length > 0;
  if (!exists) {
    await db.unsafe(`CREATE TABLE ${table} (id BIGSERIAL PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, data JSON NOT NULL,
      _created BIGINT NOT NULL, _modified BIGINT NOT NULL, _created_by TEXT, _modified_by TEXT)`);
    await db.unsafe(`CREATE INDEX ${quoteIdent(indexName(def.name, "_created"))} ON ${table} (_created)`);
    await db.unsafe(`CREATE INDEX ${quoteIdent(indexName(def.name, "_modified"))} ON ${table} (_modified)`);
    changes.push({ resource: def.name, action: "created", detail: `table ${table}` });
  }
  const fixed = new Set([indexName(def.name, "_created"), indexName(def.name, "_modified")]);
  const have = new Set(((await db.unsafe("SELECT indexname FROM pg_indexes WHERE tablename = $1 AND indexname LIKE 'ix\\_%'", [`r:${def.name}`])) as { indexname: string }[])
    .map((r) => r.indexname).filter((n) => !fixed.has(n)));
  const want = wantedIndexes(def, d);
  const wanted = new Set(want.map((w) => w.name));
  for (const name of have) {
    if (wanted.has(name)) continue;
    await db.unsafe(`DROP INDEX ${quoteIdent(name)}`);
    changes.push({ resource: def.name, action: "index-dropped", detail: name });
  }
  for (const w of want) {
    if (have.has(w.name)) continue;
    try {
      await db.unsafe(w.sql);
    } catch (e) {
      throw new Error(`${def.file ?? def.name}: cannot create index ${w.name}: ${(e as Error).message} (duplicate values in a unique field?)`);
    }
    changes.push({ resource: def.name, action: "index-added", detail: w.unique ? `unique:${w.unique}` : w.sql.includes("gin_trgm_ops") ? `search index over ${searchFields(def).join(", ")}` : w.name });
  }
  if (!row || row.hash !== hash) {
    const version = (row?.version ?? 0) + 1;
    await db.unsafe(`INSERT INTO _resd_schema (resource, version, hash, updated) VALUES ($1, $2, $3, $4)
      ON CONFLICT (resource) DO UPDATE SET version = excluded.version, hash = excluded.hash, updated = excluded.updated`,
    [def.name, version, hash, Date.now()]);
    await db.unsafe("INSERT INTO _resd_schema_versions (resource, version, hash, at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", [def.name, version, hash, Date.now()]);
    if (row) changes.push({ resource: def.name, action: "updated", detail: `schema version ${version}${refused ? " (the definition of an earlier version again: rolled back)" : ""}` });
  }
  changes.push(...(await syncCounts(db, def, d)));
  d.searchText.set(def.name, searchFields(def).length ? searchTextSql(def) : "''");
  const plain = plainSearchFields(def);
  if (plain?.length) d.plainSearch.set(def.name, plain);
  else d.plainSearch.delete(def.name);
  return { changes, synced: { uniqueFields: new Map(want.filter((w) => w.unique).map((w) => [w.name, w.unique!])) } };
}
