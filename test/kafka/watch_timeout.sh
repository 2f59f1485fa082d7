#!/usr/bin/env bash
# mq-kafka's high-watermark watch under a DBA's statement_timeout (here 1 s
# for the whole database, shorter than the watch's 5 s wait): each watch
# statement waits under four fifths of it and returns before the server
# would cancel it, so the watch keeps waking parked fetches, statement
# after statement, instead of giving way to parked fetches re-reading
# every 100 ms (docs/operations.md, "Database settings"); a consumer
# parked on the partition gets a record produced in SQL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('wt', 1)" >/dev/null
sql "ALTER DATABASE \"$PGDATABASE\" SET statement_timeout = '1s'" >/dev/null
on_exit "psql -X -q -c 'ALTER DATABASE \"$PGDATABASE\" RESET statement_timeout' >/dev/null 2>&1"
kafka_start || { fail "mq-kafka starts"; finish; }

# a consumer parks on the partition's end; the watch's statements follow one another
kcat_ -C -t wt -o end -c 1 -q >"$(tmpdir)/consumed" 2>&1 &
consumer=$!
on_exit "kill $consumer 2>/dev/null"
starts="$(tmpdir)/starts"
: >"$starts"
watch_statements() {
	sql "SELECT query_start FROM pg_stat_activity WHERE query LIKE '%mq._await_partitions%'
	       AND pid <> pg_backend_pid() AND state = 'active'" >>"$starts"
	(($(sort -u "$starts" | grep -c .) >= 4))
}
wait_for 15 watch_statements ||
	fail "four watch statements in a row, each under the 1 s statement_timeout" "$(sort -u "$starts")"
check_eq "$(grep -c 're-read every' "$(tmpdir)/mq-kafka.log")" "0" \
	"the watch never gave way to re-reading every 100 ms"
sql "SELECT mq.send('wt', NULL, 'woken', NULL, 0)" >/dev/null
wait "$consumer"
check_eq "$?:$(cat "$(tmpdir)/consumed")" "0:woken" "the parked consumer gets the record produced in SQL"
finish
