#!/usr/bin/env bash
# Creates with a `job:` entry on every write while the worker runs: creates/s (wrk, loopback, 8 s)
# and how many jobs were done in the run. A no-op handler, so the queue's own cost is measured.
#   bash bench/hooks/job-throughput.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"; SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
S="$(mktemp -d)"; mkdir -p "$S/resources" "$S/ext"
echo '{"fields":{"title":{"type":"text"},"year":{"type":"number"},"status":{"type":"text"}},"events":{"create":["job:noop"]}}' > "$S/resources/items.json"
echo 'export default function (api) { api.job("noop", () => {}); }' > "$S/ext/noop.ts"
bun "$ROOT/cli/main.ts" user add a@example.com --password pw --role admin --api --dir "$S" > /dev/null
T="$(bun "$ROOT/cli/main.ts" token a@example.com --dir "$S")"
bun "$ROOT/cli/main.ts" serve --dir "$S" --port 3370 --host 127.0.0.1 > /dev/null 2>&1 & P=$!
trap 'kill $P; rm -rf "$S"' EXIT
sleep 1.5
BENCH_LUA_DIR="$SHARED/lua" BENCH_AUTH_HEADER="Authorization: Bearer $T" BENCH_PATH=/api/v1/items \
  wrk -t2 -c64 -d8s -s "$SHARED/lua/post-create.lua" http://127.0.0.1:3370/ | grep RESULT
sleep 3
bun -e "const {Database}=require('bun:sqlite'); const d=new Database('$S/data/resd.db',{readonly:true}); console.log('jobs by state 3 s after the run:', JSON.stringify(d.query(\"SELECT state, count(*) n FROM _resd_jobs GROUP BY state\").all()))"
