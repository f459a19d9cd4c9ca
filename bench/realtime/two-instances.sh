#!/usr/bin/env bash
# Realtime across instances: two resd servers (A and B) on one PostgreSQL database, the same
# definitions and the same RESD_TOKEN_SECRET (B's site folder is a copy of A's, .env included).
# Subscribers on B (default 2 processes x 100 streams: 20,000 events/s at 100 creates/s, which the
# 2-core machine delivers without running out of CPU; PROCS=4 PER_PROC=250 for 1,000), a few on A too (1 x 50: the same-instance
# reference), creates on A at a steady rate (default 100/s for 20 s): A-commit→B-receipt latency and
# events missed. PostgreSQL: scripts/postgres.sh on PG_PORT (a throwaway cluster, removed at the end).
# Usage: bench/realtime/two-instances.sh   env: RATE=100 COUNT=2000 CONC=8 PROCS=2 PER_PROC=100
#          LOCAL_PER=50 PG_PORT=55461 PG_DURABLE=1 (fsync and synchronous commit on) REV=HEAD|worktree OUT=…
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
PROCS="${PROCS:-2}"; PER_PROC="${PER_PROC:-100}"; LOCAL_PER="${LOCAL_PER:-50}"; MAXU=$((PROCS * PER_PROC + LOCAL_PER + 100))
RATE="${RATE:-100}"; COUNT="${COUNT:-2000}"; PG_PORT="${PG_PORT:-55461}"
OUT="${OUT:-$HERE/results-two-instances-$(date +%Y-%m-%d-%H%M).txt}"
export RESD_PG_STATE="/tmp/resd-bench-realtime-pg-$PG_PORT" RESD_PG_DURABLE="${PG_DURABLE:-1}"
if (exec 3<>"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; then echo "port $PG_PORT is in use: set PG_PORT" >&2; exit 1; fi
PG="$(bash "$ROOT/scripts/postgres.sh" start "$PG_PORT")"
stop_pg() { bash "$ROOT/scripts/postgres.sh" stop "$PG_PORT"; }
trap 'cleanup; stop_pg' EXIT
psql "$PG" -qXc "CREATE DATABASE resd_realtime_bench"
DB="${PG%/postgres}/resd_realtime_bench"
SITE_A="$(mktemp -d /tmp/resd-bench-realtime-a.XXXXXX)"; SITE_B="$(mktemp -d /tmp/resd-bench-realtime-b.XXXXXX)"; tmps+=("$SITE_A" "$SITE_B")
mkdir -p "$SITE_A/resources"; echo "$NOTES_DEF" > "$SITE_A/resources/notes.json"
RESD_DATABASE_URL="$DB" bun "$RESD/cli/main.ts" user add admin@example.com --password admin-password --role admin --api --dir "$SITE_A" > /dev/null
TOKEN="$(RESD_DATABASE_URL="$DB" bun "$RESD/cli/main.ts" token admin@example.com --dir "$SITE_A")"
rm -rf "$SITE_B"; cp -r "$SITE_A" "$SITE_B"; rm -f "$SITE_B/data/resd.pid"
start_server "$SITE_A" "$SITE_A/server.log" RESD_DATABASE_URL="$DB" RESD_REALTIME_MAX_STREAMS_PER_USER=$MAXU; A_PID=$SERVER_PID; A_URL=$SERVER_URL
start_server "$SITE_B" "$SITE_B/server.log" RESD_DATABASE_URL="$DB" RESD_REALTIME_MAX_STREAMS_PER_USER=$MAXU; B_PID=$SERVER_PID; B_URL=$SERVER_URL
# The token made on A works on B (same secret, same database).
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$B_URL/api/v1/notes?limit=1")" = 200 ] || { echo "the token does not work on B" >&2; exit 1; }
{
  header "bench/realtime/two-instances.sh (two servers, one PostgreSQL database)"
  echo "# PostgreSQL $(psql "$PG" -XtAc 'SHOW server_version') on 127.0.0.1:$PG_PORT (scripts/postgres.sh, fsync $(psql "$PG" -XtAc 'SHOW fsync'), synchronous_commit $(psql "$PG" -XtAc 'SHOW synchronous_commit'))"
  echo "# command: RATE=$RATE COUNT=$COUNT CONC=${CONC:-8} PROCS=$PROCS PER_PROC=$PER_PROC LOCAL_PER=$LOCAL_PER PG_DURABLE=$RESD_PG_DURABLE PIN=${PIN:-0} REV=$REV bench/realtime/two-instances.sh"
  echo "# servers: RESD_DATABASE_URL=…/resd_realtime_bench RESD_REALTIME_MAX_STREAMS_PER_USER=$MAXU RESD_TOKEN_TTL=3600 resd serve --dir SITE_A|SITE_B --port 0 → A $A_URL, B $B_URL"
  echo "# writes go to A; 'B' streams are on B (the latency asked about: A-commit→B-receipt), 'A-local' streams on A (reference)"
  BASE="$A_URL" TOKEN="$TOKEN" COUNT="$COUNT" RATE="$RATE" SERVERS="A:$A_PID,B:$B_PID" WARMUP="${WARMUP:-300}" \
    OURS_TREE="$(head -1 "$RESD_PG_STATE/data/postmaster.pid")" OURS_TREE_LABEL=PostgreSQL \
    SUBS="B,$B_URL,$PROCS,$PER_PROC;A-local,$A_URL,1,$LOCAL_PER" PLAN="${PLAN:-subscribe warmup subs-steady after}" IDLE_S=10 \
    "${pin_clients[@]}" bun "$HERE/drive.ts"
  echo
  server_log_summary A "$SITE_A/server.log" "$A_PID"
  server_log_summary B "$SITE_B/server.log" "$B_PID"
} 2>&1 | tee "$OUT"
echo "results: $OUT"
