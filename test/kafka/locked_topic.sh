#!/usr/bin/env bash
# A lock on one topic's log (a DBA's VACUUM FULL, CLUSTER or LOCK TABLE
# on its tables) holds up requests about that topic only: with topic
# lk_b's partition tables held in ACCESS EXCLUSIVE mode, kcat at its
# defaults still gets lk_a's Metadata, its offsets and its records
# (Fetch v11: record batches from the database), raw Fetch v4 and v0
# (rows encoded by mq-kafka) are answered, and SQL's mq.fetch and
# mq.poll read it (docs/operations.md says so).  Before, the
# Metadata and Fetch statements joined the security-barrier views
# mq.partitions and mq.replica_status on the partitions asked for, which
# read every partition of every topic (lk_b's included, so they waited
# for the lock; docs/design.md, "Views joined by their keys").
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('lk_a', 1)" >/dev/null
sql "SELECT mq.create_topic('lk_b', 4)" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('lk_a', NULL::text[], ARRAY['a1', 'a2', 'a3'])" >/dev/null
sql "SELECT count(*) FROM generate_series(0, 3) p, LATERAL mq.send_batch('lk_b', NULL::text[], ARRAY['b'], partition => p)" >/dev/null

kafka_start || { fail "mq-kafka starts"; finish; }

# another session holds every partition table of lk_b (and so its
# segments) until it is terminated
rels="$(sql "SELECT string_agg(ps.relid::text, ', ') FROM mq.partition_state ps
               JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'lk_b'")"
psql -X -q -c "BEGIN" -c "LOCK TABLE $rels IN ACCESS EXCLUSIVE MODE" \
	-c "SELECT pg_sleep(300) /* lk_b held */" >/dev/null 2>&1 &
HOLDER=$!
release() {
	psql -X -q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	                WHERE query LIKE '%lk_b held%' AND pid <> pg_backend_pid()" >/dev/null 2>&1
	wait "$HOLDER" 2>/dev/null || true
}
on_exit release
held() {
	[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%lk_b held%'
	             AND state = 'active' AND pid <> pg_backend_pid()")" == 1 ]]
}
wait_for 10 held || fail "the other session holds lk_b's tables"

out="$(timeout 20 kcat -b "$BROKER" -L -t lk_a 2>&1 || true)"
check_match "$out" 'partition 0, leader 1, replicas: 1, isrs: 1' \
	"Metadata of lk_a is answered while lk_b is locked"
check_no_match "$out" '[Ee][Rr][Rr]' "without an error for lk_a"

out="$(timeout 20 kcat -b "$BROKER" -Q -t lk_a:0:-1 2>&1 || true)"
check_match "$out" 'lk_a \[0\] offset 3' "ListOffsets of lk_a: its end"

out="$(timeout 20 kcat -b "$BROKER" -C -t lk_a -p 0 -o beginning -e -f '%s\n' 2>&1 || true)"
check_eq "$(grep -c '^a[123]$' <<<"$out")" "3" "Fetch v11 of lk_a returns its records while lk_b is locked"

# the same without Metadata before: Fetch v4 (batches from the database)
# and v0 (rows, encoded by mq-kafka), each its partition's error code and
# high watermark, or "closed" when no answer came within 15 s
# (test/kafka/py/kwire.py).  (kcat with the 0.9 protocol is no check of
# v0: librdkafka may first ask Metadata v0 of no topic, which is every
# topic, lk_b's included, and waits for the lock as Kafka's would not.)
got="$(PYTHONPATH=test/kafka/py /usr/bin/python3 -c "
import struct; from kwire import Client, Closed, Reader, s
c = Client($KAFKA_PORT)
for v in (4, 0):
    body = struct.pack('>iii', -1, 0, 1) + (struct.pack('>ib', 1 << 20, 0) if v >= 3 else b'')
    body += struct.pack('>i', 1) + s('lk_a') + struct.pack('>iiqi', 1, 0, 0, 1 << 20)
    try:
        r = Reader(c.call(1, v, body))
    except Closed:
        print('v%d:closed' % v); continue
    r.take('>i') if v >= 1 else None
    r.take('>i'); r.str(); r.take('>i')
    print('v%d:%d:%d' % ((v,) + r.take('>ihq')[1:]))
" 2>&1 || true)"
check_eq "$got" $'v4:0:3\nv0:0:3' "raw Fetch v4 and v0 of lk_a answered at once, high watermark 3"

# and SQL consumers of lk_a, each bounded by a statement timeout
got="$(PGOPTIONS='-c statement_timeout=10s' psql -X -q -At -v ON_ERROR_STOP=1 \
	-c "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('lk_a', 0, 0)" \
	-c "SELECT count(*) FROM mq.poll('lk_g', 'lk_a', 10)" 2>&1 || true)"
check_eq "$got" $'a1,a2,a3\n3' "mq.fetch and mq.poll of lk_a read it while lk_b is locked"

held || fail "lk_b was held all along"
release
out="$(timeout 20 kcat -b "$BROKER" -C -t lk_b -p 3 -o beginning -e -f '%s\n' 2>/dev/null || true)"
check_eq "$out" "b" "once released, lk_b is read as before"

finish
