#!/usr/bin/env bash
# ISR expansion racing a high-watermark advance (docs/replication.md,
# "In-sync replicas"): replica 3 reached the log end at offset 5 and joins
# the ISR in a transaction not yet committed, while replica 2's fetch
# would move the high watermark from 5 to 10 with the ISR it read before.
# That fetch must wait for the ISR change and then count replica 3: had it
# raised the high watermark to 10 past replica 3, the broker could add
# replica 3 to the coordinator's ISR (it is in the node's ISR holding the
# high watermark it reads) lacking acknowledged records 5-9.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('isrx', 1);
SELECT mq.replica_become_leader('isrx', 0, 1, 1, ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT mq.send_batch('isrx', NULL, array_agg(('r' || i)::bytea), partition => 0) FROM generate_series(1, 5) i;
CREATE VIEW isrx_v AS SELECT mq._offsets_version(topic_id, 0) AS version FROM mq.topic WHERE topic_name = 'isrx';
-- both followers reach the log end, 5: the high watermark is 5
SELECT mq.replica_fetch('isrx', 0, 1, r, 0, 5, 0, (SELECT version FROM isrx_v)) FROM generate_series(2, 3) r;
SELECT mq.replica_fetch('isrx', 0, 1, r, 5, 5, 0, (SELECT version FROM isrx_v)) FROM generate_series(2, 3) r;
SELECT mq.send_batch('isrx', NULL, array_agg(('s' || i)::bytea), partition => 0) FROM generate_series(1, 5) i;
SQL
hwm() { q -c "SELECT high_watermark FROM mq.partition_state ps JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'isrx'"; }
[[ "$(hwm)" == 5 ]] || fail "high watermark $(hwm), expected 5"

# A: the broker adds replica 3 to the node's ISR; open
mkfifo "$work/a"
PGAPPNAME=isr_a psql -X -qAt -v ON_ERROR_STOP=1 < "$work/a" > "$work/a.out" 2>&1 &
exec 3> "$work/a"
echo "BEGIN; SELECT mq.replica_set_isr('isrx', 0, 1, ARRAY[1, 2, 3]);" >&3
wait_for "application_name = 'isr_a' AND state = 'idle in transaction'" || fail "the ISR change did not run"

# B: replica 2 reports offset 10, with the ISR {1,2} it can read
PGAPPNAME=isr_b psql -X -qAt -c "SELECT (mq.replica_fetch('isrx', 0, 1, 2, 10, 5, 0, (SELECT version FROM isrx_v))).high_watermark" > "$work/b.out" 2>&1 &
b=$!
blocked=yes
wait_for "application_name = 'isr_b' AND wait_event_type = 'Lock'" || blocked=no
echo "COMMIT;" >&3
exec 3>&-
wait "$b" || fail "the fetch failed: $(cat "$work/b.out")"

[[ "$blocked" == yes ]] || fail "the fetch moving the high watermark did not wait for the ISR change"
isr=$(q -c "SELECT isr FROM mq.replica_partition rp JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'isrx'")
[[ "$isr" == "{1,2,3}" ]] || fail "ISR is $isr, expected {1,2,3}"
[[ "$(hwm)" == 5 ]] || fail "high watermark $(hwm) passed replica 3 at 5"
echo "ok: the fetch waited for the ISR change and kept the high watermark at the new member's log end"
