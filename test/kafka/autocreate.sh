#!/usr/bin/env bash
# Automatic topic creation: off by default (a produce to an unknown topic
# fails and creates nothing); with --auto-create-topics N a producer's
# Metadata request creates the topic with N partitions.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

kafka_start || { fail "mq-kafka starts"; finish; }
run kcat_ -P -t nosuch -X message.timeout.ms=2000 <<<"lost"
check_match "$RC:$ERR" '^[1-9].*(Unknown topic|timed out)' "producing to an unknown topic fails"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'nosuch'")" "0" "and creates no topic"
kafka_kill

kafka_start --auto-create-topics 2 || fail "mq-kafka restarts with --auto-create-topics"
run kcat_ -P -t autotopic <<<"created on the fly"
expect_rc 0 "producing to a new topic with --auto-create-topics"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'autotopic'")" "2" \
	"the topic was created with 2 partitions"
check_eq "$(sql "SELECT count(*) FROM generate_series(0, 1) p, mq.fetch('autotopic', p, 0)")" "1" \
	"the record is stored"

finish
