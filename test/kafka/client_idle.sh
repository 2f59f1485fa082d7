#!/usr/bin/env bash
# Kafka's connections.max.idle.ms: mq-kafka closes a client connection
# that has been idle for --connections-max-idle-ms (here 0.5 s; default 10
# min, as Kafka's), so connections of clients that vanished without
# closing them (a machine that died, a cut link) do not pile up.  A
# connection that keeps sending requests stays open, and a Fetch parked
# longer than the limit is not idle: it is answered.  A librdkafka
# producer idle longer than the limit connects again and goes on.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

kafka_start --connections-max-idle-ms 500 || { fail "mq-kafka starts with --connections-max-idle-ms"; finish; }
sql "SELECT mq.create_topic('idle_t', 1)" >/dev/null

run timeout 60 env PYTHONPATH=test/kafka/py /usr/bin/python3 test/kafka/py/idle_conn.py "$KAFKA_PORT" idle_t 500
expect_rc 0 "the raw client runs"
printf '# %s\n' "$OUT"
check_eq "$(json_get "$OUT" '{quiet_closed}')" "true" "a connection silent after its answer is closed by the daemon"
check_match "$(json_get "$OUT" '{quiet_closed_after_limits}')" '^(0\.9|[1-4]\.[0-9])$' \
	"about one limit after its last request"
check_eq "$(json_get "$OUT" '{busy_served}')" "8" "a connection with a request every half limit is served for four limits"
check_eq "$(json_get "$OUT" '{parked_answered}')" "true" "a Fetch parked three limits is answered, not closed"
check_match "$(json_get "$OUT" '{parked_waited_limits}')" '^[3-5]\.[0-9]$' "after its max_wait"

run timeout 30 /usr/bin/python3 -c '
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = ConfigResource(ConfigResource.Type.BROKER, "1")
print(a.describe_configs([r])[r].result(10)["connections.max.idle.ms"].value)' "$BROKER"
check_eq "$OUT" "500" "DescribeConfigs of the broker reports connections.max.idle.ms"

# confluent-kafka's producer, idle for three limits between two records:
# the daemon closed its connection meanwhile, and it connects again
run timeout 60 /usr/bin/python3 -c '
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
done = []
p.produce("idle_t", b"one", on_delivery=lambda e, m: done.append(e))
p.flush(10)
time.sleep(1.5)
p.produce("idle_t", b"two", on_delivery=lambda e, m: done.append(e))
p.flush(10)
print(sum(e is None for e in done))' "$BROKER"
check_eq "$OUT" "2" "a producer idle for three limits delivers its next record"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('idle_t', 0, 0, 10)")" \
	"one,two" "both records are in the log, once"

finish
