#!/usr/bin/env bash
# rsyslog's omkafka (Debian's rsyslog-kafka, librdkafka underneath) ships
# log lines to mq-kafka with its settings at their defaults: the topics it
# names are created on its first Metadata (auto.create.topics), every line
# received over TCP arrives once, in order within each partition, as the
# record's value (rsyslog's default template), and an action keyed by
# host name puts each host's lines in one partition.  With mq-kafka
# killed while lines are logged, they arrive once it is back (omkafka's
# queue and librdkafka's retries), none lost and none twice.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

if [[ ! -x /usr/sbin/rsyslogd || ! -e /usr/lib/x86_64-linux-gnu/rsyslog/omkafka.so ]]; then
	pass "rsyslog omkafka # SKIP rsyslog-kafka is not installed (scripts/install-deps.sh test)"
	finish
fi
kafka_start --auto-create-topics 3 || { fail "mq-kafka starts"; finish; }

SYSLOG_PORT="$(_free_port)"
# every line goes to both actions: syslog unkeyed, syslog-keyed by host
cat >"$T/rsyslog.conf" <<CONF
global(workDirectory="$T")
module(load="imtcp")
module(load="omkafka")
template(name="host" type="string" string="%hostname%")
input(type="imtcp" port="$SYSLOG_PORT" ruleset="ship")
ruleset(name="ship") {
	action(type="omkafka" broker=["$BROKER"] topic="syslog")
	action(type="omkafka" broker=["$BROKER"] topic="syslog-keyed" key="host" dynaKey="on")
}
CONF
/usr/sbin/rsyslogd -n -f "$T/rsyslog.conf" -i "$T/rsyslogd.pid" >"$T/rsyslogd.log" 2>&1 &
RSYSLOG_PID=$!
on_exit "kill $RSYSLOG_PID 2>/dev/null; wait $RSYSLOG_PID 2>/dev/null"
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$SYSLOG_PORT" 2>/dev/null ||
	{ fail "rsyslogd listens on its TCP input" "$(cat "$T/rsyslogd.log")"; finish; }

# HOST=NAME say LINE...: each line a syslog message over TCP from NAME (web1)
say() {
	local host="${HOST:-web1}" line
	for line in "$@"; do
		printf '<13>%s %s app: %s\n' "$(date '+%b %e %H:%M:%S')" "$host" "$line"
	done >"/dev/tcp/127.0.0.1/$SYSLOG_PORT"
}
count() { sql "SELECT coalesce(sum(high_watermark), 0) FROM mq.partitions WHERE topic = '$1'"; }
# lines TOPIC: partition, key and value (one line, as text) of every record
lines() {
	printf "SELECT p.partition, r.msg_offset, convert_from(r.key, 'UTF8') AS key,
		rtrim(convert_from(r.value, 'UTF8'), E'\\\\n') AS line
		FROM mq.partitions p, LATERAL mq.fetch(p.topic, p.partition, 0, 1000) r WHERE p.topic = '%s'" "$1"
}

say $(seq -f 'line-%g' 1 100)
wait_eq 60 100 count syslog || fail "100 lines arrive in topic syslog" "$(count syslog) of 100"
check_eq "$(sql "SELECT count(*) FROM mq.partitions WHERE topic = 'syslog'")" "3" \
	"omkafka's Metadata created the topic, with mq-kafka's --auto-create-topics partitions"
check_eq "$(sql "SELECT count(DISTINCT line) FROM ($(lines syslog)) l")" "100" "each line once"
check_eq "$(sql "SELECT bool_and(line ~ '^\S+ web1 app: line-[0-9]+$') FROM ($(lines syslog)) l")" "t" \
	"each value is the line in rsyslog's default format (time, host, tag, message)"
check_eq "$(sql "SELECT bool_and(o) FROM (SELECT array_agg(n ORDER BY msg_offset) = array_agg(n ORDER BY n) AS o
	FROM (SELECT partition, msg_offset, substring(line FROM 'line-([0-9]+)')::int AS n FROM ($(lines syslog)) l) x
	GROUP BY partition) y")" "t" "in the order logged within each partition"

# keyed by host name: each host's lines in one partition
HOST=web2 say $(seq -f 'k2-%g' 1 20)
HOST=web3 say $(seq -f 'k3-%g' 1 20)
wait_eq 60 140 count syslog-keyed || fail "140 lines arrive in syslog-keyed" "$(count syslog-keyed) of 140"
check_eq "$(sql "SELECT string_agg(key || ':' || n, ',' ORDER BY key) FROM (SELECT key, count(DISTINCT partition) AS n,
	count(*) FILTER (WHERE line ~ (' ' || key || ' app: ')) AS own FROM ($(lines syslog-keyed)) l GROUP BY key) x
	WHERE own > 0")" "web1:1,web2:1,web3:1" "each host's lines in one partition, keyed by its name"

# mq-kafka down while lines are logged: they arrive once it is back
# (killed with nothing in flight: both actions delivered everything, so
# that a retry of an unanswered batch cannot write it twice)
wait_eq 60 140 count syslog || fail "140 lines arrive in syslog" "$(count syslog) of 140"
kafka_kill
say $(seq -f 'down-%g' 1 30)
kafka_start --auto-create-topics 3 || fail "mq-kafka starts again"
wait_eq 90 170 count syslog || fail "the lines logged while mq-kafka was down arrive" "$(count syslog) of 170"
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT line) FROM ($(lines syslog)) l")" "170 170" \
	"none lost, none twice"

finish
