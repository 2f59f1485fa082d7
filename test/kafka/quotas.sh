#!/usr/bin/env bash
# Kafka's client quotas (DescribeClientQuotas and AlterClientQuotas,
# KIP-546; producer_byte_rate and consumer_byte_rate enforced as Kafka's
# broker does, KIP-13, KIP-219): quotas set in SQL are read by the daemon
# (its metrics count them); a client id over its producer_byte_rate gets
# a throttle time of about a second for 110 kB at 10000 B/s, and its next
# request waits that long; the same for Fetch and consumer_byte_rate; a
# client id without a quota is never throttled; request_percentage counts
# the time the database worked for a client, not the time its Fetch
# waited for records (py/quotas.py).  Then
# @platformatic/kafka's Admin at its defaults alters and describes
# quotas with every match type (platformatic/quotas.mjs), and what it set
# is what SQL lists.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

METRICS="127.0.0.1:$(_free_port)"
sql "SELECT mq.create_topic('quota_t', 1); SELECT mq.create_topic('quota_empty', 1)" >/dev/null
sql "SELECT mq.set_client_quota('producer_byte_rate', 10000, client_id => c) FROM unnest(ARRAY['q-slow-p3', 'q-slow-p7', 'q-slow-big', 'q-prec']) c;
     SELECT mq.set_client_quota('consumer_byte_rate', 10000, client_id => c) FROM unnest(ARRAY['q-slow-c4', 'q-slow-c11']) c;
     SELECT mq.set_client_quota('request_percentage', 0.0001, client_id => 'q-req-tiny');
     SELECT mq.set_client_quota('request_percentage', 5, client_id => 'q-req-poll')" >/dev/null
kafka_start --metrics "$METRICS" || { fail "mq-kafka starts"; finish; }
quotas_read() { curl -sf "http://$METRICS/metrics" | grep -qx 'mq_kafka_client_quotas 8'; }
wait_for 10 quotas_read || fail "the daemon reads the eight quotas (mq_kafka_client_quotas)"

# jcheck EXPR: EXPR over the JSON object j of the last run (true or false)
jcheck() { psql -X -q -At -v ON_ERROR_STOP=1 -v j="$OUT" <<<"SELECT $1 FROM (SELECT :'j'::jsonb AS j) x;"; }

run timeout 120 env PYTHONPATH=test/kafka/py /usr/bin/python3 test/kafka/py/quotas.py "$KAFKA_PORT" quota_t quota_empty
expect_rc 0 "the raw client runs"
printf '# %s\n' "$OUT"
for v in 3 7; do
	check_eq "$(jcheck "j->'produce_v$v'->>0 || ' ' || ((j->'produce_v$v'->>1)::int BETWEEN 800 AND 1500)")" "0 true" \
		"Produce v$v: 110 kB at producer_byte_rate 10000 is written, with a throttle time of about a second"
	check_eq "$(jcheck "(j->'produce_v${v}_next'->>0)::int >= 0.8 * (j->'produce_v$v'->>1)::int")" "t" \
		"Produce v$v: the next request on that connection is answered only after the throttle time"
done
check_eq "$(jcheck "j->>'free'")" "[0, 0, 0]" "a client id without a quota is never throttled"
for v in 4 11; do
	check_eq "$(jcheck "(j->>'fetch_v$v')::int BETWEEN 800 AND 1500")" "t" \
		"Fetch v$v: 110 kB at consumer_byte_rate 10000: a throttle time of about a second"
	check_eq "$(jcheck "(j->'fetch_v${v}_next'->>0)::int >= 0.8 * (j->>'fetch_v$v')::int")" "t" \
		"Fetch v$v: the next request waits the throttle time out"
done
check_eq "$(jcheck "(j->'produce_big'->>1)::int BETWEEN 20000 AND 26000")" "t" \
	"a byte rate's throttle time is Kafka's, unbounded: 330 kB at 10000 B/s answers about 23 s"
check_eq "$(jcheck "(j->>'prec_user')::int = 0 AND (j->>'prec_client')::int BETWEEN 800 AND 1500")" "t" \
	"Kafka's order: the user's quota (ANONYMOUS) before the client id's; removed, the client id's applies again"
check_eq "$(jcheck "(j->'req_tiny_next'->>0)::int BETWEEN 800 AND 3000")" "t" \
	"request_percentage 0.0001: the next request waits a second, the most Kafka mutes for a request quota"
check_eq "$(jcheck "(j->'req_poll'->>0)::int >= 1400 AND (j->'req_poll_next'->>0)::int < 500")" "t" \
	"request_percentage 5: a Fetch that waited 1.5 s for records is not throttled (waiting is not work)"
