#!/usr/bin/env bash
# Cost of a personal API key against a bearer token on GET one record: one site (10,000 records),
# read-one with a JWT bearer token and with an API key (`resd token create`), alternated ROUNDS times
# so drift hits both alike. Then the password-reset answer's time for an address with an account
# and one without (the floor makes them alike). Loopback only; stops only what it started.
# Env: ROUNDS=3 WRK_DURATION=8s
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
. "$SHARED/lib.sh"
SITE="$(mktemp -d)"; PORT=3311
mkdir -p "$SITE/resources"
echo '{ "fields": { "title": { "type": "text" }, "year": { "type": "number" }, "status": { "type": "text" } } }' > "$SITE/resources/items.json"
resd() { bun "$ROOT/cli/main.ts" "$@" --dir "$SITE"; }
resd user add bench@example.com --password bench-password-1 --role admin --api > /dev/null
{ echo "title,year,status"; for i in $(seq 1 10000); do echo "item $i,$((1990 + i % 30)),new"; done; } > "$SITE/items.csv"
resd import items "$SITE/items.csv" > /dev/null
TOKEN="$(resd token bench@example.com)"
KEY="$(resd token create bench@example.com --name bench --json | jq -r .key)"
RESD_LOG_FORMAT=json RESD_SMTP_URL=smtp://127.0.0.1:9 RESD_PUBLIC_URL=http://127.0.0.1 bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port $PORT --host 127.0.0.1 > /dev/null 2>&1 & PID=$!
trap 'kill $PID; rm -rf "$SITE"' EXIT
wait_http "http://127.0.0.1:$PORT/health"
IDS="$(mktemp)"; curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/items?limit=1000" | jq -r '.items | keys[]' > "$IDS"
for r in $(seq 1 "${ROUNDS:-3}"); do
  BENCH_AUTH_HEADER="Authorization: Bearer $TOKEN" BENCH_IDS="$IDS" BENCH_PREFIX=/api/v1/items/ run_wrk "token read-one #$r" "http://127.0.0.1:$PORT/" "$BENCH_LUA_DIR/get-random.lua"
  BENCH_AUTH_HEADER="Authorization: Bearer $KEY" BENCH_IDS="$IDS" BENCH_PREFIX=/api/v1/items/ run_wrk "api-key read-one #$r" "http://127.0.0.1:$PORT/" "$BENCH_LUA_DIR/get-random.lua"
done
# The reset answer's time: 10 each, alternating (3 per address an hour: a new address each time).
for i in $(seq 1 10); do
  resd user add "known$i@example.com" --password known-password-1 > /dev/null
  k=$(curl -s -o /dev/null -w '%{time_total}' -H 'content-type: application/json' -d "{\"email\":\"known$i@example.com\"}" "http://127.0.0.1:$PORT/api/v1/session/password-reset")
  u=$(curl -s -o /dev/null -w '%{time_total}' -H 'content-type: application/json' -d "{\"email\":\"unknown$i@example.com\"}" "http://127.0.0.1:$PORT/api/v1/session/password-reset")
  echo "reset answer #$i: account ${k}s, no account ${u}s"
done
