#!/usr/bin/env bash
# Fetch v13+ of several topics by id: each response topic carries its
# own id, also when the answer comes from a read-ahead made for the
# topics in another order (fetch_ahead.c reorders a request's topics to
# the read-ahead's order, ids with them).  test/kafka/fetch_topic_ids.pl
# fetches topics ta, tb and tc (eight records each, every value naming
# its topic) by id through raw frames, a record a partition at a time,
# turning the order of topics at each Fetch as clients do.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

for t in ta tb tc; do
	sql "SELECT mq.create_topic('$t', 1)" >/dev/null
	sql "SELECT mq.send_batch('$t', NULL, ARRAY(SELECT convert_to('$t-' || i, 'UTF8') FROM generate_series(0, 7) i))" >/dev/null
done
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/fetch_topic_ids.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "fetch_topic_ids.pl: every check passed"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
