#!/usr/bin/env bash
# Gapless offsets under concurrency.
#
# Eight producers append to one partition with pgbench for a while: each
# transaction sends single records and batches, sometimes rolls a
# savepoint back and sometimes aborts as a whole.  In the same transaction
# as its produce, every producer records the offsets it was given in a
# side table, so that table holds exactly what was acknowledged.
#
# Meanwhile a reader checks, statement after statement, that the log it
# sees is a gapless prefix (count = max offset + 1), reading the log table
# with plain SQL rather than through mq's own fetch.  At the end the log
# must equal the acknowledged offsets, gapless, and mq.fetch must return
# all of it in order.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

DURATION="${MQ_CONC_SECONDS:-12}"
CLIENTS=8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
SELECT mq.create_topic('gapless', 1, '{"segment.records": 500}');
CREATE TABLE acked (msg_offset bigint PRIMARY KEY);
SQL
logtable=$(psql -X -At -c "SELECT relid FROM mq.partitions WHERE topic = 'gapless'")

cat > "$work/produce.sql" <<'SQL'
\set abort random(1, 4)
\set sp random(1, 3)
\set n random(1, 20)
BEGIN;
INSERT INTO acked SELECT msg_offset FROM mq.send('gapless', NULL::bytea, '\x01'::bytea, partition => 0);
SAVEPOINT s;
INSERT INTO acked SELECT msg_offset FROM mq.send_batch('gapless', NULL, array_fill('\x02'::bytea, ARRAY[:n]), partition => 0);
\if :sp = 1
ROLLBACK TO SAVEPOINT s;
\endif
INSERT INTO acked SELECT msg_offset FROM mq.send('gapless', 'k'::text, 'v'::text, partition => 0);
\if :abort = 1
ROLLBACK;
\else
COMMIT;
\endif
SQL

# The reader: one statement per transaction, as a separate pgbench client,
# so that it holds no lock across checks.  check_prefix() raises on a hole,
# which aborts the reader and fails the test.
psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE FUNCTION check_prefix() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE c bigint; m bigint;
BEGIN
    SELECT count(*), max(msg_offset) INTO c, m FROM $logtable;
    IF c <> coalesce(m + 1, 0) THEN
        RAISE EXCEPTION 'reader saw a hole: % records but max offset %', c, m;
    END IF;
    RETURN c;
END \$\$;
SQL
echo 'SELECT check_prefix();' > "$work/reader.sql"
pgbench -n -f "$work/reader.sql" -c 1 -T "$DURATION" > "$work/reader.out" 2>&1 &
reader=$!

pgbench -n -f "$work/produce.sql" -c "$CLIENTS" -j 2 -T "$DURATION" > "$work/pgbench.out" 2>&1 || {
	cat "$work/pgbench.out"; exit 1; }
grep -E "number of transactions actually processed|failed" "$work/pgbench.out" || true

if ! wait "$reader" || grep -q "error" "$work/reader.out"; then
	cat "$work/reader.out"
	echo "FAIL: reader"
	exit 1
fi
echo "reader: $(grep 'actually processed' "$work/reader.out" | sed 's/.*: //') checks, no hole seen"

psql -X -At -v ON_ERROR_STOP=1 <<SQL > "$work/final.out"
SELECT (SELECT count(*) FROM $logtable),
       (SELECT coalesce(max(msg_offset) + 1, 0) FROM $logtable),
       (SELECT count(*) FROM acked),
       (SELECT count(*) FROM $logtable l FULL JOIN acked a USING (msg_offset)
         WHERE l.msg_offset IS NULL OR a.msg_offset IS NULL),
       (SELECT count(*) FROM mq.fetch('gapless', 0, 0, 1000000)),
       (SELECT bool_and(msg_offset = rn - 1) FROM (SELECT msg_offset, row_number() OVER () AS rn
          FROM mq.fetch('gapless', 0, 0, 1000000)) f),
       (SELECT count(*) FROM mq.segments WHERE topic = 'gapless'),
       (SELECT log_end_offset FROM mq.partitions WHERE topic = 'gapless');
SQL
IFS='|' read -r count end acked mismatched fetched inorder segments logend < "$work/final.out"
echo "log: $count records, end $end; acknowledged: $acked; mismatched: $mismatched; fetched: $fetched in order: $inorder; segments: $segments; log end: $logend"

status=0
check() { if [ "$1" != "$2" ]; then echo "FAIL: $3: got $1, want $2"; status=1; fi; }
check "$count" "$end" "log is gapless (count = max offset + 1)"
check "$acked" "$count" "acknowledged offsets = log records"
check "$mismatched" 0 "records not acknowledged or acknowledged but missing"
check "$fetched" "$count" "mq.fetch returns the whole log"
check "$inorder" t "mq.fetch returns offsets 0.. in order"
check "$logend" "$count" "mq.partitions log_end_offset"
if [ "$count" -lt 1000 ]; then echo "FAIL: too little work done ($count records)"; status=1; fi
if [ "$segments" -lt 3 ]; then echo "FAIL: the log should span several segments ($segments)"; status=1; fi
[ $status = 0 ] && echo "PASS: gapless under $CLIENTS producers with rollbacks"
exit $status
