/**
 * Maintained counts on PostgreSQL: the number of records of every resource, and per value of its
 * counted fields (countedFields in derived.ts), so that the total of an unfiltered list or of an
 * equality filter on such a field is one small lookup, exact under any write load, on every
 * instance.
 *
 * A trigger on each record table appends the changes of a row as deltas (+1 for the keys it has
 * now, -1 for the keys it had), in the writing transaction. Deltas, not a counter row per key: a
 * counter row would make every create wait for the commit of the one before it. The deltas are
 * folded into `_resd_counts` every second by one instance at a time; a total is the sum of both,
 * read in one statement (one snapshot), so folding never changes what a reader sees.
 */
import type { ReservedSQL, SQL } from "bun";
import type { ResourceDef } from "../definitions/types";
import { countedFields } from "../definitions/derived";
import { quoteIdent } from "./dialect";
import { lit, type PgDialect } from "./postgres-dialect";
import type { SchemaChange } from "./types";

/** The tables (one migration of postgres-schema.ts). */
export const COUNT_TABLES = `
  CREATE TABLE _resd_counts (resource TEXT NOT NULL, key TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (resource, key));
  CREATE TABLE _resd_count_deltas (id BIGSERIAL PRIMARY KEY, resource TEXT NOT NULL, key TEXT NOT NULL, d INTEGER NOT NULL);
  CREATE INDEX _resd_count_deltas_key ON _resd_count_deltas (resource, key);
  CREATE TABLE _resd_count_specs (resource TEXT PRIMARY KEY, spec TEXT NOT NULL);`;

/**
 * Deltas are many short-lived rows: vacuumed as soon as a few hundred are dead, or every total
 * would read past the dead ones (a bloated delta table made a total cost 45 ms instead of 0.1).
 */
export const COUNT_DELTAS_VACUUM = `ALTER TABLE _resd_count_deltas SET (autovacuum_vacuum_threshold = 500,
  autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_threshold = 500, autovacuum_analyze_scale_factor = 0)`;

/** The advisory lock of folding: one instance at a time. */
const FOLD_LOCK = 0x72657363;
/** Deltas folded by one statement (each well inside the statement time budget). */
export const FOLD_BATCH = 50_000;

/**
 * countKey() of derived.ts joins field and value with U+0000, which PostgreSQL text cannot hold;
 * here the unit separator stands in for it (no field name holds either).
 */
export const pgCountKey = (key: string) => key.replace(/\u0000/g, "\u001f");

/** A row's count key for one field, as countKey() spells it: strings quoted as SQLite's quote(), booleans 1/0, else the number or NULL. */
function fieldKeySql(field: string, row: string): string {
  const x = `(${row}.data->${lit(field)})::jsonb`;
  return `${lit(field)} || chr(31) || CASE jsonb_typeof(${x})
    WHEN 'string' THEN '''' || replace(${x} #>> '{}', '''', '''''') || ''''
    WHEN 'boolean' THEN CASE WHEN ${x} = 'true'::jsonb THEN '1' ELSE '0' END
    WHEN 'number' THEN ${x} #>> '{}'
    ELSE 'NULL' END`;
}

/** The keys a row counts under: '' (every record) and one per counted field. */
const keysSql = (fields: string[], row: string) => `ARRAY[''${fields.map((f) => `, ${fieldKeySql(f, row)}`).join("")}]::text[]`;

const triggerName = (resource: string) => `cnt_${Bun.hash(`counts\0${resource}`).toString(36)}`;

