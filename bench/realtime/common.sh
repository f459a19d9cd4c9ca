# Sourced by bench/realtime/run.sh and two-instances.sh. Sets HERE, ROOT, RESD (the resd checkout
# that is measured), REV_NOTE; defines start_server, header and cleanup (stops only what was started
# here: the PIDs in $pids, and removes the temporary folders in $tmps).
# REV: the commit measured (default HEAD: `git archive` of it into a temporary folder, node_modules
# linked, so that uncommitted edits in the work tree are not measured); REV=worktree runs the work tree.
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../.." && pwd)"
pids=(); tmps=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for d in "${tmps[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
REV="${REV:-HEAD}"
if [ "$REV" = worktree ]; then
  RESD="$ROOT"
  REV_NOTE="work tree at $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src cli 2>/dev/null || echo ' with uncommitted changes in src/ or cli/')"
else
  RESD="$(mktemp -d /tmp/resd-bench-realtime-code.XXXXXX)"; tmps+=("$RESD")
  git -C "$ROOT" archive "$REV" | tar -x -C "$RESD"
  ln -s "$ROOT/node_modules" "$RESD/node_modules"
  REV_NOTE="commit $(git -C "$ROOT" rev-parse --short "$REV") (git archive of $REV; the work tree's uncommitted edits not included)"
fi
export RESD_TOKEN_TTL=3600
NOTES_DEF='{"fields":{"title":{"type":"text"},"n":{"type":"number"},"sent":{"type":"number"},"phase":{"type":"text"}}}'

# start_server SITE LOG [env assignments…]: starts `resd serve` on a free port; sets SERVER_PID and SERVER_URL.
start_server() {
  local site="$1" log="$2"; shift 2
  env "$@" RESD_LOG_FORMAT=json "${pin_server[@]}" bun "$RESD/cli/main.ts" serve --dir "$site" --port 0 --host 127.0.0.1 > "$log" 2>&1 &
  SERVER_PID=$!; pids+=("$SERVER_PID"); SERVER_URL=""
  for _ in $(seq 150); do
    SERVER_URL="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)"
    [ -n "$SERVER_URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$log" >&2; exit 1
}
pin_server=(); pin_clients=(); if [ "${PIN:-}" = 1 ]; then pin_server=(taskset -c 0); pin_clients=(taskset -c 1); fi

header() { # title
  echo "# $1 — $(date -u +%FT%TZ), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GB RAM, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# resd $REV_NOTE; bun $(bun --version); git rev of the bench: $(git -C "$ROOT" rev-parse --short HEAD)"
}

# server_log_summary LABEL LOG PID
server_log_summary() {
  echo "# $1 log: $(grep -c '"level":"error"' "$2" || true) error lines, $(grep -c '"level":"warn"' "$2" || true) warnings"
  grep -m5 '"level":"\(error\|warn\)"' "$2" | cut -c1-400 || true
  if kill -0 "$3" 2>/dev/null; then echo "# $1 still running at the end (pid $3)"; else echo "# $1 DIED (pid $3); log tail:"; tail -20 "$2"; fi
}
