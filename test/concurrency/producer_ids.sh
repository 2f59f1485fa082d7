#!/usr/bin/env bash
# Cluster-wide producer ids under concurrency (docs/replication.md,
# "Producer ids"): on a node whose broker attached, eight sessions call
# mq.init_producer at once, one transaction per call (some with
# transactional ids, called again for a new epoch), while the rest of the
# blocks are added one by one.  Every id issued is unique (a primary key
# records them in init_producer's own transaction), lies in a block the
# node was given, the blocks' counters account for exactly the ids issued,
# and with the blocks used up init_producer raises MQ027.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh).
set -euo pipefail

CLIENTS=8
PER_CLIENT=240
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 2000 ids in blocks of 100: four now, sixteen while the sessions draw
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
INSERT INTO mq.replica_broker (broker_id) VALUES (1);
SELECT mq.replica_add_producer_ids(1 + 100 * i, 100 * (i + 1)) FROM generate_series(0, 3) AS i;
CREATE TABLE issued (producer_id bigint PRIMARY KEY, txn text, epoch integer NOT NULL);
CREATE TABLE refused (client integer, n bigint);
-- n successful calls, each committed on its own; MQ027 (no block yet) is
-- counted and retried, anything else fails the session
CREATE PROCEDURE draw(client integer, n integer) LANGUAGE plpgsql AS $$
DECLARE
    done integer := 0;
    no_ids bigint := 0;
    txn text;
BEGIN
    WHILE done < n LOOP
        txn := CASE WHEN done % 5 = 0 THEN 'tx-' || client || '-' || done % 3 END;
        BEGIN
            INSERT INTO issued AS i
            SELECT producer_id, txn, producer_epoch FROM mq.init_producer(txn)
            ON CONFLICT (producer_id) DO UPDATE SET epoch = EXCLUDED.epoch
             WHERE i.txn = EXCLUDED.txn AND i.epoch < EXCLUDED.epoch;
            done := done + 1;
        EXCEPTION WHEN SQLSTATE 'MQ027' THEN
            no_ids := no_ids + 1;
            IF no_ids > 1000000 THEN
                RAISE EXCEPTION 'client %: no ids for too long', client;
            END IF;
        END;
        COMMIT;
    END LOOP;
    INSERT INTO refused VALUES (client, no_ids);
END $$;
SQL

pids=()
for c in $(seq 1 "$CLIENTS"); do
	psql -X -q -v ON_ERROR_STOP=1 -c "CALL draw($c, $PER_CLIENT)" > "$work/client$c.out" 2>&1 &
	pids+=($!)
done
for i in $(seq 4 19); do
	psql -X -q -v ON_ERROR_STOP=1 -c "SELECT mq.replica_add_producer_ids($((1 + 100 * i)), $((100 * (i + 1))))" >/dev/null
done
status=0
for c in $(seq 1 "$CLIENTS"); do
	if ! wait "${pids[$((c - 1))]}"; then
		echo "FAIL: session $c:"; cat "$work/client$c.out"; status=1
	fi
done
[ $status = 0 ] || exit 1

psql -X -At -v ON_ERROR_STOP=1 <<'SQL' > "$work/final.out"
SELECT (SELECT count(*) FROM issued),
       (SELECT count(*) FROM issued i WHERE NOT EXISTS (SELECT 1 FROM mq.producer_id_block b
                                                        WHERE i.producer_id BETWEEN b.first_id AND b.next_id - 1)),
       (SELECT sum(next_id - first_id) FROM mq.producer_id_block),
       (SELECT count(*) FROM issued WHERE txn IS NOT NULL),
       (SELECT max(epoch) FROM issued),
       (SELECT sum(n) FROM refused),
       mq.replica_producer_ids_left();
SQL
IFS='|' read -r ids outside drawn txns maxepoch nrefused left < "$work/final.out"
echo "ids issued: $ids (transactional: $txns, highest epoch $maxepoch); outside the blocks: $outside; drawn by the blocks' counters: $drawn; MQ027 retries: $nrefused; left: $left"

check() { if [ "$1" != "$2" ]; then echo "FAIL: $3: got $1, want $2"; status=1; fi; }
# each session makes PER_CLIENT calls: one in five with one of three
# transactional ids (a new id only the first time, a new epoch after)
want_txn=$((CLIENTS * 3))
want_ids=$((CLIENTS * PER_CLIENT - CLIENTS * PER_CLIENT / 5 + want_txn))
check "$ids" "$want_ids" "distinct ids issued (a repeated id would have failed its session)"
check "$txns" "$want_txn" "a transactional id draws an id only the first time"
check "$outside" 0 "ids outside the used part of the node's blocks"
check "$drawn" "$ids" "ids the blocks' counters moved past = ids issued"
check "$left" $((2000 - want_ids)) "ids left"
if [ "$maxepoch" -lt 10 ]; then echo "FAIL: transactional ids should have had many epochs ($maxepoch)"; status=1; fi

# use up the rest: then MQ027
psql -X -q -v ON_ERROR_STOP=1 -c "DO \$\$ BEGIN FOR i IN 1 .. $left LOOP PERFORM mq.init_producer(); END LOOP; END \$\$"
if out=$(psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "SELECT * FROM mq.init_producer()" 2>&1); then
	echo "FAIL: init_producer with every block used up: $out"; status=1
else
	check "$(grep -o 'MQ027' <<<"$out" | head -1)" MQ027 "init_producer with every block used up"
fi
psql -X -q -c "DELETE FROM mq.replica_broker" >/dev/null
[ $status = 0 ] && echo "PASS: $ids producer ids from $CLIENTS concurrent sessions, each once, all from the node's blocks"
exit $status
