#!/usr/bin/env bash
# A long poll that nothing wakes answers at its deadline with what is
# there then, as a Kafka fetch does at fetch.max.wait.ms.  COMMIT
# PREPARED runs no commit callback, so it wakes no waiter (src/notify.c);
# a fetch and a poll waiting when a prepared send committed slept out
# their max_wait_ms and returned nothing although the record had been
# committed for seconds.  They read once more at the deadline now.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh),
# which allows prepared transactions.
set -euo pipefail

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; q -c "ROLLBACK PREPARED '"'"'lpd'"'"'" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('lpd', 1);
BEGIN;
SELECT mq.send('lpd', NULL::text, 'prepared', partition => 0);
PREPARE TRANSACTION 'lpd';
SQL

PGAPPNAME=lpd_fetch q -c "SELECT count(*) FROM mq.fetch('lpd', 0, 0, 10, max_wait_ms => 3000)" > "$work/fetch.out" 2>&1 &
fetch=$!
PGAPPNAME=lpd_poll q -c "SELECT count(*) FROM mq.poll('lpd_group', 'lpd', 10, max_wait_ms => 3000)" > "$work/poll.out" 2>&1 &
poll=$!
wait_for "application_name = 'lpd_fetch' AND wait_event_type = 'Extension'" || fail "the fetch did not wait"
wait_for "application_name = 'lpd_poll' AND wait_event_type = 'Extension'" || fail "the poll did not wait"
q -c "COMMIT PREPARED 'lpd'"

wait "$fetch" || fail "the fetch failed: $(cat "$work/fetch.out")"
wait "$poll" || fail "the poll failed: $(cat "$work/poll.out")"
[[ "$(cat "$work/fetch.out")" == 1 ]] ||
	fail "the fetch returned $(cat "$work/fetch.out") records at its deadline, not the one committed meanwhile"
[[ "$(cat "$work/poll.out")" == 1 ]] ||
	fail "the poll returned $(cat "$work/poll.out") records at its deadline, not the one committed meanwhile"
q -c "SELECT mq.drop_topic('lpd')" >/dev/null
echo "ok: a long poll not woken reads at its deadline"
