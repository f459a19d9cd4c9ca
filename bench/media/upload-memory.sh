#!/usr/bin/env bash
# Peak memory of the server during one large upload: shows the body is streamed, not held.
#   bench/media/upload-memory.sh [MiB=200]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
MIB="${1:-200}"; PORT="${RESD_PORT:-3303}"
SITE="$(mktemp -d /tmp/resd-bench-upload.XXXXXX)"; BLOB="$SITE/../resd-upload-$MIB.bin"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$SITE" "$BLOB"; }
trap cleanup EXIT
head -c "$((MIB * 1024 * 1024))" /dev/urandom > "$BLOB"
bun "$ROOT/cli/main.ts" user add up@example.com --password bench-password --role admin --api --dir "$SITE" >/dev/null
TOKEN="$(bun "$ROOT/cli/main.ts" token up@example.com --dir "$SITE")"
RESD_MAX_UPLOAD=$(((MIB + 10) * 1024 * 1024)) RESD_LOG_FORMAT=json bun "$ROOT/cli/main.ts" serve --dir "$SITE" --port "$PORT" --host 127.0.0.1 >/dev/null & pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.2; done
before=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
curl -s -o /dev/null -w "upload of $MIB MiB: %{http_code} in %{time_total} s\n" -H "Authorization: Bearer $TOKEN" -F "file=@$BLOB" "http://127.0.0.1:$PORT/api/v1/.files"
after=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
echo "server peak RSS: $((before / 1024)) MiB before, $((after / 1024)) MiB after"
