#!/usr/bin/env bash
# Burrow (Debian's burrow 1.2.1), the lag monitor operators run, against
# mq-kafka (issue 23, item 3): it reads __consumer_offsets and reports
# the lag of a group that commits through Kafka (kafka-python's
# OffsetCommit) and of one that commits through SQL (mq.commit_offset),
# and what it reports matches mq.consumer_lag, first for the commits made
# before Burrow started, then for new commits and records.  Burrow's
# coordinator insists on a ZooKeeper: one runs from Debian's zookeeper
# jar on a private port.  Burrow keeps its default Kafka version (0.8:
# sarama's oldest requests).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
# shellcheck source=test/kafka/burrow_conf.bash
source "$(dirname "${BASH_SOURCE[0]}")/burrow_conf.bash"

PY=/usr/bin/python3 # Debian's python3-kafka
T="$(tmpdir)"
sql "SELECT mq.create_topic('bw', 2)" >/dev/null
sql "SELECT mq.send('bw', NULL::bytea, 'x'::bytea, partition => i % 2) FROM generate_series(0, 9) i" >/dev/null
sql "SELECT mq.commit_offset('bws', 'bw', 0, 2), mq.commit_offset('bws', 'bw', 1, 5)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }
run timeout 120 "$PY" test/kafka/py/coffsets.py commit "$BROKER" bw bwk 0:4 1:1
expect_rc 0 "a kafka-python group member commits"

ZK_PORT="$(_free_port)"
mkdir -p "$T/zk"
java -cp /usr/share/java/zookeeper.jar -Dzookeeper.admin.enableServer=false \
	org.apache.zookeeper.server.ZooKeeperServerMain "$ZK_PORT" "$T/zk" >"$T/zk.log" 2>&1 &
ZK_PID=$!
zk_stop() { kill "$ZK_PID" 2>/dev/null && wait "$ZK_PID" 2>/dev/null || true; }
on_exit zk_stop
# serving, not only listening: its "srvr" command answers with its mode
zk_ready() {
	timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT && printf srvr >&3 && cat <&3" 2>/dev/null |
		grep -q '^Mode: standalone'
}
ZK_UP=0
wait_for 60 zk_ready || ZK_UP=$?
check_eq "$ZK_UP" "0" "ZooKeeper starts"

HTTP_PORT="$(_free_port)"
mkdir -p "$T/burrow"
burrow_conf "$T/burrow" "$ZK_PORT" "$HTTP_PORT" "$BROKER"
Burrow --config-dir "$T/burrow" >"$T/burrow.log" 2>&1 &
BURROW_PID=$!
burrow_stop() { kill "$BURROW_PID" 2>/dev/null && wait "$BURROW_PID" 2>/dev/null || true; }
on_exit burrow_stop

# "topic partition committed lag" per partition, from Burrow and from mq
burrow_lag() {
	curl -s "http://127.0.0.1:$HTTP_PORT/v3/kafka/mq/consumer/$1/lag" | "$PY" -c '
import json, sys
try:
    parts = json.load(sys.stdin)["status"]["partitions"]
except Exception:
    sys.exit(0)
for p in sorted(parts, key=lambda p: (p["topic"], p["partition"])):
    end = p["end"] or {}
    print(p["topic"], p["partition"], end.get("offset"), p["current_lag"])'
}
mq_lag() {
	sql "SELECT topic, partition, committed_offset, lag FROM mq.consumer_lag
	      WHERE group_id = '$1' ORDER BY 1, 2" | tr '|' ' '
}
lags_agree() {
	local g
	for g in "$@"; do
		[[ -n "$(mq_lag "$g")" && "$(burrow_lag "$g")" == "$(mq_lag "$g")" ]] || return 1
	done
}

wait_for 90 lags_agree bwk bws || true
check_eq "$(burrow_lag bwk)" "bw 0 4 1
bw 1 1 4" "Burrow reports the Kafka group's lag, as mq.consumer_lag does"
check_eq "$(burrow_lag bws)" "$(mq_lag bws)" "Burrow reports the SQL group's lag (committed before the topic existed), as mq.consumer_lag does"

# new records and new commits from both sides
sql "SELECT mq.send('bw', NULL::bytea, 'y'::bytea, partition => 0) FROM generate_series(1, 3)" >/dev/null
sql "SELECT mq.commit_offset('bws', 'bw', 0, 6)" >/dev/null
run timeout 120 "$PY" test/kafka/py/coffsets.py commit "$BROKER" bw bwk 1:5
expect_rc 0 "the Kafka group commits again"
wait_for 90 lags_agree bwk bws || true
check_eq "$(burrow_lag bwk)" "bw 0 4 4
bw 1 5 0" "Burrow follows the Kafka group's new commit and the new records"
check_eq "$(burrow_lag bws)" "bw 0 6 2
bw 1 5 0" "Burrow follows the SQL group's new commit"
check_eq "$(kill -0 "$BURROW_PID" 2>/dev/null && echo running)" "running" "Burrow is still running"
if ((FAILED > 0)); then
	grep -v '"debug"' "$T/burrow.log" | tail -n 30 | sed 's/^/# /'
fi

finish
