#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite's second run: started as the unprivileged
# `postgres` user (Debian's package makes it), listening on 127.0.0.1 only, trust authentication
# for loopback, data in a temporary folder that `stop` removes.
#   scripts/postgres.sh start [PORT]   → prints the URL to use as RESD_TEST_DATABASE_URL
#   scripts/postgres.sh stop [PORT]
# RESD_PG_DURABLE=1: fsync and synchronous commit on (benches); RESD_PG_SHARED_BUFFERS (256MB).
# One folder per port (default 55432), so a second cluster never removes a running one's data.
set -euo pipefail
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
STATE=${RESD_PG_STATE:-/tmp/resd-ci-postgres-${2:-55432}}
case "${1:-}" in
  start)
    PORT=${2:-55432}
    [ -n "$BIN" ] || { echo "postgres.sh: PostgreSQL is not installed (apt-get install -y postgresql)" >&2; exit 1; }
    RUNAS=(); [ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
    rm -rf "$STATE"; mkdir -p "$STATE"; chown "$( [ "$(id -u)" = 0 ] && echo postgres || id -un)" "$STATE"
    "${RUNAS[@]}" "$BIN/initdb" -D "$STATE/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$STATE/initdb.log" 2>&1 \
      || { cat "$STATE/initdb.log" >&2; exit 1; }
    # Many test sites at once, each with its own connection pool: room for them.
    FAST="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${RESD_PG_DURABLE:-}" = 1 ] && FAST=""
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$STATE/data" -l "$STATE/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -k $STATE -c max_connections=400 $FAST -c shared_buffers=${RESD_PG_SHARED_BUFFERS:-256MB}" start >/dev/null \
      || { cat "$STATE/server.log" >&2; exit 1; }
    echo "postgres://postgres@127.0.0.1:$PORT/postgres"
    ;;
  stop)
    RUNAS=(); [ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
    [ -d "$STATE/data" ] && "${RUNAS[@]}" "$BIN/pg_ctl" -D "$STATE/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$STATE"
    ;;
  *) echo "usage: scripts/postgres.sh start [PORT] | stop [PORT]" >&2; exit 2 ;;
esac
