#!/usr/bin/env bash
# A commit beyond the log end, as Kafka's coordinator takes it: kafka-python
# commits offset 100 of a 3-record partition, reads it back (OffsetFetch)
# and SQL sees it (mq.committed_offset; mq.consumer_lag counts 0 behind);
# a consumer of the group at its defaults (auto_offset_reset 'latest')
# fetches there, gets OFFSET_OUT_OF_RANGE, resets to the log end, reads
# the record produced next and commits past it, moving the offset back
# from 100 to 4.  SQL's mq.poll resets as auto_offset_reset says the same
# way (test/pgtap/commit_beyond_end.sql).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

PY=/usr/bin/python3 # Debian's python3-kafka
sql "SELECT mq.create_topic('cbe', 1)" >/dev/null
sql "SELECT mq.send('cbe', NULL::bytea, convert_to('old' || i, 'UTF8'), partition => 0) FROM generate_series(0, 2) i" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$PY" test/kafka/py/beyond_end.py commit "$BROKER" cbe cbeg 100
expect_rc 0 "kafka-python commits offset 100 of a partition whose log ends at 3"
check_eq "$(json_get "$(tail -n 1 <<<"$OUT")" '{committed}')" "100" "OffsetFetch answers the offset committed"
check_eq "$(sql "SELECT mq.committed_offset('cbeg', 'cbe', 0)")" "100" "SQL sees the same committed offset"
check_eq "$(sql "SELECT lag FROM mq.consumer_lag WHERE group_id = 'cbeg'")" "0" "mq.consumer_lag counts it 0 behind"

LOG="$(tmpdir)/consume"
timeout 120 "$PY" test/kafka/py/beyond_end.py consume "$BROKER" cbe cbeg 1 >"$LOG" 2>&1 &
CONSUMER=$!
# the consumer resets to the log end (3) once it has fetched at 100
wait_for 60 grep -q '"position": 3' "$LOG" || fail "the consumer's position resets to the log end"
sql "SELECT mq.send('cbe', NULL::bytea, convert_to('new', 'UTF8'), partition => 0)" >/dev/null
wait "$CONSUMER"
check_eq "$?" "0" "the consumer ends"
J="$(tail -n 1 <"$LOG")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{records}')" '[[3, "new"]]' "it reads the record produced after the reset, not the older ones"
check_eq "$(sql "SELECT mq.committed_offset('cbeg', 'cbe', 0)")" "4" "its auto-commit moves the offset back from 100 to 4"
finish
