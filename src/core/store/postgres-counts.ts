/**
 * Maintained counts on PostgreSQL: the number of records of every resource, and per value of its
 * counted fields (countedFields in derived.ts), so that the total of an unfiltered list or of an
 * equality filter on such a field is one small lookup, exact under any write load, on every
 * instance.
 *
 * Triggers on each record table append the changes of each statement as deltas (per key, the
 * keys its rows have now less the keys they had), in the writing transaction. Deltas, not a
 * counter row per key: a counter row would make every create wait for the commit of the one
 * before it. Per statement, not per row: a group of 32 creates in one INSERT appends a delta per
 * key it touched (a handful) instead of three rows per create, each with its two index entries,
 * which was a fifth of PostgreSQL's time per create. The deltas are folded into `_resd_counts`
 * every second by one instance at a time; a total is the sum of both, read in one statement (one
 * snapshot), so folding never changes what a reader sees.
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

/** The spec a resource's triggers were made for: v1 counted per row, v2 per statement. */
const SPEC_VERSION = 2;
const specOf = (fields: string[]) => JSON.stringify({ v: SPEC_VERSION, fields });
const fieldsOf = (spec: string) => JSON.stringify((JSON.parse(spec) as { fields: string[] }).fields);

/** The deltas of one statement: per key, the rows that have it now less those that had it (`rows`: the transition tables and their signs). */
const deltasSql = (fields: string[], name: string, rows: [table: string, sign: number][]) => `INSERT INTO _resd_count_deltas (resource, key, d)
        SELECT ${name}, k, sum(d)::int FROM (${rows.map(([t, sign]) => `SELECT k, ${sign} AS d FROM ${t} AS r, unnest(${keysSql(fields, "r")}) AS k`).join(" UNION ALL ")}) AS x
        GROUP BY k HAVING sum(d) <> 0`;

export async function syncCounts(db: ReservedSQL, def: ResourceDef, d: PgDialect): Promise<SchemaChange[]> {
  const fields = countedFields(def);
  const spec = specOf(fields);
  const have = (await db.unsafe("SELECT spec FROM _resd_count_specs WHERE resource = $1", [def.name]))[0] as { spec: string } | undefined;
  if (have?.spec === spec) return [];
  const table = d.table(def.name);
  const base = triggerName(def.name);
  const fn = quoteIdent(base);
  const name = lit(def.name);
  // An update that leaves every key as it was appends nothing (its -1 and +1 meet).
  await db.unsafe(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN ${deltasSql(fields, name, [["new_rows", 1]])};
      ELSIF TG_OP = 'DELETE' THEN ${deltasSql(fields, name, [["old_rows", -1]])};
      ELSE ${deltasSql(fields, name, [["old_rows", -1], ["new_rows", 1]])};
      END IF;
      RETURN NULL;
    END $$`);
  // Replacing the triggers waits for the table's writers and holds new ones until this transaction
  // commits: a recount below sees every row, and every later write passes the new triggers. A
  // trigger with transition tables serves one kind of statement: three of them.
  await db.unsafe(`DROP TRIGGER IF EXISTS ${fn} ON ${table}`);
  for (const [op, refs] of [["INSERT", "NEW TABLE AS new_rows"], ["UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"], ["DELETE", "OLD TABLE AS old_rows"]]) {
    const trigger = quoteIdent(`${base}_${op[0]!.toLowerCase()}`);
    await db.unsafe(`DROP TRIGGER IF EXISTS ${trigger} ON ${table}`);
    await db.unsafe(`CREATE TRIGGER ${trigger} AFTER ${op} ON ${table} REFERENCING ${refs} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
  }
  const setSpec = () => db.unsafe(`INSERT INTO _resd_count_specs (resource, spec) VALUES ($1, $2)
    ON CONFLICT (resource) DO UPDATE SET spec = excluded.spec`, [def.name, spec]);
  // Only the way of counting changed (an upgrade): the counts and deltas so far hold.
  if (have && fieldsOf(have.spec) === JSON.stringify(fields)) {
    await setSpec();
    return [];
  }
  await db.unsafe("DELETE FROM _resd_counts WHERE resource = $1", [def.name]);
  await db.unsafe("DELETE FROM _resd_count_deltas WHERE resource = $1", [def.name]);
  await db.unsafe(`INSERT INTO _resd_counts (resource, key, n)
    SELECT $1, k, count(*) FROM ${table} AS t, unnest(${keysSql(fields, "t")}) AS k GROUP BY k`, [def.name]);
  await setSpec();
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
