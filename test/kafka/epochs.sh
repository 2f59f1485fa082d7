#!/usr/bin/env bash
# Leader epochs (KIP-101, KIP-320) through mq-kafka on one node: topic ep
# gets the epoch history two leader changes write (epoch 0 from offset 0,
# 2 from 3, 5 from 5, as mq.replica_become_leader records them), then
# test/kafka/epochs.pl checks OffsetForLeaderEpoch, Fetch's current
# leader epoch and batch epochs, ListOffsets' (a follower's answer
# NOT_LEADER_OR_FOLLOWER) and OffsetFetch's committed leader epoch
# through raw frames, and test/kafka/diverging.pl Fetch v12+'s diverging
# epoch (with topic ep3, whose log starts at 1).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# an election as the replica API writes it, without a cluster: the epoch
# starts at the log end
elect() {
	sql "INSERT INTO mq.leader_epoch_history (topic_id, partition, leader_epoch, start_offset)
	     SELECT topic_id, 0, $2, mq._log_end_offset(topic_id, 0) FROM mq.topic WHERE topic_name = '$1';
	     UPDATE mq.partition_state SET leader_epoch = $2
	      WHERE topic_id = (SELECT topic_id FROM mq.topic WHERE topic_name = '$1')" >/dev/null
}

sql "SELECT mq.create_topic('ep', 1)" >/dev/null
elect ep 0
sql "SELECT mq.send_batch('ep', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
elect ep 2
sql "SELECT mq.send_batch('ep', NULL, ARRAY['d', 'e']::bytea[])" >/dev/null
elect ep 5
sql "SELECT mq.send_batch('ep', NULL, ARRAY['f', 'g']::bytea[])" >/dev/null
sql "SELECT mq.commit_offset('eg', 'ep', 0, 4)" >/dev/null
# ep2: records 0-3 are gone with the epochs before 3 (the history starts later)
sql "SELECT mq.create_topic('ep2', 1)" >/dev/null
sql "SELECT mq.send_batch('ep2', NULL, ARRAY['a', 'b', 'c', 'd']::bytea[])" >/dev/null
elect ep2 3
sql "SELECT mq.send_batch('ep2', NULL, ARRAY['e', 'f']::bytea[])" >/dev/null
elect ep2 4
# ep3: epochs 0 and 2 (from 3), the records before offset 1 deleted
sql "SELECT mq.create_topic('ep3', 1)" >/dev/null
elect ep3 0
sql "SELECT mq.send_batch('ep3', NULL, ARRAY['a', 'b', 'c']::bytea[])" >/dev/null
elect ep3 2
sql "SELECT mq.send_batch('ep3', NULL, ARRAY['d', 'e']::bytea[])" >/dev/null
sql "SELECT mq.delete_records('ep3', 0, 1)" >/dev/null
check_eq "$(sql "SELECT log_start_offset || ' ' || high_watermark FROM mq.partitions WHERE topic = 'ep3'")" "1 5" \
	"ep3's log runs from 1 to 5"
check_eq "$(sql "SELECT string_agg(leader_epoch || '@' || start_offset, ' ' ORDER BY leader_epoch)
                   FROM mq.leader_epochs WHERE topic = 'ep'")" "0@0 2@3 5@5" "mq.leader_epochs shows ep's history"
sql "SELECT mq.create_topic('plain', 1)" >/dev/null
check_eq "$(sql "SELECT string_agg(leader_epoch || '@' || start_offset, ' ')
                   FROM mq.leader_epochs WHERE topic = 'plain'")" "0@0" \
	"a partition never replicated has its one epoch from offset 0"
# fol: this node follows it (leader 2, epoch 1): ListOffsets is the leader's to answer
sql "SELECT mq.create_topic('fol', 1)" >/dev/null
sql "SELECT mq.replica_become_follower('fol', 0, 1, 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run perl test/kafka/epochs.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "epochs.pl: every check passed"
run perl test/kafka/diverging.pl "$KAFKA_PORT"
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "diverging.pl: every check passed"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
