#!/usr/bin/env bash
# POST create alone: bare-resd and resd side by side (http-bench.sh OPS=create, wrk -t2 -c64, 10 s), alternating rounds, 1M records.
# Usage: bench/records/create-alone.sh [ROUNDS]     (after bench/records/mixed.sh prepared /tmp/bench-data)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"; DATA="${BENCH_DATA:-/tmp/bench-data}"
ORIG="${SITE_ORIG:-$DATA/resd-site.orig}"; SITE="$DATA/resd-site"; ROUNDS="${1:-2}"
pids=(); cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }; trap cleanup EXIT
. "$SHARED/lib.sh"
rm -f "$DATA/raw.db" "$DATA/raw.db-wal" "$DATA/raw.db-shm"; cp "$DATA/raw.db.orig" "$DATA/raw.db"
rm -rf "$SITE"; cp -r "$ORIG" "$SITE"
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 & pids+=($!)
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3301 --host 127.0.0.1 > /dev/null 2>&1 & pids+=($!)
wait_http http://127.0.0.1:3201/ && wait_http http://127.0.0.1:3301/health
for round in $(seq "$ROUNDS"); do
  OPS=create LABEL="bare-resd #$round" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$DATA/raw.uuids.txt" | grep -v '^#'
  OPS=create LABEL="resd #$round" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$DATA/resd.uuids.txt" | grep -v '^#'
done