check_eq "$(jcheck "(j->>'alter_v0') || ' ' || (j->>'describe_v1')")" \
	'0 [0, null, "client-id:raw-v0,user:raw-user=producer_byte_rate:123456"]' \
	"AlterClientQuotas v0 sets a quota that DescribeClientQuotas v1 reads back"
check_eq "$(jcheck "(j->>'describe_refused') || ' ' || (j->>'alter_twice')")" \
	'[35, 42, 42] [[0, "user=raw-user", "client-id=raw-v0"], [42, "user=raw-user", "client-id=raw-v0"]]' \
	"as Kafka: an unknown entity type is UNSUPPORTED_VERSION, a named default match and ip with user INVALID_REQUEST; an entity given twice is refused the second time"
check_eq "$(jcheck "j->>'alter_ip'")" '[[42, "ip=10.0.0.1"]]' \
	"an ip quota is INVALID_REQUEST (nothing enforces it), its entity answered as sent"
check_match "$(curl -sf "http://$METRICS/metrics" | grep '^mq_kafka_throttle_seconds_total')" \
	' ([4-9]|[1-9][0-9])\.[0-9]+$' "the metrics count the time connections were muted"

sql "SELECT mq.set_client_quota(quota_key, NULL, user_name, client_id, default_user, default_client) FROM mq.list_client_quotas()" >/dev/null
platformatic_install || finish
run timeout 90 node test/kafka/platformatic/quotas.mjs "$BROKER"
expect_rc 0 "@platformatic/kafka's Admin runs"
printf '# %s\n' "$OUT"
check_eq "$(jcheck "j->>'alter'")" "[0, 0, 0, 0]" "alterClientQuotas sets a user, a user and client id, the default user and the default client id"
check_eq "$(jcheck "j->>'all'")" '["-/<default>=producer_byte_rate:7000", "<default>/-=consumer_byte_rate:5000", "alice/-=producer_byte_rate:1048576", "alice/app=consumer_byte_rate:2048,producer_byte_rate:4096"]' \
	"describeClientQuotas without a filter lists every entity with its values"
check_eq "$(jcheck "j->>'user_exact'")" '["alice/-=producer_byte_rate:1048576", "alice/app=consumer_byte_rate:2048,producer_byte_rate:4096"]' \
	"an exact user matches the user's entities, with other parts (not strict)"
check_eq "$(jcheck "j->>'user_exact_strict'")" '["alice/-=producer_byte_rate:1048576"]' \
	"strict: only the entity of the user alone"
check_eq "$(jcheck "j->>'user_default'")" '["<default>/-=consumer_byte_rate:5000"]' "match type default: the default user"
check_eq "$(jcheck "j->>'client_any'")" '["-/<default>=producer_byte_rate:7000", "alice/app=consumer_byte_rate:2048,producer_byte_rate:4096"]' \
	"match type any: every entity with a client id part, named or default"
check_eq "$(jcheck "j->>'both'")" '["alice/app=consumer_byte_rate:2048,producer_byte_rate:4096"]' \
	"two components, strict: the user and client id entity"
check_eq "$(jcheck "(j->>'nobody') || (j->>'validate_only')")" '[][]' \
	"a user without quotas matches nothing; validateOnly sets nothing"
check_eq "$(jcheck "j->>'remove'")" '["alice/app=producer_byte_rate:4096"]' "remove takes one key away, the others stay"
check_eq "$(jcheck "j->>'request_percentage'")" '["-/app2=request_percentage:25.5"]' \
	"request_percentage is set and described as a percentage"
check_eq "$(jcheck "concat_ws(' ', j->>'bad_key', j->>'bad_value', j->>'zero', j->>'ip', j->>'twice', j->>'after_refusals')")" \
	"ERR INVALID_REQUEST ERR INVALID_REQUEST ERR INVALID_REQUEST ERR INVALID_REQUEST ERR INVALID_REQUEST []" \
	"controller_mutation_rate, a fractional or zero byte rate, an ip entity and a type named twice are INVALID_REQUEST, nothing set"
check_eq "$(sql "SELECT string_agg(coalesce(user_name, CASE WHEN default_user THEN '<default>' ELSE '-' END) || '/' ||
                                   coalesce(client_id, CASE WHEN default_client THEN '<default>' ELSE '-' END) || '=' ||
                                   quota_key || ':' || quota_value, ' ')
                   FROM mq.list_client_quotas()")" \
	"-/<default>=producer_byte_rate:7000 -/app2=request_percentage:25.5 <default>/-=consumer_byte_rate:5000 alice/-=producer_byte_rate:1048576 alice/app=producer_byte_rate:4096" \
	"SQL lists what the Kafka client set"

finish
