#!/usr/bin/env bash
# A client that pipelines requests and does not read the answers (a slow
# link, or on purpose) must not make mq-kafka hold every answer in memory:
# as Kafka mutes a connection until its response is sent, the daemon reads
# the next request only once the unwritten output is down to 64 kB.  A
# client sends 120 Fetch requests whose answers are about 1 MB each,
# reads nothing until the daemon has stopped answering, then reads all 120,
# in order; in clear text and over TLS.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
source "$(dirname "${BASH_SOURCE[0]}")/tls_certs.bash"
T="$(tmpdir)"
N=120

tls_make_certs "$T/pki" || { fail "the test PKI is made"; finish; }
METRICS="127.0.0.1:$(_free_port)"
P_PLAIN="$(_free_port)"
P_SSL="$(_free_port)"
"$MQ_KAFKA" -d "dbname=$PGDATABASE" --metrics "$METRICS" --listeners "PLAINTEXT://127.0.0.1:$P_PLAIN,SSL://127.0.0.1:$P_SSL" \
	--ssl-certificate "$T/pki/server.crt" --ssl-key "$T/pki/server.key" >>"$T/mq-kafka.log" 2>&1 &
KAFKA_PID=$! # lib.bash's kafka_kill stops it at the end
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$P_SSL" 2>/dev/null || { fail "mq-kafka starts" "$(cat "$T/mq-kafka.log")"; finish; }
sql "SELECT mq.create_topic('slow_t', 1)" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('slow_t', NULL::bytea[],
	(SELECT array_agg(convert_to(repeat(md5(g::text), 32), 'UTF8')) FROM generate_series(1, 1100) g), partition => 0)" >/dev/null

for mode in plaintext tls; do
	if [[ $mode == tls ]]; then args=("$P_SSL" slow_t "$N" "$METRICS" "$KAFKA_PID" "$T/pki/ca.crt"); else
		args=("$P_PLAIN" slow_t "$N" "$METRICS" "$KAFKA_PID"); fi
	run timeout 120 env PYTHONPATH=test/kafka/py /usr/bin/python3 test/kafka/py/slow_reader.py "${args[@]}"
	expect_rc 0 "$mode: the slow reader runs"
	printf '# %s: %s\n' "$mode" "$OUT"
	check_eq "$(json_get "$OUT" '{read_in_order}') $(json_get "$OUT" '{with_records}')" "$N $N" \
		"$mode: every answer arrives once the client reads, in request order, each with records"
	check_match "$(json_get "$OUT" '{answered_unread}')" '^([1-9]|[1-9][0-9])$' \
		"$mode: while the client reads nothing, the daemon answers a few requests, not all $N"
	growth="$(json_get "$OUT" '{rss_growth_mb}')"
	check_eq "$((${growth:-999} < 64))" 1 "$mode: and its memory grows by well under the $N MB of answers (${growth} MB)"
done

finish
