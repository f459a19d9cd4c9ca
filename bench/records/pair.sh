# Sourced by the side-by-side benchmarks (get-one.sh, create-alone.sh): fresh copies of the bare
# database and the resd site, bare-resd on :3201 and resd on :3301, both stopped on exit. Sets
# ROOT, SHARED, DATA, SITE and TOKEN (resd's bearer token); the caller sets HERE. PIN=1 puts both
# servers on CPU 0 and the load (`$LOAD`, prefix for http-bench.sh) on CPU 1 with one wrk thread:
# less noise than two processes sharing two cores. RESD_ENV adds settings to resd's environment.
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"; DATA="${BENCH_DATA:-/tmp/bench-data}"
ORIG="${SITE_ORIG:-$DATA/resd-site.orig}"; SITE="$DATA/resd-site"
pids=(); cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }; trap cleanup EXIT
. "$SHARED/lib.sh"
rm -f "$DATA/raw.db" "$DATA/raw.db-wal" "$DATA/raw.db-shm"; cp "$DATA/raw.db.orig" "$DATA/raw.db"; sync "$DATA/raw.db"
rm -rf "$SITE"; cp -r "$ORIG" "$SITE"; sync "$SITE/data/resd.db"
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
pin=(); LOAD=(); if [ "${PIN:-}" = 1 ]; then pin=(taskset -c 0); LOAD=(taskset -c 1); export WRK_THREADS=1; fi
MODE=bun PORT=3201 DB="$DATA/raw.db" RESOURCE=items TOKEN=bench "${pin[@]}" bun "$SHARED/ref/bare-resd.ts" > /dev/null 2>&1 & pids+=($!)
env RESD_LOG_FORMAT=json ${RESD_ENV:-} "${pin[@]}" bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port 3301 --host 127.0.0.1 > /dev/null 2>&1 & pids+=($!)
wait_http http://127.0.0.1:3201/ && wait_http http://127.0.0.1:3301/health
