#!/usr/bin/env bash
# Real-traffic benchmark (issue "fast where it matters"), one run on this machine, 1,000,000 records:
# ../shared/bench/mixed/run.sh (random pages under writes, pages alone, search) and
# ../shared/bench/mixed/steady-mix.sh (reads, pages, creates, year pages at once) against
# bare-resd with the exact count, bare-resd TOTAL=0 (no count) and resd, one after the other.
# Usage: bench/records/mixed.sh          (env: ROWS=1000000 D=10s MIX_SECONDS=40 ONLY="bare bare0 resd")
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"; ROWS="${ROWS:-1000000}"; SITE="$DATA/resd-site"
ONLY="${ONLY:-bare bare0 resd}"; MIX_SECONDS="${MIX_SECONDS:-40}"
# The seeded site each resd run starts from (copied fresh every run).
ORIG="${SITE_ORIG:-$DATA/resd-site.orig}"
mkdir -p "$DATA"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT
. "$SHARED/lib.sh"

# Fresh copies each run: the creates of one run would otherwise grow the next one's tables.
[ -f "$DATA/raw.db.orig" ] || { bun "$SHARED/ref/sqlite-raw.ts" "$DATA/raw.db.orig" "$ROWS" > "$DATA/sqlite-raw.out"; mv "$DATA/raw.db.orig.uuids.txt" "$DATA/raw.uuids.txt" 2>/dev/null || true; }
[ -d "$ORIG" ] || { bun "$HERE/seed.ts" "$ORIG" "$ROWS"; bun "$ROOT/cli/main.ts" user add bench@example.com --password bench-password --role admin --api --dir "$ORIG" >/dev/null; }
# Derived structures (search index, counts) are built once here, not timed in the runs.
bun "$ROOT/cli/main.ts" migrate --dir "$ORIG" > /dev/null

start() { # name
  case "$1" in
    bare|bare0)
      rm -f "$DATA/raw.db" "$DATA/raw.db-wal" "$DATA/raw.db-shm"; cp "$DATA/raw.db.orig" "$DATA/raw.db"; sync "$DATA/raw.db"
      TOTAL=$([ "$1" = bare0 ] && echo 0 || echo 1) MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 &
      pid=$!; BASE=http://127.0.0.1:3201; AUTH="Bearer bench"; IDS="$DATA/raw.uuids.txt"; wait_http "$BASE/" ;;
    resd)
      rm -rf "$SITE"; cp -r "$ORIG" "$SITE"; sync "$SITE/data/resd.db"
      TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
      RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3301 --host 127.0.0.1 > /dev/null 2>&1 &
      pid=$!; BASE=http://127.0.0.1:3301; AUTH="Bearer $TOKEN"; wait_http "$BASE/health"
      IDS="$DATA/resd.uuids.txt"
      [ -f "$IDS" ] || bun -e "import { Database } from 'bun:sqlite'; const d = new Database('$SITE/data/resd.db', { readonly: true }); console.log(d.query('SELECT uuid FROM \"r:items\" ORDER BY random() LIMIT 10000').all().map((r) => r.uuid).join('\n'))" > "$IDS" ;;
  esac
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, rows=$ROWS, D=${D:-10s}, mix ${MIX_SECONDS}s"
for s in $ONLY; do
  label=$([ "$s" = bare ] && echo "bare-resd (count)" || ([ "$s" = bare0 ] && echo "bare-resd TOTAL=0" || echo "resd"))
  start "$s"; bash "$SHARED/mixed/run.sh" "$label" "$BASE" "$AUTH" items; stop
  start "$s"; bash "$SHARED/mixed/steady-mix.sh" "$label" "$BASE" "$AUTH" "$IDS" "$MIX_SECONDS"; stop
done
