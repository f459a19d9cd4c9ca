#!/usr/bin/env bash
# Beyond one machine, measured on this one: the same records served by
#   bare-resd  (../shared/bench/ref/bare-resd.ts on bun:sqlite: the record-route ceiling; TOTAL=0 = no count)
#   barepg     (../shared/bench/ref/bare-resd-pg.ts: the same SQL straight on Bun.sql, on the same cluster:
#              the ceiling resd on PostgreSQL is quoted against; the mixed run without the count)
#   sqlite     one resd on SQLite (the default)
#   pg1        one resd on PostgreSQL (a local cluster with fsync and synchronous commit on)
#   pg1n       that one behind nginx (the proxy's own cost)
#   pg2        two resd instances on that database behind nginx (round robin, keep-alive)
# each with ../shared/bench/http-bench.sh (read one, list page with total, create) and
# ../shared/bench/mixed/run.sh (random pages under writes, pages alone, search), one after the
# other in one run. Every configuration starts from a fresh copy of the seeded data.
# Also timed: `resd migrate --to postgres://…` of the seeded site.
# Usage: bench/scale-out/run.sh        env: ROWS=1000000 D=10s ONLY="bare0 barepg sqlite pg1 pg2" PG_PORT=55433
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"; ROWS="${ROWS:-1000000}"
ONLY="${ONLY:-bare0 barepg sqlite pg1 pg1n pg2}"; PG_PORT="${PG_PORT:-55433}"
ORIG="${SITE_ORIG:-$DATA/resd-site.orig}"; SITE="$DATA/resd-site"
export RESD_PG_STATE=/tmp/resd-bench-postgres RESD_PG_DURABLE=1
RESD="bun $ROOT/cli/main.ts"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$DATA/nginx.pid" ] && kill "$(cat "$DATA/nginx.pid")" 2>/dev/null || true
  bash "$ROOT/scripts/postgres.sh" stop "$PG_PORT"
}
trap cleanup EXIT
. "$SHARED/lib.sh"
mkdir -p "$DATA"

[ -f "$DATA/raw.db.orig" ] || { bun "$SHARED/ref/sqlite-raw.ts" "$DATA/raw.db.orig" "$ROWS" > "$DATA/sqlite-raw.out"; mv "$DATA/raw.db.orig.uuids.txt" "$DATA/raw.uuids.txt" 2>/dev/null || true; }
[ -d "$ORIG" ] || { bun "$ROOT/bench/records/seed.ts" "$ORIG" "$ROWS"; $RESD user add bench@example.com --password bench-password --role admin --api --dir "$ORIG" >/dev/null; }
$RESD migrate --dir "$ORIG" > /dev/null

PG=$(bash "$ROOT/scripts/postgres.sh" start "$PG_PORT")
psql "$PG" -qXc "CREATE DATABASE resd_bench_orig"
ORIG_DB="${PG%/postgres}/resd_bench_orig"
t0=$(date +%s.%N)
$RESD migrate --dir "$ORIG" --to "$ORIG_DB" > "$DATA/migrate.out"
t1=$(date +%s.%N)
echo "# $(date -u +%FT%TZ) $(nproc) cores, rows=$ROWS, PostgreSQL $(psql "$PG" -XtAc 'SHOW server_version'), D=${D:-10s}"
printf 'resd migrate --to postgres (%s records): %.1f s, %.0f records/s\n' "$ROWS" "$(echo "$t1 - $t0" | bc)" "$(echo "$ROWS / ($t1 - $t0)" | bc -l)"
psql "$PG" -qXc "VACUUM ANALYZE" -d resd_bench_orig 2>/dev/null || psql "$ORIG_DB" -qXc "VACUUM ANALYZE"
case " $ONLY " in *" barepg "*)
  psql "$PG" -qXc "CREATE DATABASE bare_orig"
  LOAD="$DATA/raw.db.orig" PG="${PG%/postgres}/bare_orig" bun "$SHARED/ref/bare-resd-pg.ts" > /dev/null
  psql "${PG%/postgres}/bare_orig" -qXc "VACUUM ANALYZE" ;;
esac

TOKEN="$($RESD token bench@example.com --dir "$ORIG")"
IDS="$DATA/scale-out.uuids.txt"
[ -f "$IDS" ] || bun -e "import { Database } from 'bun:sqlite'; const d = new Database('$ORIG/data/resd.db', { readonly: true }); console.log(d.query('SELECT uuid FROM \"r:items\" ORDER BY random() LIMIT 10000').all().map((r) => r.uuid).join('\n'))" > "$IDS"

