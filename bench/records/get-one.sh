#!/usr/bin/env bash
# GET one record: bare-resd and resd, alternating three rounds (wrk -t2 -c64, 10 s each), 1M records.
# Each reads records at random from a list of SPREAD uuids (default 10,000, the harness's list; a
# larger one reads mostly records resd has not kept, see docs/records.md "Reading one record").
# Usage: [PIN=1] [ROUNDS="1 2 3"] [SPREAD=300000] [RESD_ENV="RESD_X=…"] bench/records/get-one.sh
#        (after bench/records/mixed.sh prepared /tmp/bench-data)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/pair.sh"
SPREAD="${SPREAD:-10000}"
ids() { # database table out
  [ -f "$3" ] || bun -e "import { Database } from 'bun:sqlite'; const d = new Database('$1', { readonly: true }); console.log(d.query('SELECT uuid FROM \"$2\" ORDER BY random() LIMIT $SPREAD').all().map((r) => r.uuid).join('\n'))" > "$3"
}
if [ "$SPREAD" = 10000 ]; then RESD_IDS="$DATA/resd.uuids.txt"; RAW_IDS="$DATA/raw.uuids.txt"; else RESD_IDS="$DATA/resd.uuids-$SPREAD.txt"; RAW_IDS="$DATA/raw.uuids-$SPREAD.txt"; fi
ids "$SITE/data/resd.db" "r:items" "$RESD_IDS"
ids "$DATA/raw.db" records "$RAW_IDS"
for round in ${ROUNDS:-1 2 3}; do
  OPS=read LABEL="bare-resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3201 "Bearer bench" items "$RAW_IDS" | grep -v '^#'
  OPS=read LABEL="resd #$round" "${LOAD[@]}" bash "$SHARED/http-bench.sh" http://127.0.0.1:3301 "Bearer $TOKEN" items "$RESD_IDS" | grep -v '^#'
done
