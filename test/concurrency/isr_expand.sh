#!/usr/bin/env bash
# ISR expansion racing a high-watermark advance (docs/replication.md,
# "In-sync replicas"): replica 3 holds offsets 0-4 and asks to join while
# replica 2's fetch, in a transaction not yet committed, moves the high
# watermark from 5 to 10.  mq.replica_set_isr must wait for that fetch
# and then refuse replica 3 (MQ028): had it joined with the high watermark
# it read before, the ISR would name a replica lacking acknowledged
# records 5-9, which an election could pick.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

q >/dev/null <<'SQL'
SELECT mq.create_topic('isrx', 1);
SELECT mq.replica_become_leader('isrx', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT mq.send_batch('isrx', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 10) i;
CREATE VIEW isrx_v AS SELECT mq._offsets_version(topic_id, 0) AS version FROM mq.topic WHERE topic_name = 'isrx';
-- both followers at 5: the high watermark is 5
SELECT mq.replica_fetch('isrx', 0, 1, r, 0, 5, 0, (SELECT version FROM isrx_v)) FROM generate_series(2, 3) r;
SELECT mq.replica_fetch('isrx', 0, 1, r, 5, 5, 0, (SELECT version FROM isrx_v)) FROM generate_series(2, 3) r;
SQL
hwm() { q -c "SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'isrx'"; }
[[ "$(hwm)" == 5 ]] || fail "high watermark $(hwm), expected 5"

wait_for() {	# a condition on pg_stat_activity, polled for up to 20 s
	for _ in $(seq 1 200); do
		[[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE $1")" != 0 ]] && return 0
		sleep 0.1
	done
	return 1
}

# A: replica 2 reports offset 10, which moves the high watermark; open
mkfifo "$work/a"
PGAPPNAME=isr_a psql -X -qAt -v ON_ERROR_STOP=1 < "$work/a" > "$work/a.out" 2>&1 &
exec 3> "$work/a"
echo "BEGIN; SELECT (mq.replica_fetch('isrx', 0, 1, 2, 10, 5, 0, (SELECT version FROM isrx_v))).high_watermark;" >&3
wait_for "application_name = 'isr_a' AND state = 'idle in transaction'" || fail "the fetch did not run"

# B: the broker adds replica 3 on the progress it read (offset 5 = the high watermark it saw)
PGAPPNAME=isr_b psql -X -qAt -c "SELECT mq.replica_set_isr('isrx', 0, 1, ARRAY[1, 2, 3])" > "$work/b.out" 2>&1 &
b=$!
blocked=yes
wait_for "application_name = 'isr_b' AND wait_event_type = 'Lock'" || blocked=no
echo "COMMIT;" >&3
exec 3>&-
wait "$b" || true

[[ "$blocked" == yes ]] || fail "the ISR change did not wait for the fetch moving the high watermark"
grep -q 'do not hold the high watermark' "$work/b.out" || fail "replica 3 joined: $(cat "$work/b.out")"
isr=$(q -c "SELECT isr FROM mq.replica_partition rp JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'isrx'")
[[ "$isr" == "{1,2}" ]] || fail "ISR is $isr, expected {1,2}"
[[ "$(hwm)" == 10 ]] || fail "high watermark $(hwm), expected 10"
echo "ok: the ISR change waited for the high watermark to move and refused the replica below it"
