#!/usr/bin/env bash
# Fetch sessions (KIP-227) through mq-kafka: test/kafka/fetch_sessions.pl
# opens, uses, errs on, closes and evicts sessions with raw Fetch v11
# frames, adding records through SQL (psql on this test's database)
# between the fetches.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('fs', 2)" >/dev/null
sql "SELECT mq.send_batch('fs', NULL, ARRAY['a', 'b']::bytea[], partition => 0)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/fetch_sessions.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "fetch_sessions.pl: every check passed"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
