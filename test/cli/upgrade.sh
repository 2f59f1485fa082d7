#!/usr/bin/env bash
# The update path from the previous release (docs/operations.md, "Upgrades"):
# install 0.1.0 from the kept script src/release/mq--0.1.0.sql with the
# current shared library loaded (so every C symbol the old script names
# must still be in mq.so: CREATE FUNCTION ... LANGUAGE C looks each one up),
# fill it through the 0.1.0 API (records with headers, segments, an
# idempotent and a transactional producer, a consumer group with a member
# and committed offsets, mq grants and SQL grants, a compacted topic,
# coordinator rows, a maintenance run), run ALTER EXTENSION mq UPDATE (as
# docs/operations.md says), and check:
#   - every fact of test/cli/upgrade/state.sql is the same after the update;
#   - the data is usable: the producer's sequence continues and a resent
#     batch is deduplicated, the transactional id keeps its producer id,
#     the member heartbeats and its consumer resumes at the committed
#     offset, the grants still decide, new topics and records get new ids;
#   - every routine of 0.1.0 is still there with its signature (tools of
#     0.1.0 keep working against an updated node);
#   - the documented loop updates every database of a server, and a dump
#     of 0.1.0 restored the documented way holds the same data after its
#     update;
#   - the updated schema (test/cli/upgrade/schema.sql: definitions,
#     columns in order, constraints, indexes, triggers, rights, comments,
#     membership) equals a fresh install of the current version: a change
#     to src/sql not carried into src/update/ fails here, naming it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

OLD=0.1.0
NEW="$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" mq.control)"
# routines of 0.1.0 that later versions removed on purpose (signature: why)
REMOVED_SINCE_OLD=(
	# a decision's records keep their headers and CreateTimes (64_twophase_redo.sql)
	'mq.txn_redo_output(text,integer,integer,bigint,integer,integer,bytea[],bytea[]):+headers, timestamps'
	'mq_coord._txn_check_outputs(text,jsonb,jsonb,bytea[],bytea[]):+headers, timestamps'
	'mq_coord._txn_store_outputs(text,jsonb,bytea[],bytea[]):+headers, timestamps'
	'mq_coord.txn_decide(text,text,jsonb,integer,jsonb,bytea[],bytea[]):+headers, timestamps'
	# each offset of a step reported by name (several leaders)
	'mq_coord.txn_offsets_redone(text,integer,integer):+group, topic, partition'
	# a Kafka batch's size as sent, what max.message.bytes then limits (30_produce.sql)
	'mq.send_batch(text,bytea[],bytea[],jsonb[],integer,bigint,integer,integer,timestamp with time zone[],timestamp with time zone):+batch_bytes'
	# internal: a wake-up names its partition (notify.c)
	'mq._replica_notify(integer):+partition'
	# internal: a follower's long poll no longer wakes for a new high watermark
	# (replica_wait.c; 0.1.0's declaration still works, its argument passed over)
	'mq._replica_wait_records(integer,integer,bigint,integer,bigint,bigint):-known_hwm'
	# internal: mq.delete_group deletes through mq._delete_offsets_of, which
	# mq.delete_offsets shares (52_group_delete.sql)
	'mq._delete_group_versions(text):-into _delete_offsets_of'
	# internal: new topics are placed on the live brokers only (66_placement.sql)
	'mq_coord._placement_order():+live_only'
	# broker API: a topic is placed in the coordinator's incarnation (66_topic_delete.sql)
	'mq.replica_place_topic(text,integer,jsonb,integer[]):+incarnation'
	# internal: the produce path passes where its segments end, which the
	# transaction's snapshot missed under REPEATABLE READ (20_admin.sql)
	'mq._ensure_segments_to(integer,integer,bigint):+from'
)
dir="$(dirname "${BASH_SOURCE[0]}")/upgrade"
old_db="${PGDATABASE}_old"
new_db="${PGDATABASE}_new"
roles="mq_upg_reader, mq_upg_broker, mq_upg_node"
for d in "$old_db" "$new_db"; do dropdb --if-exists "$d" 2>/dev/null; done
sql "SET client_min_messages = warning; DROP ROLE IF EXISTS $roles"
sql "CREATE ROLE mq_upg_reader; CREATE ROLE mq_upg_broker; CREATE ROLE mq_upg_node"
on_exit "psql -X -q -c 'SET client_min_messages = warning' -c 'DROP ROLE IF EXISTS $roles'"
for d in "$old_db" "$new_db"; do
	createdb "$d"
	on_exit "dropdb --if-exists '$d'"
done

old() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$old_db" "$@"; }
new() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$new_db" "$@"; }
tmp="$(tmpdir)"

