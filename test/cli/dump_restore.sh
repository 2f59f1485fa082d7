#!/usr/bin/env bash
# Dump and restore a database holding mq, as a DBA does: pg_dump | psql,
# pg_dump -Fc | pg_restore, and pg_dump -Fd -j 2 | pg_restore -j 2, each
# into a new database.  Every record (key, value, headers, header list,
# timestamp), offset, committed offset, group, member, grant and producer
# state comes back, the identity sequences come back past the restored
# ids (create_topic and init_producer work at once), an idempotent
# producer goes on with its sequence, and a group polls on from its
# committed offset.  A dump without mq_log is refused loudly, and so is a
# data-only restore without --disable-triggers (the segments' trigger
# refuses the rows).  The shell
# examples of docs/operations.md ("Backups and restore") run here, as
# written.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

src="$PGDATABASE"
dbs=()
newdb() { # NAME: a new empty database, dropped at exit
	local db="${src}_$1"
	dropdb --if-exists "$db" 2>/dev/null
	createdb "$db"
	dbs+=("$db")
	on_exit "dropdb --if-exists '$db'"
	printf '%s\n' "$db"
}
on_exit "dropuser --if-exists mq_restore_reader"
dropuser --if-exists mq_restore_reader 2>/dev/null || true
createuser mq_restore_reader

# --- the source database ----------------------------------------------------------
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT mq.create_topic('orders', 2, '{"segment.records": 5}');
SELECT mq.create_topic('audit', 1);
SELECT mq.send('orders', 'k' || g, 'v' || g, jsonb_build_object('n', g::text), g % 2,
               "timestamp" => '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second')
  FROM generate_series(1, 23) g;
-- a header list with a repeated key and a null value
SELECT mq.send('audit', 'a'::bytea, 'b'::bytea,
               header_list => ARRAY[ROW('h', 'x'::bytea), ROW('h', NULL)]::mq.header[]);
CREATE TABLE pids AS SELECT * FROM mq.init_producer();
INSERT INTO pids SELECT * FROM mq.init_producer('tx-1');
SELECT mq.send('audit', 'i'::bytea, ('p' || s)::bytea, producer_id => (SELECT min(producer_id) FROM pids),
               producer_epoch => 0, base_sequence => s)
  FROM generate_series(0, 2) s;
SELECT mq.commit_offset('billing', 'orders', 0, 3, 'm0');
SELECT mq.commit_offset('billing', 'orders', 1, 4);
SELECT member FROM mq.join_group('members', ARRAY['audit'], instance_id => 'w1');
SELECT mq.grant('read', 'topic', 'orders', 'mq_restore_reader');
SELECT mq.set_client_quota('producer_byte_rate', 1048576, user_name => 'mq_restore_reader');
SELECT mq.set_client_quota('request_percentage', 12.5, default_user => true, client_id => 'batch');
-- mq-kafka's state: a transactional id between transactions, one with a
-- transaction open (its stage and id are not dumped), a group it saved
SELECT * FROM mq.kafka_txn_init('kt-idle', 60000);
SELECT a.added FROM mq.kafka_txn_init('kt-open', 60000) i,
       mq.kafka_txn_add_partitions('kt-open', i.producer_id, i.producer_epoch, ARRAY['orders'], ARRAY[0]) a;
SELECT mq.kafka_group_save('kg', 7, '\x01'::bytea);
SQL

# fingerprint DB: every record, offset, group, grant and client quota, as one text
fingerprint() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT t.topic_name, t.partitions, t.config, t.owner FROM mq.topic t ORDER BY 1;
SELECT r.* FROM mq.topic t, generate_series(0, t.partitions - 1) p,
       LATERAL mq.fetch(t.topic_name, p, 0, 1000) r
 ORDER BY r.topic, r.partition, r.msg_offset;
SELECT p.topic, p.partition, p.log_start_offset, p.log_end_offset FROM mq.partitions p ORDER BY 1, 2;
SELECT group_id, t.topic_name, partition, next_offset, metadata FROM mq.consumer_offset JOIN mq.topic t USING (topic_id) ORDER BY 1, 2, 3;
SELECT group_id, instance_id, topics FROM mq.group_member ORDER BY 1, 2;
SELECT resource_type, pattern_type, resource_name, grantee, operation, permission FROM mq.acl ORDER BY 1, 2, 3, 4, 5;
SELECT producer_id, transactional_id, producer_epoch FROM mq.producer ORDER BY 1;
SELECT t.topic_name, partition, producer_id, batch_first, batch_last, batch_offset
  FROM mq.producer_state JOIN mq.topic t USING (topic_id) ORDER BY 1, 2, 3;
