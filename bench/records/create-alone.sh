#!/usr/bin/env bash
# POST create alone: bare-resd and resd side by side (http-bench.sh OPS=create, wrk -t2 -c64, 10 s), alternating rounds, 1M records.
# Usage: bench/records/create-alone.sh [ROUNDS]     (after bench/records/mixed.sh prepared /tmp/bench-data)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/pair.sh"
ROUNDS="${1:-2}"
for round in $(seq "$ROUNDS"); do
  OPS=create LABEL="bare-resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$DATA/raw.uuids.txt" | grep -v '^#'
  OPS=create LABEL="resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$DATA/resd.uuids.txt" | grep -v '^#'
done
