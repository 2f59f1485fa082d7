#!/usr/bin/env bash
# The old message formats (issue 23): kafka-python told broker version
# 0.9 (Produce v1 and Fetch v1: format v0) and 0.10 (Produce v2 and Fetch
# v2: format v1) produces plain and gzip-compressed messages, up-converted
# into mq's records (format v1's CreateTime kept), and reads them back
# down-converted: every record in both formats, timestamps only in v1
# (test/kafka/py/oldformat.py).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3 # Debian's python3-kafka
sql "SELECT mq.create_topic('kold', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$PY" test/kafka/py/oldformat.py "$BROKER" kold
expect_rc 0 "oldformat.py runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{v09,sent}')" '[0, 1, 2, 3, 4, 5]' \
	"format v0 (0.9): six messages, three of them in a gzip wrapper, got offsets 0-5"
check_eq "$(json_get "$J" '{v010,sent}')" '[6, 7, 8, 9, 10, 11]' \
	"format v1 (0.10): six messages, three of them in a gzip wrapper, got offsets 6-11"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8') || '@' ||
		coalesce((extract(epoch FROM \"timestamp\") * 1000)::bigint::text, 'append'), ',' ORDER BY msg_offset)
	FROM mq.fetch('kold', 0, 0, 100) WHERE msg_offset >= 6")" \
	"v010-none-0@1000000000000,v010-none-1@1000000000001,v010-none-2@1000000000002,v010-gzip-0@1000000000000,v010-gzip-1@1000000000001,v010-gzip-2@1000000000002" \
	"format v1 was up-converted with each message's CreateTime"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('kold', 0, 0, 100) WHERE msg_offset < 6 AND key = 'k'")" "6" \
	"format v0 was up-converted with its keys"
check_eq "$(json_get "$J" '{v09,read}' | tr -d ' ')" \
	'[["v09-none-0",null,0],["v09-none-1",null,1],["v09-none-2",null,2],["v09-gzip-0",null,3],["v09-gzip-1",null,4],["v09-gzip-2",null,5]]' \
	"Fetch v1 down-converts every record to format v0 (no timestamps)"
check_eq "$(json_get "$J" '{v010,read}' | tr -d ' ')" \
	'[["v010-none-0",1000000000000,6],["v010-none-1",1000000000001,7],["v010-none-2",1000000000002,8],["v010-gzip-0",1000000000000,9],["v010-gzip-1",1000000000001,10],["v010-gzip-2",1000000000002,11]]' \
	"Fetch v2 down-converts to format v1 with each record's CreateTime"
check_eq "$(json_get "$J" '{v010,others_timed}' | tr -d ' ')" '[true,true,true,true,true,true]' \
	"format v0's records, stamped by mq on append, come back in format v1 with that time"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