export async function syncCounts(db: ReservedSQL, def: ResourceDef, d: PgDialect): Promise<SchemaChange[]> {
  const fields = countedFields(def);
  const spec = JSON.stringify({ v: 1, fields });
  const have = (await db.unsafe("SELECT spec FROM _resd_count_specs WHERE resource = $1", [def.name]))[0] as { spec: string } | undefined;
  if (have?.spec === spec) return [];
  const table = d.table(def.name);
  const fn = quoteIdent(triggerName(def.name));
  const name = lit(def.name);
  // An update that leaves every key as it was appends nothing.
  await db.unsafe(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE was text[]; now text[];
    BEGIN
      IF TG_OP <> 'INSERT' THEN was := ${keysSql(fields, "OLD")}; END IF;
      IF TG_OP <> 'DELETE' THEN now := ${keysSql(fields, "NEW")}; END IF;
      IF TG_OP = 'UPDATE' AND was = now THEN RETURN NULL; END IF;
      INSERT INTO _resd_count_deltas (resource, key, d)
        SELECT ${name}, k, -1 FROM unnest(coalesce(was, '{}')) AS k
        UNION ALL SELECT ${name}, k, 1 FROM unnest(coalesce(now, '{}')) AS k;
      RETURN NULL;
    END $$`);
  // Creating the trigger waits for the table's writers and holds new ones until this transaction
  // commits: the recount below sees every row, and every later write passes the trigger.
  await db.unsafe(`DROP TRIGGER IF EXISTS ${fn} ON ${table}`);
  await db.unsafe(`CREATE TRIGGER ${fn} AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
  await db.unsafe("DELETE FROM _resd_counts WHERE resource = $1", [def.name]);
  await db.unsafe("DELETE FROM _resd_count_deltas WHERE resource = $1", [def.name]);
  await db.unsafe(`INSERT INTO _resd_counts (resource, key, n)
    SELECT $1, k, count(*) FROM ${table} AS t, unnest(${keysSql(fields, "t")}) AS k GROUP BY k`, [def.name]);
  await db.unsafe(`INSERT INTO _resd_count_specs (resource, spec) VALUES ($1, $2)
    ON CONFLICT (resource) DO UPDATE SET spec = excluded.spec`, [def.name, spec]);
  return [{ resource: def.name, action: "index-added", detail: `maintained counts${fields.length ? ` per ${fields.join(", ")}` : ""}` }];
}

/**
 * The total of a list whose filter the maintained counts answer (see CompiledQuery.counted), with
 * the snapshot it was read in (the cache judges by it which commits it holds).
 */
export async function maintainedCount(sql: SQL, resource: string, c: { keys: string[]; negate: boolean }): Promise<{ n: number; snapshot: string }> {
  const keys = (c.negate ? ["", ...c.keys] : c.keys).map(pgCountKey);
  const [row] = (await sql.unsafe(`SELECT pg_current_snapshot()::text AS s,
        coalesce(sum(n) FILTER (WHERE key = ''), 0)::float8 AS everything, coalesce(sum(n) FILTER (WHERE key <> ''), 0)::float8 AS keyed FROM (
      SELECT key, n FROM _resd_counts WHERE resource = $1 AND key = ANY($2::text[])
      UNION ALL SELECT key, d FROM _resd_count_deltas WHERE resource = $1 AND key = ANY($2::text[])) AS a`, [resource, keys])) as { s: string; everything: number; keyed: number }[];
  return { n: c.negate ? row.everything - row.keyed : row.keyed, snapshot: row.s };
}

/**
 * Folds up to FOLD_BATCH committed deltas into the counts, in one statement (readers see the sum
 * before or after, never half of it). Deltas of transactions still open are not visible yet and
 * stay. Returns the deltas folded; 0 when another instance is folding or nothing was left.
 */
export async function foldCounts(db: ReservedSQL): Promise<number> {
  if (!(await db.unsafe("SELECT pg_try_advisory_xact_lock($1) AS ok", [FOLD_LOCK]))[0].ok) return 0;
  const r = await db.unsafe(`WITH moved AS (DELETE FROM _resd_count_deltas WHERE id IN (SELECT id FROM _resd_count_deltas ORDER BY id LIMIT ${FOLD_BATCH})
        RETURNING resource, key, d),
      summed AS (SELECT resource, key, sum(d) AS n FROM moved GROUP BY resource, key),
      added AS (INSERT INTO _resd_counts (resource, key, n) SELECT resource, key, n FROM summed
        ON CONFLICT (resource, key) DO UPDATE SET n = _resd_counts.n + excluded.n RETURNING 1)
    SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM added)::int AS added`);
  return (r[0] as { moved: number }).moved;
}
