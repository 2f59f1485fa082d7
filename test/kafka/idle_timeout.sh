#!/usr/bin/env bash
# A DBA's idle_session_timeout on the database mq-kafka serves: the server
# closes mq-kafka's idle pool connections every second.  Kafka clients
# notice nothing (kcat produces and reads, pausing past the timeout between
# rounds, every round succeeds), and mq-kafka reconnects and logs each
# closed idle connection as info, not as a warning: no request was lost.
# (Before a request goes out on an idle connection, mq-kafka also asks it
# whether the server closed it meanwhile; the race that guards against,
# a request sent in the instant before the event loop reads the close,
# failed a kcat producer once in a few rounds tried by hand, and is not
# forced here.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('idt', 1)" >/dev/null
sql "ALTER DATABASE \"$PGDATABASE\" SET idle_session_timeout = '1s'" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

ok=0
for round in 1 2 3 4 5 6; do
	# past the timeout: every idle connection has been closed once more
	sleep "1.$((round % 5))"
	if printf 'r%s\n' "$round" | timeout 30 kcat -b "$BROKER" -P -t idt -p 0 -X message.send.max.retries=0 2>/dev/null &&
		[[ "$(timeout 30 kcat -b "$BROKER" -C -t idt -p 0 -o -1 -e -q 2>/dev/null)" == "r$round" ]]; then
		ok=$((ok + 1))
	fi
done
check_eq "$ok" "6" "six rounds of produce and read, each after the server closed the idle connections"
LOG="$(tmpdir)/mq-kafka.log"
check_match "$(cat "$LOG")" 'info: an idle connection to the database closed' "mq-kafka saw its idle connections closed"
check_no_match "$(cat "$LOG")" 'warning' "and logged no warning"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('idt', 0, 0)")" "6" "each record is in the log once"
finish
