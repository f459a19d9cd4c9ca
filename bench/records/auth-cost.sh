#!/usr/bin/env bash
# Cost of authentication on GET one record: the same server, read-one with a bearer token and as an
# anonymous caller (opened by an allow file), alternated ROUNDS times so drift hits both alike.
# Run after bench/records/run.sh has seeded the site.  Env: ROUNDS=4 WRK_DURATION=8s
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"; SITE="${BENCH_DATA:-/tmp/bench-data}/resd-site"
. "$SHARED/lib.sh"
mkdir -p "$SITE/ext/uri/api/v1/items" && printf '[#api-allow get items#]\n' > "$SITE/ext/uri/api/v1/items/index.tpl"
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3303 --host 127.0.0.1 > /dev/null & PID=$!
trap 'kill $PID; rm -rf "$SITE/ext"' EXIT
wait_http http://127.0.0.1:3303/health
IDS="$(mktemp)"; curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:3303/api/v1/items?limit=1000&offset=5000" | jq -r '.items | keys[]' > "$IDS"
for r in $(seq 1 "${ROUNDS:-4}"); do
  BENCH_AUTH_HEADER="Authorization: Bearer $TOKEN" BENCH_IDS="$IDS" BENCH_PREFIX=/api/v1/items/ run_wrk "bearer read-one #$r" http://127.0.0.1:3303/ "$BENCH_LUA_DIR/get-random.lua"
  BENCH_AUTH_HEADER="" BENCH_IDS="$IDS" BENCH_PREFIX=/api/v1/items/ run_wrk "anonymous read-one #$r" http://127.0.0.1:3303/ "$BENCH_LUA_DIR/get-random.lua"
done
