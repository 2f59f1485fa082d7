#!/usr/bin/env bash
# Kafka's group coordinator drops an Empty group that has no committed
# offsets when a topic is deleted (and at every offsets retention check):
# a consumer group whose members left without committing stays listed,
# Empty, until then, and is Dead after; one with offsets stays
# (broker/mq-kafka/group_cleanup.c; test/kafka/py/group_cleanup.py with
# kafka-python's clients).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3
sql "SELECT mq.create_topic('gc', 1)" >/dev/null
sql "SELECT mq.create_topic('gc-doomed', 1)" >/dev/null
sql "SELECT mq.send('gc', NULL, 'v'::bytea)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$PY" test/kafka/py/group_cleanup.py "$BROKER" gc gc-doomed gcg
check_eq "$RC" 0 "group_cleanup.py runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{before}')" '["gcg-empty", "gcg-offsets"]' \
	"both groups are listed once their members left (Empty), one without offsets"
check_eq "$(json_get "$J" '{after}')" '["gcg-offsets"]' \
	"after a topic is deleted, the Empty group without offsets is gone, as from Kafka"
check_eq "$(json_get "$J" '{states}')" '{"gcg-empty": "Dead", "gcg-offsets": "Empty"}' \
	"DescribeGroups: the dropped group is Dead, the one with offsets Empty"
check_eq "$(sql "SELECT count(*) FROM mq.consumer_offset WHERE group_id = 'gcg-offsets'")" "1" \
	"the committed offset stays"
finish