# -- 0.1.0 from the kept script, with this build's mq.so ---------------------
run old -c "SET check_function_bodies = on; CREATE EXTENSION mq VERSION '$OLD'"
expect_rc 0 "CREATE EXTENSION mq VERSION '$OLD' with the $NEW library"
check_eq "$(old -c "SELECT extversion FROM pg_extension WHERE extname = 'mq'")" "$OLD" "installed version"

# -- fill it through the 0.1.0 API ---------------------------------------------
run old <<'SQL'
SELECT mq.create_topic('upg.events', 2, '{"segment.records": 4}');
SELECT mq.create_topic('upg.compacted', 1, '{"cleanup.policy": "compact", "segment.records": 2,
                                         "min.cleanable.dirty.ratio": 0}');
SELECT mq.send('upg.events', 'k' || i, 'v' || i, jsonb_build_object('n', i::text), i % 2)
  FROM generate_series(0, 13) i;
SELECT mq.send('upg.events', 'bin'::bytea, '\x00ff'::bytea, NULL, 0,
               header_list => ARRAY[ROW('h1', '\x01')::mq.header, ROW('h1', NULL)::mq.header]);
SELECT mq.send('upg.compacted', k, v) FROM (VALUES ('a', '1'), ('b', '1'), ('a', '2'), ('c', '1'), ('d', '1')) x(k, v);
CREATE TABLE pg_temp.pid AS SELECT * FROM mq.init_producer();
SELECT mq.send_batch('upg.events', ARRAY['p0', 'p1', 'p2'], ARRAY['x', 'y', 'z'], NULL, 1,
                     (SELECT producer_id FROM pg_temp.pid), (SELECT producer_epoch FROM pg_temp.pid), 0);
SELECT mq.send_batch('upg.events', ARRAY['p3', 'p4'], ARRAY['x', 'y'], NULL, 1,
                     (SELECT producer_id FROM pg_temp.pid), (SELECT producer_epoch FROM pg_temp.pid), 3);
SELECT mq.init_producer('upg-tx');
SELECT mq.join_group('upg-g', ARRAY['upg.events'], NULL, 'instance-1', 'range', 600000);
SELECT mq.commit_offset('upg-g', 'upg.events', 0, 5, 'meta');
SELECT mq.commit_offset('upg-g', 'upg.events', 1, 2);
SELECT mq.commit_offset('upg-solo', 'upg.compacted', 0, 1);
SELECT mq.grant('read, describe', 'topic', 'upg.events', 'mq_upg_reader');
SELECT mq.grant('read', 'group', 'upg-', 'mq_upg_reader', 'prefixed');
SELECT mq.grant_broker('mq_upg_node');
SELECT mq_coord.grant_broker('mq_upg_broker');
GRANT EXECUTE ON FUNCTION mq.init_producer(text) TO mq_upg_reader;
INSERT INTO mq_coord.broker (broker_id, node_conninfo, node_name) VALUES (1, 'host=n1 dbname=mq', 'n1:5432');
INSERT INTO mq_coord.topic (topic, partitions, config) VALUES ('upg.replicated', 1, '{"replication.factor": 1}');
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('upg.replicated', 0, '{1}', 1, 3, '{1}');
INSERT INTO mq_coord.producer_id_counter (next_id) VALUES (4096);
-- what the maintenance worker does, run by the new library on the old schema
SELECT mq.run_maintenance();
SQL
expect_rc 0 "fill $OLD: topics, records, producers, group, grants, coordinator rows"
pid="$(old -c "SELECT producer_id FROM mq.producer WHERE transactional_id IS NULL")"
tx_pid="$(old -c "SELECT producer_id FROM mq.producer WHERE transactional_id = 'upg-tx'")"
member="$(old -c "SELECT member_id FROM mq.group_member WHERE group_id = 'upg-g'")"
check_match "$pid/$tx_pid/$member" '^[0-9]+/[0-9]+/.+$' "producer ids and group member exist"

old -f "$dir/state.sql" >"$tmp/state.before"
pg_dump -d "$old_db" -f "$tmp/old.sql" # for the restore across the update, below
old -c "SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
         JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'mq'" | LC_ALL=C sort >"$tmp/routines.before"
check_eq "$(($(wc -l <"$tmp/state.before") > 100))" 1 "the state to compare has its facts"

