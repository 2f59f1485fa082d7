#!/usr/bin/env bash
# A partition moved to another tablespace (mq.move_partition, Kafka's
# AlterReplicaLogDirs) through a DBA's dump and restore: pg_dump -Fd -j 2
# and pg_restore -j 2 into a new database of the same server keep its
# segments in that tablespace and the others where they were, the
# restored partition makes its new segments there too, and every record
# reads back.  The tablespace can be dropped once the topics are gone.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

TS="$(mktemp -d /tmp/mq-movedump.XXXXXX)"
chmod 755 "$TS"
chown postgres "$TS" 2>/dev/null || true
SPC="mq_movedump_$$"
src="$PGDATABASE"
db="${PGDATABASE}_moved"
cleanup() {
	dropdb --if-exists "$db" >/dev/null 2>&1 || true
	sql "SELECT mq.drop_topic('md') WHERE EXISTS (SELECT FROM mq.topics WHERE topic = 'md')" >/dev/null 2>&1 || true
	sql "DROP TABLESPACE IF EXISTS $SPC" >/dev/null 2>&1 || true
	rm -rf "$TS"
}
on_exit cleanup
sql "CREATE TABLESPACE $SPC LOCATION '$TS'" >/dev/null
sql "SELECT mq.create_topic('md', 2, '{\"segment.records\": 1000}');
     SELECT mq.send_batch('md', NULL::bytea[], array_agg(convert_to(i::text, 'UTF8')), partition => 0)
       FROM generate_series(1, 2500) i;
     SELECT mq.send_batch('md', NULL::bytea[], array_agg(convert_to(i::text, 'UTF8')), partition => 1)
       FROM generate_series(1, 10) i;" >/dev/null
run sql "SELECT mq.move_partition('md', 0, '$SPC')"
check_eq "$RC $OUT" "0 4" "mq.move_partition moves md-0's four segments"

# the tablespaces of partition $2's segments in database $1, once each
spaces() {
	psql -X -At -d "$1" -c "SELECT string_agg(DISTINCT coalesce(t.spcname, 'default'), ',')
	  FROM mq.segment s JOIN mq.topic tp USING (topic_id) JOIN pg_class c ON c.oid = s.relid
	  LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE tp.topic_name = 'md' AND s.partition = $2"
}
createdb "$db"
run pg_dump -Fd -j 2 -d "$src" -f "$(tmpdir)/dump"
expect_rc 0 "pg_dump -Fd -j 2"
run pg_restore -j 2 --exit-on-error -d "$db" "$(tmpdir)/dump"
expect_rc 0 "pg_restore -j 2"
check_eq "$(spaces "$db" 0) $(spaces "$db" 1)" "$SPC default" "restored: md-0's segments in $SPC, md-1's in the default"
psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" -c "SELECT mq.send_batch('md', NULL::bytea[],
	array_agg(convert_to(i::text, 'UTF8')), partition => 0) FROM generate_series(1, 2000) i" >/dev/null
check_eq "$(spaces "$db" 0)" "$SPC" "the restored md-0 makes its new segments in $SPC"
check_eq "$(psql -X -At -d "$db" -c "SELECT count(*) FROM mq.fetch('md', 0, 0, 100000)")" "4500" \
	"every record of md-0 reads back, the restored ones and the new"
dropdb "$db"
sql "SELECT mq.drop_topic('md')" >/dev/null
run sql "DROP TABLESPACE $SPC"
expect_rc 0 "with the topic dropped, the tablespace can be dropped"
finish
