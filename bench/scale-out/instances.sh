#!/usr/bin/env bash
# One instance or two on one PostgreSQL database, both behind nginx, alternating on one durable
# cluster: random pages (c32) while creates run (c8), after WARM seconds of the same mix.
# run.sh measures from cold caches, where two instances pay for filling two caches (each reads
# every page it serves once); this shows what they serve once both are warm.
# Each run starts from a fresh copy of the same 1M records (a template database made at the start).
# Usage: bench/scale-out/instances.sh      env: ROUNDS=2 WARM=20 D=10s PG_PORT=55441 BENCH_DATA=/tmp/bench-data
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"; ORIG="$DATA/resd-site.orig"
ROUNDS="${ROUNDS:-2}"; WARM="${WARM:-20}"; D="${D:-10s}"; PG_PORT="${PG_PORT:-55441}"
export RESD_PG_STATE=/tmp/resd-instances-postgres RESD_PG_DURABLE=1
. "$SHARED/lib.sh"
PG=$(bash "$ROOT/scripts/postgres.sh" start "$PG_PORT"); PG="${PG%/postgres}"
pids=(); ngpid=""
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); [ -n "$ngpid" ] && { kill "$ngpid" 2>/dev/null || true; wait "$ngpid" 2>/dev/null || true; }; ngpid=""; }
trap 'stop_all; bash "$ROOT/scripts/postgres.sh" stop "$PG_PORT"' EXIT
psql "$PG/postgres" -qXc "CREATE DATABASE resd_inst_orig"
bun "$ROOT/cli/main.ts" migrate --dir "$ORIG" --to "$PG/resd_inst_orig" > /dev/null
psql "$PG/resd_inst_orig" -qXc "VACUUM ANALYZE"
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(git -C "$ROOT" rev-parse --short HEAD), PostgreSQL $(psql "$PG/postgres" -XtAc 'SHOW server_version'), warm-up ${WARM}s, D=$D"
export BENCH_LUA_DIR="$SHARED/lua" BENCH_RESOURCE=items BENCH_PATH=/api/v1/items
for round in $(seq "$ROUNDS"); do
  for n in 1 2; do
    psql "$PG/postgres" -qXc "DROP DATABASE IF EXISTS resd_inst WITH (FORCE)" -qXc "CREATE DATABASE resd_inst TEMPLATE resd_inst_orig"
    ups=""
    for i in $(seq "$n"); do
      site="$DATA/instances-site$i"; rm -rf "$site"; cp -r "$ORIG" "$site"; rm -f "$site/data/resd.pid"
      RESD_DATABASE_URL="$PG/resd_inst" bun "$ROOT/cli/main.ts" serve --dir "$site" --port $((3410 + i)) --host 127.0.0.1 > /dev/null 2>&1 & pids+=($!)
      ups="$ups server 127.0.0.1:$((3410 + i));"
    done
    for i in $(seq "$n"); do wait_http "http://127.0.0.1:$((3410 + i))/health"; done
    cat > "$DATA/instances-nginx.conf" <<NG
worker_processes 1; pid $DATA/instances-nginx.pid; error_log /dev/null; daemon off;
events { worker_connections 1024; }
http { access_log off; upstream resd { $ups keepalive 64; }
  server { listen 127.0.0.1:3410; location / { proxy_pass http://resd; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$host; } } }
NG
    nginx -c "$DATA/instances-nginx.conf" & ngpid=$!
    wait_http http://127.0.0.1:3410/health
    TOKEN=$(RESD_DATABASE_URL="$PG/resd_inst" bun "$ROOT/cli/main.ts" token bench@example.com --dir "$DATA/instances-site1")
    export BENCH_AUTH_HEADER="Authorization: Bearer $TOKEN"
    label="x$n behind nginx"
    # The warm-up is the measured mix: the create path, the notices and their revisions are compiled
    # and warm too, not only the pages (pages alone left two processes' JIT work in the measurement).
    timeout 90 wrk -t1 -c8 -d"${WARM}s" --timeout 10s -s "$SHARED/lua/post-create.lua" http://127.0.0.1:3410/ > /dev/null 2>&1 &
    wwarm=$!
    timeout 90 wrk -t1 -c32 -d"${WARM}s" --timeout 10s -s "$SHARED/mixed/page-random.lua" http://127.0.0.1:3410/ > /dev/null 2>&1 || true
    wait $wwarm || true
    out=$(mktemp -d)
    timeout 40 wrk -t1 -c8 -d"$D" --timeout 10s --latency -s "$SHARED/lua/post-create.lua" http://127.0.0.1:3410/ > "$out/w" 2>&1 &
    wpid=$!; sleep 1
    timeout 40 wrk -t1 -c32 -d"$D" --timeout 10s --latency -s "$SHARED/mixed/page-random.lua" http://127.0.0.1:3410/ > "$out/r" 2>&1 || true
    wait $wpid || true
    printf 'round %s %-16s warm pages under writes: %s\n' "$round" "$label" "$(grep '^RESULT' "$out/r" | sed 's/^RESULT //')"
    printf 'round %s %-16s creates meanwhile:       %s\n' "$round" "$label" "$(grep '^RESULT' "$out/w" | sed 's/^RESULT //')"
    rm -rf "$out"
    stop_all
  done
done
