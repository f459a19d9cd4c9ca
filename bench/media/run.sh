#!/usr/bin/env bash
# Media benchmark of issue 4, in one run on this machine (loopback only, wrk <= 15 s a run):
#   1. a cached /img hit (GET /img/{uuid}/800w, WebP already on disk) against
#      /work/shared/bench/ref/static-file.ts serving the very same bytes with a bare Bun.serve;
#   2. a first resize of a 12 MP JPEG to 800w WebP against a bare sharp call, same process
#      (bench/media/first-resize.ts).
# Usage: bench/media/run.sh      (env: WRK_THREADS=2 WRK_CONNS=64 WRK_DURATION=10s, ROUNDS=9)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$ROOT/../shared/bench}"
DATA="${BENCH_DATA:-/tmp/bench-data}"
SITE="$(mktemp -d /tmp/resd-bench-media-site.XXXXXX)"
PHOTO="$DATA/photo-12mp.jpg"
CACHED="$DATA/media-800w.webp"
RESD_PORT="${RESD_PORT:-3302}"; STATIC_PORT="${STATIC_PORT:-3103}"
mkdir -p "$DATA"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$SITE"; }
trap cleanup EXIT

# 2 first: it also makes the 12 MP JPEG when it is missing (same generator as ref/image-resize.ts).
echo "# $(date -u +%FT%TZ) $(nproc) cores"
bun "$HERE/first-resize.ts" "${ROUNDS:-9}"

bun "$ROOT/cli/main.ts" user add bench@example.com --password bench-password --role admin --api --dir "$SITE" >/dev/null
TOKEN="$(bun "$ROOT/cli/main.ts" token bench@example.com --dir "$SITE")"
RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port "$RESD_PORT" --host 127.0.0.1 > /dev/null & pids+=($!)
. "$SHARED/lib.sh"
wait_http "http://127.0.0.1:$RESD_PORT/health"
UUID="$(curl -s -H "Authorization: Bearer $TOKEN" -F "file=@$PHOTO;type=image/jpeg" "http://127.0.0.1:$RESD_PORT/api/v1/.files" | jq -r '.files | keys[0]')"
IMG="http://127.0.0.1:$RESD_PORT/img/$UUID/800w"
curl -s -o "$CACHED" -w '# first /img (cache miss over HTTP): %{http_code} in %{time_total} s, %{size_download} bytes\n' "$IMG"
FILE="$CACHED" PORT="$STATIC_PORT" bun "$SHARED/ref/static-file.ts" > /dev/null & pids+=($!)
wait_http "http://127.0.0.1:$STATIC_PORT/"
cmp -s "$CACHED" <(curl -s "$IMG") && echo "# both serve the same $(stat -c %s "$CACHED") bytes"

echo "# wrk -t${WRK_THREADS} -c${WRK_CONNS} -d${WRK_DURATION}"
run_wrk "static-file (bare Bun.serve)" "http://127.0.0.1:$STATIC_PORT/" "$BENCH_LUA_DIR/plain.lua"
run_wrk "resd /img cached hit" "$IMG" "$BENCH_LUA_DIR/plain.lua"
