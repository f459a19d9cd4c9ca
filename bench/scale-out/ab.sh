#!/usr/bin/env bash
# Alternating runs on one durable PostgreSQL cluster, to compare versions of resd with each other
# and with bare-pg (../shared/bench/ref/bare-resd-pg.ts) in the same hour: the machine drifts too
# much between runs of bench/scale-out/run.sh to compare one change's figures across runs.
# Each round measures bare-pg, then resd from each TREE (a checkout of resd with its node_modules;
# `git worktree add /tmp/old <rev>` and a node_modules link make one), each on a fresh copy of
# the same 1M records (template databases made at the start; the cluster is removed at the end).
# Usage: bench/scale-out/ab.sh TREE [TREE...]
# env: OPS="create" (http-bench.sh operations; "" for none)  MIXED=1 (also ../shared/bench/mixed/run.sh)
#      ROUNDS=2  PG_PORT=55440  BENCH_DATA=/tmp/bench-data (the seeded site and raw.db, see run.sh)
#      RESD_PG_SHARED_BUFFERS (scripts/postgres.sh; 256MB)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"; ORIG="$DATA/resd-site.orig"
OPS="${OPS-create}"; ROUNDS="${ROUNDS:-2}"; PG_PORT="${PG_PORT:-55440}"
export RESD_PG_STATE=/tmp/resd-ab-postgres RESD_PG_DURABLE=1
. "$SHARED/lib.sh"
[ "$#" -gt 0 ] || { echo "usage: bench/scale-out/ab.sh TREE [TREE...]" >&2; exit 2; }
PG=$(bash "$ROOT/scripts/postgres.sh" start "$PG_PORT"); PG="${PG%/postgres}"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; bash "$ROOT/scripts/postgres.sh" stop "$PG_PORT"' EXIT
psql "$PG/postgres" -qXc "CREATE DATABASE bare_ab_orig"
LOAD="$DATA/raw.db.orig" PG="$PG/bare_ab_orig" bun "$SHARED/ref/bare-resd-pg.ts"
psql "$PG/postgres" -qXc "CREATE DATABASE resd_ab_orig"
(cd "$ROOT" && bun cli/main.ts migrate --dir "$ORIG" --to "$PG/resd_ab_orig" > /dev/null)
psql "$PG/resd_ab_orig" -qXc "VACUUM ANALYZE"; psql "$PG/bare_ab_orig" -qXc "VACUUM ANALYZE"
TOKEN=$(cd "$ROOT" && bun cli/main.ts token bench@example.com --dir "$ORIG")
IDS="$DATA/scale-out.uuids.txt"
fresh() { psql "$PG/postgres" -qXc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -qXc "CREATE DATABASE $1 TEMPLATE $2" 2>/dev/null; }
echo "# $(date -u +%FT%TZ) $(nproc) cores; ab.sh $*; OPS=\"$OPS\" MIXED=${MIXED:-0} ROUNDS=$ROUNDS"
for round in $(seq "$ROUNDS"); do
  fresh bare_ab bare_ab_orig
  PG="$PG/bare_ab" PORT=3211 RESOURCE=items TOKEN=bench TOTAL=0 bun "$SHARED/ref/bare-resd-pg.ts" > /dev/null 2>&1 & pid=$!
  wait_http http://127.0.0.1:3211/
  [ -n "$OPS" ] && OPS="$OPS" LABEL="bare-pg" bash "$SHARED/http-bench.sh" http://127.0.0.1:3211 "Bearer bench" items "$DATA/raw.uuids.txt" 2>&1 | grep -v '^#'
  [ "${MIXED:-}" = 1 ] && bash "$SHARED/mixed/run.sh" "bare-pg TOTAL=0" http://127.0.0.1:3211 "Bearer bench" items
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  for tree in "$@"; do
    label="resd $(git -C "$tree" rev-parse --short HEAD)"
    fresh resd_ab resd_ab_orig
    rm -rf "$DATA/resd-ab-site"; cp -r "$ORIG" "$DATA/resd-ab-site"; rm -f "$DATA/resd-ab-site/data/resd.pid"
    (cd "$tree" && RESD_DATABASE_URL="$PG/resd_ab" exec bun cli/main.ts serve --dir "$DATA/resd-ab-site" --port 3301 --host 127.0.0.1 > /dev/null 2>&1) & pid=$!
    wait_http http://127.0.0.1:3301/health
    [ -n "$OPS" ] && OPS="$OPS" LABEL="$label" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$IDS" 2>&1 | grep -v '^#'
    [ "${MIXED:-}" = 1 ] && bash "$SHARED/mixed/run.sh" "$label" http://127.0.0.1:3301 "Bearer $TOKEN" items
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
