#!/usr/bin/env bash
# Realtime on one server (SQLite): create rate and delivery latency with no subscribers, then with
# 1,000 (4 processes x 250 SSE streams, bench/realtime/subscribers.ts), server memory idle and under
# load. One run, 127.0.0.1 only; stops only the processes it started. See bench/realtime/README.md.
# Usage: bench/realtime/run.sh     env: COUNT=3000 CONC=8 RATE=200 PROCS=4 PER_PROC=250 IDLE_S=30
#          REV=HEAD|worktree  PIN=1 (server on CPU 0, clients on CPU 1)  OUT=results file  PLAN=steps
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
PROCS="${PROCS:-4}"; PER_PROC="${PER_PROC:-250}"; MAXU=$((PROCS * PER_PROC + 100))
OUT="${OUT:-$HERE/results-$(date +%Y-%m-%d-%H%M).txt}"
SITE="$(mktemp -d /tmp/resd-bench-realtime-site.XXXXXX)"; tmps+=("$SITE")
mkdir -p "$SITE/resources"; echo "$NOTES_DEF" > "$SITE/resources/notes.json"
bun "$RESD/cli/main.ts" user add admin@example.com --password admin-password --role admin --api --dir "$SITE" > /dev/null
TOKEN="$(bun "$RESD/cli/main.ts" token admin@example.com --dir "$SITE")"
start_server "$SITE" "$SITE/server.log" RESD_REALTIME_MAX_STREAMS_PER_USER=$MAXU
{
  header "bench/realtime/run.sh (one server, SQLite)"
  echo "# command: COUNT=${COUNT:-3000} CONC=${CONC:-8} RATE=${RATE:-200} PROCS=$PROCS PER_PROC=$PER_PROC IDLE_S=${IDLE_S:-30} PIN=${PIN:-0} REV=$REV bench/realtime/run.sh"
  echo "# server: RESD_REALTIME_MAX_STREAMS_PER_USER=$MAXU RESD_TOKEN_TTL=3600 resd serve --dir SITE --port 0 --host 127.0.0.1 → $SERVER_URL; notes: $NOTES_DEF"
  BASE="$SERVER_URL" TOKEN="$TOKEN" SERVERS="server:$SERVER_PID" SUBS="subs,$SERVER_URL,$PROCS,$PER_PROC" \
    PLAN="${PLAN:-warmup alone-flat alone-steady subscribe idle subs-steady@50 subs-steady subs-flat after}" \
    "${pin_clients[@]}" bun "$HERE/drive.ts"
  echo
  server_log_summary server "$SITE/server.log" "$SERVER_PID"
} 2>&1 | tee "$OUT"
echo "results: $OUT"
