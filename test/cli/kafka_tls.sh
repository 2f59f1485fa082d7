#!/usr/bin/env bash
# One TLS exchange with mq-kafka, here among the CLI tests because the
# sanitize phase runs them (scripts/sanitize.sh: there mq-kafka is built
# with -fsanitize=address,undefined, and any report fails the phase): an
# SSL listener asking for client certificates; kcat produces over mutual
# TLS (the certificate's mapped principal), consumes over TLS without a
# certificate, is refused with an expired certificate and by TLS 1.1, then
# SIGHUP reloads, and mq-kafka stops on SIGTERM so that LeakSanitizer looks
# at its exit.  test/kafka/tls.sh is the whole TLS test.
source "$(dirname "${BASH_SOURCE[0]}")/../kafka/lib.bash"
source "$(dirname "${BASH_SOURCE[0]}")/../kafka/tls_certs.bash"
T="$(tmpdir)"
C="$T/pki"
tls_make_certs "$C" || { fail "the test PKI is made"; finish; }

sql "SELECT mq.create_topic('ktls', 1)" >/dev/null
KAFKA_PORT="$(_free_port)"
B="127.0.0.1:$KAFKA_PORT"
"$MQ_KAFKA" -d "dbname=$PGDATABASE" --listeners "SSL://$B" --ssl-certificate "$C/server.crt" \
	--ssl-key "$C/server.key" --ssl-ca "$C/ca.crt" --ssl-client-auth requested \
	--ssl-principal-mapping-rules 'RULE:^CN=([^,]*),.*$/mq_tls_$1/L' >"$T/mq-kafka.log" 2>&1 &
KAFKA_PID=$!
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$KAFKA_PORT" 2>/dev/null || fail "mq-kafka listens on TLS"

printf 'security.protocol=ssl\nssl.ca.location=%s\n' "$C/ca.crt" >"$T/ssl.conf"
for who in client expired; do
	printf 'ssl.certificate.location=%s\nssl.key.location=%s\n' "$C/$who.crt" "$C/$who.key" |
		cat "$T/ssl.conf" - >"$T/$who.conf"
done
# the principal CN=app1 -> role mq_tls_app1, which the test server's superuser may take
sql "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_tls_app1') THEN CREATE ROLE mq_tls_app1; END IF; END \$\$" >/dev/null
sql "SELECT mq.grant('write, describe', 'topic', 'ktls', 'mq_tls_app1')" >/dev/null

printf 'a\nb\n' >"$T/in"
run timeout 60 kcat -b "$B" -F "$T/client.conf" -P -t ktls -p 0 -l "$T/in"
check_eq "$RC:$(sql "SELECT count(*) FROM mq.fetch('ktls', 0, 0, 10)")" "0:2" "kcat produces over mutual TLS as mq_tls_app1"
run timeout 60 kcat -b "$B" -F "$T/ssl.conf" -C -t ktls -p 0 -o beginning -e -q
check_eq "$OUT" $'a\nb' "and consumes over TLS without a certificate"
run timeout 30 kcat -b "$B" -F "$T/expired.conf" -L -m 3
check_match "$(cat "$T/mq-kafka.log")" "certificate has expired" "an expired certificate is refused"
run timeout 10 openssl s_client -connect "$B" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' </dev/null
check_match "$(cat "$T/mq-kafka.log")" "unsupported protocol" "TLS 1.1 is refused"
kill -HUP "$KAFKA_PID"
wait_for 10 grep -q "tls reloaded" "$T/mq-kafka.log" || true
check_match "$(cat "$T/mq-kafka.log")" "tls reloaded" "SIGHUP reloads the certificate"
kill -TERM "$KAFKA_PID"
rc=0
wait "$KAFKA_PID" || rc=$?
check_eq "$rc" "0" "mq-kafka stops cleanly on SIGTERM"
KAFKA_PID=""

finish
