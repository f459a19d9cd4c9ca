#!/usr/bin/env bash
# GET one record: bare-resd and resd, alternating three rounds (wrk -t2 -c64, 10 s each), 1M records.
# Usage: bench/records/get-one.sh     (after bench/records/mixed.sh prepared /tmp/bench-data)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"; DATA="${BENCH_DATA:-/tmp/bench-data}"
ORIG="${SITE_ORIG:-$DATA/resd-site.orig}"; SITE="$DATA/resd-site"
pids=(); cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }; trap cleanup EXIT
. "$SHARED/lib.sh"
rm -f "$DATA/raw.db" "$DATA/raw.db-wal" "$DATA/raw.db-shm"; cp "$DATA/raw.db.orig" "$DATA/raw.db"
rm -rf "$SITE"; cp -r "$ORIG" "$SITE"
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 & pids+=($!)
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3301 --host 127.0.0.1 > /dev/null 2>&1 & pids+=($!)
wait_http http://127.0.0.1:3201/ && wait_http http://127.0.0.1:3301/health
[ -f "$DATA/resd.uuids.txt" ] || bun -e "import { Database } from 'bun:sqlite'; const d = new Database('$SITE/data/resd.db', { readonly: true }); console.log(d.query('SELECT uuid FROM \"r:items\" ORDER BY random() LIMIT 10000').all().map((r) => r.uuid).join('\n'))" > "$DATA/resd.uuids.txt"
for round in 1 2 3; do
  OPS=read LABEL="bare-resd #$round" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$DATA/raw.uuids.txt" | grep -v '^#'
  OPS=read LABEL="resd #$round" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$DATA/resd.uuids.txt" | grep -v '^#'
done