serve() { # port [database url]
  rm -f "$SITE/data/resd.pid"
  RESD_LOG_FORMAT=json RESD_DATABASE_URL="${2:-}" $RESD serve --dir "$SITE" --port "$1" --host 127.0.0.1 > /dev/null 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$1/health"
}
fresh_db() {
  psql "$PG" -qXc "DROP DATABASE IF EXISTS resd_bench WITH (FORCE)" -qXc "CREATE DATABASE resd_bench TEMPLATE resd_bench_orig"
  DB="${PG%/postgres}/resd_bench"
}
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  if [ -f "$DATA/nginx.pid" ]; then kill "$(cat "$DATA/nginx.pid")" 2>/dev/null || true; rm -f "$DATA/nginx.pid"; sleep 0.5; fi
}
measure() { # label base auth ids
  OPS="read list create" LABEL="$1" bash "$SHARED/http-bench.sh" "$2" "$3" items "$4"
}

for c in $ONLY; do
  rm -rf "$SITE"; cp -r "$ORIG" "$SITE"; sync "$SITE/data/resd.db"
  case "$c" in
    bare0)
      rm -f "$DATA/raw.db" "$DATA/raw.db-wal" "$DATA/raw.db-shm"; cp "$DATA/raw.db.orig" "$DATA/raw.db"; sync "$DATA/raw.db"
      TOTAL=0 MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 & pids+=($!)
      wait_http http://127.0.0.1:3201/
      measure "bare-resd TOTAL=0" http://127.0.0.1:3201 "Bearer bench" "$DATA/raw.uuids.txt"
      stop_all
      cp "$DATA/raw.db.orig" "$DATA/raw.db"; sync "$DATA/raw.db"; rm -f "$DATA/raw.db-wal" "$DATA/raw.db-shm"
      TOTAL=0 MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 & pids+=($!)
      wait_http http://127.0.0.1:3201/
      bash "$SHARED/mixed/run.sh" "bare-resd TOTAL=0" http://127.0.0.1:3201 "Bearer bench" items ;;
    barepg)
      for total in 1 0; do
        psql "$PG" -qXc "DROP DATABASE IF EXISTS bare WITH (FORCE)" -qXc "CREATE DATABASE bare TEMPLATE bare_orig"
        TOTAL=$total PG="${PG%/postgres}/bare" PORT=3211 RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd-pg.ts" > /dev/null 2>&1 & pids+=($!)
        wait_http http://127.0.0.1:3211/
        if [ "$total" = 1 ]; then measure "bare-pg" http://127.0.0.1:3211 "Bearer bench" "$DATA/raw.uuids.txt"
        else bash "$SHARED/mixed/run.sh" "bare-pg TOTAL=0" http://127.0.0.1:3211 "Bearer bench" items; fi
        stop_all
      done ;;
    sqlite)
      serve 3301; measure "resd sqlite" http://127.0.0.1:3301 "Bearer $TOKEN" "$IDS"; stop_all
      rm -rf "$SITE"; cp -r "$ORIG" "$SITE"; sync "$SITE/data/resd.db"
      serve 3301; bash "$SHARED/mixed/run.sh" "resd sqlite" http://127.0.0.1:3301 "Bearer $TOKEN" items ;;
    pg1)
      fresh_db; serve 3301 "$DB"; measure "resd pg x1" http://127.0.0.1:3301 "Bearer $TOKEN" "$IDS"; stop_all
      fresh_db; serve 3301 "$DB"; bash "$SHARED/mixed/run.sh" "resd pg x1" http://127.0.0.1:3301 "Bearer $TOKEN" items ;;
    pg1n|pg2)
      # Behind nginx (round robin, keep-alive): one instance (the proxy's own cost) or two, each
      # with its own site folder (the same definitions and .env).
      n=$([ "$c" = pg2 ] && echo 2 || echo 1); label="resd pg x$n (nginx)"
      rm -rf "$SITE.b"; cp -r "$ORIG" "$SITE.b"; sync "$SITE.b/data/resd.db"
      conf="$DATA/nginx.conf"; upstreams="server 127.0.0.1:3301;"; [ "$n" = 2 ] && upstreams="$upstreams server 127.0.0.1:3302;"
      cat > "$conf" <<NGINX
worker_processes 1; pid $DATA/nginx.pid; error_log /dev/null; daemon on;
events { worker_connections 1024; }
http { access_log off;
  upstream resd { $upstreams keepalive 64; }
  server { listen 127.0.0.1:3300; location / { proxy_pass http://resd; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$host; } } }
NGINX
      for round in measure mixed; do
        fresh_db
        serve 3301 "$DB"
        if [ "$n" = 2 ]; then
          rm -f "$SITE.b/data/resd.pid"
          RESD_LOG_FORMAT=json RESD_DATABASE_URL="$DB" $RESD serve --dir "$SITE.b" --port 3302 --host 127.0.0.1 > /dev/null 2>&1 & pids+=($!)
          wait_http http://127.0.0.1:3302/health
        fi
        nginx -c "$conf"; wait_http http://127.0.0.1:3300/health
        if [ "$round" = measure ]; then measure "$label" http://127.0.0.1:3300 "Bearer $TOKEN" "$IDS"
        else bash "$SHARED/mixed/run.sh" "$label" http://127.0.0.1:3300 "Bearer $TOKEN" items; fi
        stop_all
      done ;;
  esac
  stop_all
done
