#!/usr/bin/env bash
# Kafka's group coordinator drops an Empty group that has no committed
# offsets when a topic is deleted (and at every offsets retention check):
# a consumer group whose members left without committing stays listed,
# Empty, until then, and is Dead after; one with offsets stays, and so
# does one whose new member is to come back with its id (KIP-394)
# (broker/mq-kafka/group_cleanup.c; test/kafka/py/group_cleanup.py with
# kafka-python's clients).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3
sql "SELECT mq.create_topic('gc', 1)" >/dev/null
sql "SELECT mq.create_topic('gc-doomed', 1)" >/dev/null
sql "SELECT mq.send('gc', NULL, 'v'::bytea)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

# JoinGroup v4 of group gcp-pending without a member id: MEMBER_ID_REQUIRED
# and an id to come back with (KIP-394); the group is Empty meanwhile
pending_join() {
	run env PYTHONPATH=test/kafka/py "$PY" -c "
import struct, sys; from kwire import Client, Reader, s
r = Reader(Client($KAFKA_PORT).call(11, 4, s('gcp-pending') + struct.pack('>ii', 60000, 60000) + s(sys.argv[1])
                                     + s('consumer') + struct.pack('>i', 1) + s('range') + struct.pack('>i', 0)))
r.take('>i')
err = r.take('>h'); r.take('>i'); r.str(); r.str()
print(err, r.str())" "$1"
}
pending_join ''
check_match "$OUT" '^79 .' "JoinGroup v4 without a member id: MEMBER_ID_REQUIRED, with an id"
pending_id="${OUT#79 }"

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
pending_join "$pending_id"
check_eq "$OUT" "0 $pending_id" \
	"a group whose member id is still to come back was kept: the JoinGroup with that id is taken"
finish