SELECT user_name, default_user, client_id, default_client, quota_key, quota_value FROM mq.list_client_quotas();
SELECT transactional_id, producer_id, producer_epoch, state FROM mq.kafka_txn WHERE state = 'empty' ORDER BY 1;
SELECT group_id, version, state FROM mq.kafka_group_state ORDER BY 1;
SQL
}
want="$(fingerprint "$src")"
check_match "$want" '\|\\x6b32\|\\x7632\|\{"n": "2"\}\|' "the fingerprint shows records with headers"
check_match "$want" 'billing\|orders\|1\|4' "the fingerprint shows the committed offsets"
check_match "$want" '\|t\|batch\|f\|request_percentage\|12.5' "the fingerprint shows the client quotas"
max_topic="$(sql 'SELECT max(topic_id) FROM mq.topic')"
max_pid="$(sql 'SELECT max(producer_id) FROM mq.producer')"
pid="$(sql "SELECT min(producer_id) FROM pids")"
tx_pid="$(sql "SELECT producer_id FROM mq.producer WHERE transactional_id = 'tx-1'")"

# after_restore WHAT DB: the restored database has everything and works
after_restore() {
	local what="$1" db="$2" got
	got="$(fingerprint "$db")"
	check_eq "$got" "$want" "$what: every record, offset, group, grant, producer state and client quota"
	got="$(PGDATABASE="$db" sql "SELECT string_agg(transactional_id, ',' ORDER BY 1) FROM mq.kafka_txn")"
	check_eq "$got" "kt-idle" "$what: mq-kafka's transactional id between transactions comes back, the one with a transaction open does not"
	got="$(PGDATABASE="$db" sql "SELECT mq.create_topic('new_after_restore')")"
	check_eq "$((got > max_topic))" 1 "$what: create_topic gives a new id ($got > $max_topic)"
	got="$(PGDATABASE="$db" sql "SELECT producer_id FROM mq.init_producer()")"
	check_eq "$((got > max_pid))" 1 "$what: init_producer gives a new id ($got > $max_pid)"
	got="$(PGDATABASE="$db" sql "SELECT producer_id || '/' || producer_epoch FROM mq.init_producer('tx-1')")"
	check_eq "$got" "$tx_pid/1" "$what: a transactional id keeps its producer id, next epoch"
	# the idempotent producer: a duplicate is acknowledged at its offset,
	# the next sequence appends, a gap is refused
	got="$(PGDATABASE="$db" sql "SELECT msg_offset FROM mq.send('audit', 'i'::bytea, 'p2'::bytea,
		producer_id => $pid, producer_epoch => 0, base_sequence => 2)")"
	check_eq "$got" 3 "$what: a retried batch is found in the restored producer state"
	got="$(PGDATABASE="$db" sql "SELECT msg_offset FROM mq.send('audit', 'i'::bytea, 'p3'::bytea,
		producer_id => $pid, producer_epoch => 0, base_sequence => 3)")"
	check_eq "$got" 4 "$what: the producer's next sequence appends"
	got="$(PGDATABASE="$db" sql "SELECT string_agg(msg_offset::text, ',' ORDER BY msg_offset)
		FROM mq.poll('billing', 'orders', 100) WHERE partition = 1")"
	check_match "$got" '^[0-9]' "$what: the group polls partition 1 from its committed offset"
	check_eq "${got%%,*}" "$(sql "SELECT mq.committed_offset('billing', 'orders', 1)")" \
		"$what: the first record polled is the committed offset"
	got="$(PGDATABASE="$db" sql "SELECT mq.has_topic_privilege('mq_restore_reader', 'orders', 'read')")"
	check_eq "$got" t "$what: the grant holds"
	got="$(PGDATABASE="$db" sql "SELECT count(*) FROM mq.send_batch('orders', ARRAY['x','y'], ARRAY['1','2'])")"
	check_eq "$got" 2 "$what: producing to a restored topic works"
}

