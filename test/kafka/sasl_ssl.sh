#!/usr/bin/env bash
# SASL_SSL (issue 24): SCRAM-SHA-256 and -512 over TLS, with a throwaway
# CA (tls_certs.bash). kcat, librdkafka (rdk_client.c), kafkajs and
# kafka-python each produce, consume and commit in a group as the role of
# their user name; a wrong password is refused over TLS as without it and
# leaves nothing behind; PLAIN, refused on plaintext connections
# (scram.sh), is offered over TLS; a client that does not speak TLS to the
# SASL_SSL listener is refused.  The daemon runs with --ssl-client-auth
# required, which, as Kafka's ssl.client.auth (KIP-684), SASL_SSL
# listeners ignore: none of these clients has a certificate.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
source "$(dirname "${BASH_SOURCE[0]}")/tls_certs.bash"
T="$(tmpdir)"
C="$T/pki"
PY=/usr/bin/python3 # Debian's python3-kafka

tls_make_certs "$C" || { fail "the test PKI is made"; finish; }
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sslsasl_app') THEN CREATE ROLE mq_sslsasl_app; END IF;
END \$\$" >/dev/null
PW="app-$RANDOM-$RANDOM-ssl"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT mq.set_scram_credential('mq_sslsasl_app', 'SCRAM-SHA-256', '$PW');
SELECT mq.set_scram_credential('mq_sslsasl_app', 'SCRAM-SHA-512', '$PW');
SQL
sql "SELECT mq.create_topic('ss_t', 1), mq.create_topic('ss_rdk', 3)" >/dev/null
for t in ss_t ss_rdk; do sql "SELECT mq.grant('read, write', 'topic', '$t', 'mq_sslsasl_app')" >/dev/null; done
sql "SELECT mq.grant('read', 'group', 'ss_', 'mq_sslsasl_app', 'prefixed')" >/dev/null

P="$(_free_port)"
B="127.0.0.1:$P"
"$MQ_KAFKA" -d "dbname=$PGDATABASE" --group-initial-delay-ms 300 --listeners "SASL_SSL://127.0.0.1:$P" \
	--ssl-certificate "$C/server.crt" --ssl-key "$C/server.key" --ssl-ca "$C/ca.crt" --ssl-client-auth required \
	--sasl=scram-sha-256,scram-sha-512,plain >>"$T/mq-kafka.log" 2>&1 &
KAFKA_PID=$! # lib.bash's kafka_kill stops it at the end
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$P" 2>/dev/null || { fail "mq-kafka starts" "$(cat "$T/mq-kafka.log")"; finish; }

conf() { # FILE MECHANISM PASSWORD: librdkafka settings, the password in a mode-600 file
	printf 'security.protocol=SASL_SSL\nssl.ca.location=%s\nsasl.mechanisms=%s\nsasl.username=mq_sslsasl_app\nsasl.password=%s\n' \
		"$C/ca.crt" "$2" "$3" >"$T/$1.conf"
	chmod 600 "$T/$1.conf"
}
conf s256 SCRAM-SHA-256 "$PW"
conf s512 SCRAM-SHA-512 "$PW"
conf wrong SCRAM-SHA-256 "$PW-wrong"

# kcat
printf 'one\ntwo\n' >"$T/in"
run kcat -b "$B" -F "$T/s256.conf" -P -t ss_t -p 0 -l "$T/in"
expect_rc 0 "kcat produces over SASL_SSL with SCRAM-SHA-256, without a client certificate: --ssl-client-auth is the SSL listeners' (KIP-684)"
run kcat -b "$B" -F "$T/s512.conf" -C -G ss_kcat -o beginning -e -q -X enable.auto.commit=true \
	-X auto.commit.interval.ms=100 ss_t
check_eq "$(sort <<<"$OUT" | tr '\n' ,)" "one,two," "kcat consumes in a group over SASL_SSL with SCRAM-SHA-512"
wait_eq 10 2 sql "SELECT mq.committed_offset('ss_kcat', 'ss_t', 0)" || fail "kcat's group commits"

# librdkafka (C)
cc -O2 -Wall -o "$T/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread || fail "rdk_client builds"
run env RDK_CONF="$T/s256.conf" timeout 120 "$T/rdk_client" produce "$B" ss_rdk 300 none
expect_rc 0 "librdkafka produces 300 records over SASL_SSL with SCRAM-SHA-256"
run env RDK_CONF="$T/s512.conf" timeout 150 "$T/rdk_client" group "$B" ss_rdk 300 ss_rdk
expect_rc 0 "librdkafka's three group members commit each record once over SASL_SSL with SCRAM-SHA-512"
check_eq "$(sql "SELECT sum(mq.committed_offset('ss_rdk', 'ss_rdk', p)) FROM generate_series(0, 2) p")" "300" \
	"their commits are mq's"

# kafkajs and kafka-python
js_install kafkajs
for mech in scram-sha-256 scram-sha-512; do
	run env MQ_SASL_PASSWORD="$PW" MQ_SASL_MECHANISM="$mech" MQ_SSL_CA="$C/ca.crt" KAFKAJS_NO_PARTITIONER_WARNING=1 \
		timeout 120 node test/kafka/js/sasl.js "$B" ss_t "ss_js_$mech" mq_sslsasl_app
	check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{consumed}')" "true 5" \
		"kafkajs produces and consumes in a group over SASL_SSL with $mech"
done
for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
	run env MQ_SASL_PASSWORD="$PW" MQ_SSL_CA="$C/ca.crt" timeout 120 "$PY" test/kafka/py/scram.py "$B" ss_t "ss_py_$mech" \
		mq_sslsasl_app "$mech"
	check_eq "$(json_get "$OUT" '{consumed}') $(json_get "$OUT" '{error}')" '["py0", "py1", "py2", "py3"] ' \
		"kafka-python produces, consumes and commits over SASL_SSL with $mech"
	check_eq "$(sql "SELECT mq.committed_offset('ss_py_$mech', 'ss_t', 0) > 0")" "t" "its commit is mq's"
done

# refusals: a wrong password over TLS, and a client without TLS
before="$(sql "SELECT count(*) FROM mq.fetch('ss_t', 0, 0, 100)")"
run timeout 30 kcat -b "$B" -F "$T/wrong.conf" -P -t ss_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "[Aa]uthentication failed: invalid user name or password" "a wrong password is refused over SASL_SSL"
run timeout 30 kcat -b "$B" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-256 \
	-X sasl.username=mq_sslsasl_app -X sasl.password=x -P -t ss_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "Disconnected|transport failure|timed out|SSL" "a client without TLS is refused by the SASL_SSL listener"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('ss_t', 0, 0, 100)")" "$before" "and neither left a record behind"
check_match "$(cat "$T/mq-kafka.log")" 'listener SASL_SSL \(SASL_SSL\) on 127.0.0.1' "the daemon names its SASL_SSL listener"
if grep -qF -- "$PW" "$T/mq-kafka.log"; then fail "no password in the daemon's log"; else pass "no password in the daemon's log"; fi

finish
