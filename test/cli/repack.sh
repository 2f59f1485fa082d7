#!/usr/bin/env bash
# pg_repack (Debian's postgresql-15-repack) on a database holding mq, as a
# DBA runs it to shrink bloated tables: the segment being written is
# rebuilt while producers append to it, and no acknowledged record is
# lost.  pg_repack copies the table, collects the rows written meanwhile
# through an AFTER INSERT row trigger and swaps the files; mq's produce
# path bypasses the executor, so it fires that trigger itself (src/log.c).
# Then pg_repack of the whole database, and mq works on after it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

REPACK="$(command -v pg_repack || echo /usr/lib/postgresql/15/bin/pg_repack)"
run sql "CREATE EXTENSION pg_repack"
expect_rc 0 "CREATE EXTENSION pg_repack (postgresql-15-repack)"
sql "SELECT mq.create_topic('rp', 1, '{\"segment.records\": 10000000}')" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('rp', NULL, ARRAY(SELECT 'old' || i FROM generate_series(1, 100000) i)::bytea[],
                                      partition => 0)" >/dev/null
sql "CREATE SEQUENCE rp_value" # each sent record's value: 1, 2, ... in send order
seg="$(sql "SELECT s.relid FROM mq.segment s JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'rp'
             ORDER BY base_offset LIMIT 1")"
hwm() { sql "SELECT high_watermark FROM mq.partitions WHERE topic = 'rp'"; }

# two producers, one record per transaction, acknowledged by their commit
cat >"$(tmpdir)/send.sql" <<'SQL'
SELECT mq.send('rp', NULL, convert_to(nextval('rp_value')::text, 'UTF8'), NULL, 0);
SQL
pgbench -n -f "$(tmpdir)/send.sql" -c 2 -T 6 >"$(tmpdir)/pgbench.out" 2>&1 &
bench=$!
on_exit "kill $bench 2>/dev/null"
wait_hwm() { (($(hwm) >= 101000)); }
for _ in $(seq 100); do wait_hwm && break; sleep 0.1; done
before="$(hwm)"
check_eq "$((before >= 101000))" 1 "producers are appending to the segment ($((before - 100000)) records so far)"

run "$REPACK" -d "$PGDATABASE" -t "$seg"
expect_rc 0 "pg_repack -t $seg (the segment being written)"
after="$(hwm)"
check_eq "$((after > before))" 1 "records were produced while pg_repack rebuilt it ($((after - before)))"
wait "$bench"
acked="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$(tmpdir)/pgbench.out")"
check_eq "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$(tmpdir)/pgbench.out")" "0" \
	"every send was acknowledged (committed)"
check_eq "$(hwm)" "$((100000 + acked))" "the log holds the 100000 old records and the $acked acknowledged ones"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT v) || ' ' || min(v) || ' ' || max(v)
                   FROM (SELECT convert_from(value, 'UTF8')::bigint AS v
                           FROM mq.fetch('rp', 0, 100000, 1000000)) r")" \
	"$acked $acked 1 $acked" "every acknowledged value is there once, none missing"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('rp', 0, 0, 1000000)")" "$((100000 + acked))" \
	"offsets are gapless"

# the whole database, mq's catalog, coordinator and log tables included
run "$REPACK" -d "$PGDATABASE"
expect_rc 0 "pg_repack of the whole database"
check_match "$ERR" "repacking table \"mq_log\\.topic_" "it rebuilt mq's segments too"
run sql "SELECT msg_offset FROM mq.send('rp', 'k', 'after', NULL, 0)"
check_eq "$OUT" "$((100000 + acked))" "a send after it gets the next offset"
run sql "SELECT count(*) FROM mq.poll('rp-g', 'rp', 1000)"
expect_rc 0 "a group polls after it"
run sql "SELECT mq.run_maintenance() >= 0"
check_eq "$RC:$OUT" "0:t" "maintenance runs after it"
sql "DROP EXTENSION pg_repack" >/dev/null

finish
