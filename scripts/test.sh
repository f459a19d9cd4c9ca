#!/usr/bin/env bash
# The test suite on both stores: first on SQLite, then every test that runs a site again with each
# site's records in PostgreSQL (RESD_TEST_DATABASE_URL). A throwaway PostgreSQL cluster is started
# for the run (scripts/postgres.sh) unless RESD_TEST_POSTGRES_URL names a server to use; the
# two-instance and migrate --to tests use it in the first run. Arguments go to `bun test` (a file
# filter runs both passes on those files only).
#
# Each pass runs its files in RESD_TEST_JOBS worker processes (default 3: most tests wait on servers,
# pipes and timers; two used 1.3 of the 2 cores), slowest first by test/timings-<store>.json. After a
# change to which tests are slow: RESD_TEST_TIMINGS=update bash scripts/test.sh, and commit the files.
set -uo pipefail
cd "$(dirname "$0")/.."
started=""
if [ -z "${RESD_TEST_POSTGRES_URL:-}" ]; then
  PG_PORT="${RESD_TEST_PG_PORT:-55432}"
  RESD_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start "$PG_PORT") || { echo "scripts/test.sh: cannot start PostgreSQL (Debian: apt-get install -y postgresql)" >&2; exit 1; }
  started=1
  trap 'bash scripts/postgres.sh stop "$PG_PORT"' EXIT
fi
export RESD_TEST_POSTGRES_URL

# Left out of the second run, to keep CI under 20 minutes:
# - tests that never open a site: unit tests, the SQLite store's own, the binary build, the house rules;
# - the tests that bring their own PostgreSQL database (scale-out, transfer-migrate-store,
#   realtime-instances, postgres-pooler: servers on one database of their own; store-postgres-own,
#   store-postgres-search-lists(-attacks), -instances-order, -counts, -commit-message, -presence and
#   -quiet-notices: PostgreSQL stores on one);
# - transfer-worker, whose subject is the import's reading worker on a SQLite snapshot (PostgreSQL
#   imports read on one thread, which the other import tests cover);
# - tests of what lies in front of the store: the admin pages in a browser (their API calls are
#   admin-api and admin-forms-api, which do run), command-line parsing and exit codes, pipes,
#   settings display, README, URL masking, and the generated client types;
# - what happens before a request reaches the store: slow request bodies, security headers, CORS;
# - tests whose every site stays on SQLite in both runs (makeSite/adminSite with store "sqlite", as
#   they read the SQLite file itself), or that open no site: the second run would repeat the first
#   exactly. access-cli, ops-backup, records-history, transfer-migrate; store-memo-revise,
#   store-search-merge (a SqliteStore or the SQLite file of their own) and store-record-cache (a unit
#   test); hooks-binary, whose lone binary runs in a bare environment, and hooks-startup (a broken
#   extension stops start-up), whose `resd serve` is spawned without the site's RESD_DATABASE_URL;
# - command-line parsing (cli-global-options: options before the subcommand, --out folders, taken
#   ports); the docs' examples (docs-records: a definition and a record checked against the
#   validator, the same on both stores).
SAME_ON_BOTH="admin-accounts|admin-agent-chat|admin-editor-day|admin-realtime|admin-dashboard|admin-media-library|admin-pickers|admin-a11y|admin-narrow|admin-i18n|house-rules|limits-slow-bodies|security-headers|build-sharp|files-units|hooks-unit|jobs-queue-plan|json-members|ops-tar|permissions|query-compiler|release-binary|store-checkpointer|store-counts|store-memo|store-transactions|transfer-format|transfer-keytable|scale-out|transfer-migrate-store|transfer-worker|admin-pages|admin-forms|cli-exit-codes|cli-pipes|ops-config|readme|mask-url|openapi-client|realtime-instances|postgres-pooler|cors|access-cli|ops-backup|records-history|transfer-migrate|store-memo-revise|store-postgres-own|store-postgres-instances-order|store-postgres-counts|store-postgres-commit-message|store-postgres-presence|store-postgres-quiet-notices|store-postgres-search-lists|store-postgres-search-lists-attacks|store-search-merge|store-record-cache|hooks-binary|cli-global-options|hooks-startup|docs-records"

JOBS="${RESD_TEST_JOBS:-3}"
timings() { echo "--timings=test/timings-$1.json"; [ "${RESD_TEST_TIMINGS:-}" = update ] && echo "--update-timings"; }
logs=$(mktemp -d)
echo "== tests on SQLite"
bun test --timeout 60000 --parallel="$JOBS" $(timings sqlite) "$@" 2>&1 | tee "$logs/sqlite.txt"
first=${PIPESTATUS[0]}

if [ "$#" -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(ls test/*.test.ts | grep -Ev "/($SAME_ON_BOTH)\.test\.ts$"); fi
echo "== tests on PostgreSQL (${#targets[@]} files)"
RESD_TEST_DATABASE_URL="$RESD_TEST_POSTGRES_URL" bun test --timeout 60000 --parallel="$JOBS" $(timings postgres) "${targets[@]}" 2>&1 | tee "$logs/postgres.txt"
second=${PIPESTATUS[0]}

count() { grep -Eo "^ *[0-9]+ $1\$" "$logs"/*.txt | awk -F: '{ s += $2 } END { print s + 0 }'; }
# CI keeps only the tail of what the run printed: the failures are repeated here, with their files.
if grep -q "^(fail)" "$logs"/*.txt; then
  echo "== failed"
  # Each failure with the lines bun printed for it (the error and its source), up to 40; bun's own
  # list of failures at the end of a run (after "N tests failed:") would repeat them under the last file.
  for run in sqlite postgres; do
    awk -v run="$run" '
      /^[0-9]+ tests? failed:$/ { done = 1 }
      done { next }
      /^test\/.*\.test\.ts:$/ { file = $0; n = 0; next }
      /^\(pass\)/ { n = 0; next }
      /^\(fail\)/ { print "-- " run ": " file " " $0; for (i = (n > 40 ? n - 40 : 0); i < n; i++) print "   " ctx[i % 40]; n = 0; next }
      { ctx[n % 40] = $0; n++ }' "$logs/$run.txt"
  done
fi
echo "SQLite run exit $first, PostgreSQL run exit $second"
echo "$(count pass) passed, $(count fail) failed"
rm -rf "$logs"
[ "$first" = 0 ] && [ "$second" = 0 ]