# -- the update as docs/operations.md says it, in a session that used mq -------
# before it and uses it after
# doc_block MARK: the fenced block after "<!-- upgrade-test: MARK -->"
doc_block() {
	awk -v mark="<!-- upgrade-test: $1 -->" '
		$0 == mark { found = 1; next }
		found && !inside && /^```/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' docs/operations.md
}
doc_block update-sql >"$tmp/update.sql"
check_match "$(cat "$tmp/update.sql")" 'ALTER EXTENSION mq UPDATE' "docs/operations.md has the update's SQL"
run old -c "SELECT count(*) FROM mq.send('upg.events', 'pre', 'pre', NULL, 0)" -f "$tmp/update.sql" \
	-c "SELECT msg_offset FROM mq.send('upg.events', 'post', 'post', NULL, 0)"
expect_rc 0 "ALTER EXTENSION mq UPDATE $OLD -> $NEW"
check_eq "$OUT" "$(printf '1\n%s\n9' "$NEW")" "the same session produces before and after the update"
check_eq "$(old -c "SELECT extversion FROM pg_extension WHERE extname = 'mq'")" "$NEW" "updated version"
old -c "SELECT mq.delete_records('upg.events', 0, 0)" >/dev/null # no-op: the API is there

# the two records produced around the update, then the state as before
old -f "$dir/state.sql" | grep -v -e '=pre h=' -e '=post h=' >"$tmp/state.after"
grep -v -e '^segment upg.events/0 ' -e '^partition upg.events/0 ' "$tmp/state.before" >"$tmp/b"
grep -v -e '^segment upg.events/0 ' -e '^partition upg.events/0 ' "$tmp/state.after" >"$tmp/a"
if diff -u "$tmp/b" "$tmp/a" >"$tmp/state.diff"; then
	pass "records, offsets, groups, producers, grants, coordinator rows unchanged by the update"
else
	fail "state changed by the update" "$(cat "$tmp/state.diff")"
fi

# -- usable after the update ---------------------------------------------------
ep="$(old -c "SELECT producer_epoch FROM mq.producer WHERE producer_id = $pid")"
run old -c "SELECT string_agg(msg_offset::text, ',') FROM mq.send_batch('upg.events', ARRAY['p3', 'p4'],
                ARRAY['x', 'y'], NULL, 1, $pid, $ep, 3)"
check_eq "$OUT" "10,11" "a resent batch of the producer is deduplicated (same offsets)"
run old -c "SELECT string_agg(msg_offset::text, ',') FROM mq.send_batch('upg.events', ARRAY['p5'],
                ARRAY['z'], NULL, 1, $pid, $ep, 5)"
check_eq "$OUT" "12" "the producer's sequence continues after the update"
run old -c "SELECT msg_offset FROM mq.send_batch('upg.events', ARRAY['p9'], ARRAY['z'], NULL, 1, $pid, $ep, 9)"
check_match "$RC $ERR" '^[1-9].*sequence' "a gap in the producer's sequence is still refused"
check_eq "$(old -c "SELECT producer_id || '/' || producer_epoch FROM mq.init_producer('upg-tx')")" \
	"$tx_pid/1" "the transactional id keeps its producer id, next epoch"
run old -c "SELECT generation FROM mq.heartbeat('upg-g', '$member') LIMIT 1"
check_match "$RC:$OUT" '^0:[0-9]+$' "the group member heartbeats"
check_eq "$(old -c "SELECT topics FROM mq.group_members WHERE group_id = 'upg-g'")" "{upg.events}" \
	"its subscription, kept by topic id in 0.1.0, is by name"
run old -c "SELECT partition || '@' || min(msg_offset) FROM mq.poll('upg-g', 'upg.events', 100, member_id => '$member')
             GROUP BY partition ORDER BY 1"
check_eq "$OUT" "$(printf '0@5\n1@2')" "the consumer resumes at the committed offsets"
run old -c "SET ROLE mq_upg_reader" -c "SELECT count(*) FROM mq.fetch('upg.events', 1, 0)"
check_eq "$RC:$OUT" "0:13" "a role granted READ on the topic fetches it"
run old -c "SET ROLE mq_upg_reader" -c "SELECT count(*) FROM mq.fetch('upg.compacted', 0, 0)"
check_match "$RC $ERR" '^[1-9].*(denied|not authorized|unknown|does not exist)' \
	"a role without a grant still cannot fetch"
check_eq "$(old -c "SELECT has_function_privilege('mq_upg_broker', 'mq_coord.register_broker(integer, text, text)', 'EXECUTE')")" \
	"t" "the coordinator grants of a broker role are kept"
run old -c "SELECT mq.create_topic('upg.new', 1)" -c "SELECT topic_id > 2 FROM mq.topic WHERE topic_name = 'upg.new'"
check_eq "$RC:$(tail -n 1 <<<"$OUT")" "0:t" "a new topic gets a new id"
run old -c "SELECT producer_id > $tx_pid FROM mq.init_producer()"
check_eq "$RC:$OUT" "0:t" "a new producer gets a new id"
run old -c "SELECT mq.compact('upg.compacted')" -c "SELECT string_agg(encode(key, 'escape') || '=' || encode(value, 'escape'), ',' ORDER BY msg_offset) FROM mq.fetch('upg.compacted', 0, 0)"
check_eq "$RC:$(tail -n 1 <<<"$OUT")" "0:b=1,a=2,c=1,d=1" "compaction of the compacted topic works after the update"
run old -c "SELECT mq.run_maintenance() >= 0"
check_eq "$RC:$OUT" "0:t" "maintenance runs after the update"
# a publication FOR ALL TABLES refuses deletes without a replica identity
check_eq "$(old -c "SELECT count(*) FILTER (WHERE c.relreplident = 'i') || '/' || count(*)
                     FROM mq.segment s JOIN pg_class c ON c.oid = s.relid")" \
	"$(old -c "SELECT count(*) || '/' || count(*) FROM mq.segment")" \
	"every segment, those of $OLD included, is identified by its offset index"

# -- the routines of 0.1.0 are all there ---------------------------------------
old -c "SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
         JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'mq'" | LC_ALL=C sort >"$tmp/routines.after"
gone="$(comm -23 "$tmp/routines.before" "$tmp/routines.after")"
for r in "${REMOVED_SINCE_OLD[@]}"; do gone="$(grep -vxF "${r%%:*}" <<<"$gone" || true)"; done
check_eq "$gone" "" "every routine of $OLD is still there (or listed in REMOVED_SINCE_OLD)"

# -- docs/operations.md's loop updates every database of the server ------------
run new -c "CREATE EXTENSION mq VERSION '$OLD'"
expect_rc 0 "a second database at $OLD"
doc_block update-all >"$tmp/update-all.sh"
run bash -e "$tmp/update-all.sh"
expect_rc 0 "the documented loop over all databases runs"
check_eq "$(new -c "SELECT extversion FROM pg_extension WHERE extname = 'mq'")" "$NEW" "it updated that database"
run new -c "DROP EXTENSION mq CASCADE"
expect_rc 0 "(dropped again for the fresh install below)"

# -- a dump of 0.1.0 restored on this version, as docs/operations.md says -------
rest_db="${PGDATABASE}_restored"
dropdb --if-exists "$rest_db" 2>/dev/null
createdb "$rest_db"
on_exit "dropdb --if-exists '$rest_db'"
doc_block restore >"$tmp/restore.sh"
run env DUMP="$tmp/old.sql" DB="$rest_db" bash -e -o pipefail "$tmp/restore.sh"
expect_rc 0 "a dump of $OLD restored at $OLD, then updated (docs/operations.md)"
check_eq "$(psql -X -At -d "$rest_db" -c "SELECT extversion FROM pg_extension WHERE extname = 'mq'")" "$NEW" \
	"the restored database is at $NEW"
psql -X -q -At -v ON_ERROR_STOP=1 -d "$rest_db" -f "$dir/state.sql" >"$tmp/state.restored"
if diff -u "$tmp/state.before" "$tmp/state.restored" >"$tmp/restored.diff"; then
	pass "the restored and updated database holds what the dump held"
else
	fail "the restored and updated database differs from what was dumped" "$(cat "$tmp/restored.diff")"
fi
check_eq "$(psql -X -At -d "$rest_db" -c "SELECT count(*) FROM mq.segment s JOIN pg_class c ON c.oid = s.relid
                                         WHERE c.relreplident <> 'i'")" "0" \
	"so is every segment of the restored and updated database"

# -- the updated schema equals a fresh install ---------------------------------
run new -c "CREATE EXTENSION mq"
expect_rc 0 "fresh CREATE EXTENSION mq ($NEW)"
# without the rights this test gave its own roles
unmine() { sed -E -e 's/,mq_upg_[a-z]+=[^,}]*//g' -e 's/\{mq_upg_[a-z]+=[^,}]*,?/{/g' -e 's/acl=\{\}/acl=/'; }
new -f "$dir/schema.sql" | unmine >"$tmp/schema.fresh"
old -f "$dir/schema.sql" | unmine >"$tmp/schema.updated"
check_match "$(grep -c '^routine ' "$tmp/schema.fresh")" '^[1-9][0-9][0-9]+$' "the schema facts list the routines"
if diff -u "$tmp/schema.fresh" "$tmp/schema.updated" >"$tmp/schema.diff"; then
	pass "the schema after ALTER EXTENSION UPDATE equals a fresh install of $NEW"
else
	fail "the schema after ALTER EXTENSION UPDATE differs from a fresh install of $NEW (- fresh, + updated; carry the change into src/update/)" \
		"$(head -n 80 "$tmp/schema.diff")"
fi

finish