work="$(tmpdir)"
# --- pg_dump | psql ------------------------------------------------------------------
db="$(newdb plain)"
RC=0
pg_dump -d "$src" | psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null 2>"$work/plain.err" || RC=$?
check_eq "$RC:$(grep -c ERROR "$work/plain.err" || true)" "0:0" "pg_dump | psql runs without errors"
after_restore "pg_dump | psql" "$db"

# --- pg_restore, serial -------------------------------------------------------------
pg_dump -Fc -d "$src" -f "$work/mq.dump"
db="$(newdb serial)"
run pg_restore --exit-on-error -d "$db" "$work/mq.dump"
expect_rc 0 "pg_restore"
after_restore "pg_restore" "$db"

# --- pg_restore --clean into the database it came from -------------------------------
# (a copy holding the dump's topics and a record more): the restore drops
# the segment tables before mq and restores the dump's state.  Topics made
# after the dump would keep DROP EXTENSION from running (docs/operations.md).
# A maintenance pass in that window read a missing table's log end for
# ever, holding the lock DROP EXTENSION waits for (MQ074 now;
# test/pgtap/missing_log_table.sql)
db="$(newdb clean)"
pg_restore --exit-on-error -d "$db" "$work/mq.dump"
PGDATABASE="$db" sql "SELECT mq.send('orders', 'late', 'gone after the restore', NULL, 0)" >/dev/null
run timeout 120 pg_restore --clean --if-exists --exit-on-error -d "$db" "$work/mq.dump"
expect_rc 0 "pg_restore --clean --if-exists into a database holding the dump's topics"
after_restore "pg_restore --clean" "$db"

# --- pg_dump -j 2, pg_restore -j 2 ----------------------------------------------------
pg_dump -Fd -j 2 -d "$src" -f "$work/mq.dir"
db="$(newdb parallel)"
run pg_restore -j 2 --exit-on-error -d "$db" "$work/mq.dir"
expect_rc 0 "pg_restore -j 2"
after_restore "pg_restore -j 2" "$db"
# parallel restores race: again from the custom-format file, 4 jobs
db="$(newdb parallel4)"
run pg_restore -j 4 --exit-on-error -d "$db" "$work/mq.dump"
expect_rc 0 "pg_restore -j 4"
check_eq "$(fingerprint "$db")" "$want" "pg_restore -j 4: everything"

# --- a dump without the records --------------------------------------------------------
pg_dump -Fc -d "$src" --exclude-schema=mq_log -f "$work/nolog.dump"
db="$(newdb nolog)"
run pg_restore -d "$db" "$work/nolog.dump"
expect_rc 1 "pg_restore of a dump without mq_log fails"
check_match "$ERR" 'COPY failed for table "topic": ERROR:  relation "mq_log\.topic_[0-9]+" does not exist' \
	"and says that mq_log is missing"
check_eq "$(PGDATABASE="$db" sql 'SELECT count(*) FROM mq.topic')" 0 "no topic without its records"

# --- schema, then data, without --disable-triggers ------------------------------------
db="$(newdb split_triggers)"
pg_restore --schema-only --exit-on-error -d "$db" "$work/mq.dump"
run pg_restore --data-only --exit-on-error -d "$db" "$work/mq.dump"
expect_rc 1 "a data-only restore into a schema-only restore, without --disable-triggers, fails"
check_match "$ERR" 'records cannot be inserted into an mq log directly' "with MQ009's message"
check_match "$ERR" 'a data-only restore needs --disable-triggers' "and a hint that says what to do"

# --- the shell examples of docs/operations.md --------------------------------------------
# ops_example NAME: the ```sh block after "<!-- ops-test: NAME -->"
ops_example() {
	awk -v name="$1" '
		$0 == "<!-- ops-test: " name " -->" { want = 1; next }
		want && /^```sh/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' docs/operations.md
}
for ex in dump-restore dump-restore-parallel dump-restore-split; do
	script="$(ops_example "$ex")"
	check_match "$script" 'pg_' "docs/operations.md has the example $ex"
	db="$(newdb "doc_${ex//-/_}")"
	dropdb "$db"
	mkdir "$work/$ex"
	if out="$(cd "$work/$ex" && DB="$src" NEWDB="$db" bash -euo pipefail -c "$script" 2>&1)"; then
		pass "docs example $ex runs"
	else
		fail "docs example $ex fails" "$script" "$out"
	fi
	check_eq "$(fingerprint "$db")" "$want" "docs example $ex: everything restored"
done

finish
