#!/usr/bin/env bash
# GET one record: bare-resd and resd, alternating three rounds (wrk -t2 -c64, 10 s each), 1M records.
# Usage: [PIN=1] [ROUNDS="1 2 3"] [RESD_ENV="RESD_X=…"] bench/records/get-one.sh     (after bench/records/mixed.sh prepared /tmp/bench-data)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/pair.sh"
[ -f "$DATA/resd.uuids.txt" ] || bun -e "import { Database } from 'bun:sqlite'; const d = new Database('$SITE/data/resd.db', { readonly: true }); console.log(d.query('SELECT uuid FROM \"r:items\" ORDER BY random() LIMIT 10000').all().map((r) => r.uuid).join('\n'))" > "$DATA/resd.uuids.txt"
for round in ${ROUNDS:-1 2 3}; do
  OPS=read LABEL="bare-resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$DATA/raw.uuids.txt" | grep -v '^#'
  OPS=read LABEL="resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$DATA/resd.uuids.txt" | grep -v '^#'
done
