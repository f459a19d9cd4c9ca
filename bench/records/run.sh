#!/usr/bin/env bash
# Record-route benchmark of issue 2, in one run on this machine:
#   hello-bun (Bun.serve hello JSON, the HTTP ceiling), bare-resd (resd's API shape straight on
#   bun:sqlite, the record-route ceiling) and resd, each on 1,000,000 records:
#   GET one, a sorted+filtered page of 20 with total, POST create (wrk, loopback, <=15 s each);
#   then resd's unpaged list of all records with its peak memory (VmHWM).
# Usage: bench/records/run.sh        (env: ROWS=1000000 WRK_DURATION=10s RESD_OPS="read list create" ANON=1)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"; ROWS="${ROWS:-1000000}"
SITE="$DATA/resd-site"
mkdir -p "$DATA"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

[ -f "$DATA/raw.db" ] || bun "$SHARED/ref/sqlite-raw.ts" "$DATA/raw.db" "$ROWS" > "$DATA/sqlite-raw.out"
bun "$HERE/seed.ts" "$SITE" "$ROWS"
bun "$ROOT/cli/main.ts" user add bench@example.com --password bench-password --role admin --api --dir "$SITE" >/dev/null 2>&1 || true
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"

PORT=3101 bun "$SHARED/ref/hello-bun.ts" > /dev/null & pids+=($!)
MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null & pids+=($!)
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3301 --host 127.0.0.1 > /dev/null & pids+=($!)
RESD_PID=$!
. "$SHARED/lib.sh"
wait_http http://127.0.0.1:3101/ && wait_http http://127.0.0.1:3201/ && wait_http http://127.0.0.1:3301/health 2>/dev/null || wait_http http://127.0.0.1:3301/api/v1/items

echo "# $(date -u +%FT%TZ) $(nproc) cores, rows=$ROWS, wrk -t${WRK_THREADS} -c${WRK_CONNS} -d${WRK_DURATION}"
run_wrk "hello-bun" "http://127.0.0.1:3101/" "$BENCH_LUA_DIR/plain.lua"
OPS="read list create" LABEL="bare-resd" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$DATA/raw.db.uuids.txt"
RESD_OPS="${RESD_OPS:-read list create}"
OPS="$RESD_OPS" LABEL="resd (bearer token)" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items
if [ "${ANON:-1}" = 1 ]; then
  # The same operations as an anonymous caller (an allow file opens them): the cost of authentication.
  mkdir -p "$SITE/ext/uri/api/v1/items"
  printf '[#api-allow get items#]\n[#api-allow post items#]\n' > "$SITE/ext/uri/api/v1/items/index.tpl"
  sleep 4 # allow files are re-read every 3 s
  OPS="$RESD_OPS" LABEL="resd (anonymous)" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "" items
  rm -rf "$SITE/ext"
fi

# Unpaged list of every record on a fresh server: bytes, time and the server's peak resident memory.
kill "$RESD_PID"; wait "$RESD_PID" 2>/dev/null || true
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3302 --host 127.0.0.1 > /dev/null & pids+=($!)
RESD_PID=$!
wait_http http://127.0.0.1:3302/health
before=$(awk '/VmHWM/{print $2}' /proc/$RESD_PID/status)
t0=$(date +%s.%N)
bytes=$(curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3302/api/v1/items | wc -c)
t1=$(date +%s.%N)
after=$(awk '/VmHWM/{print $2}' /proc/$RESD_PID/status)
printf 'resd unpaged list: %s bytes in %.1f s; server peak RSS %d MB before, %d MB after\n' "$bytes" "$(echo "$t1 - $t0" | bc)" $((before / 1024)) $((after / 1024))
