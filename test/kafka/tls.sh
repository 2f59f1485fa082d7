#!/usr/bin/env bash
# mq-kafka's TLS listeners (issue 24), with a throwaway CA
# (test/kafka/tls_certs.bash): two listeners at once (PLAINTEXT and SSL),
# each advertising its own address in Metadata; kcat, librdkafka
# (rdk_client.c), kafkajs and kafka-python produce, consume and commit in
# a group over SSL and over mutual TLS, where the client certificate's
# subject, mapped by ssl.principal.mapping.rules, is the role the
# requests run as; an expired certificate, one from an untrusted CA, a
# subject no rule maps, a plaintext client on the TLS port and TLS 1.1
# are refused and leave no connection and no record behind; SIGHUP
# reloads the certificate without dropping a live connection, and a bad
# certificate keeps the old one; ssl.client.auth=required refuses a
# client without a certificate.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
source "$(dirname "${BASH_SOURCE[0]}")/tls_certs.bash"
T="$(tmpdir)"
C="$T/pki"
PY=/usr/bin/python3 # Debian's python3-kafka

tls_make_certs "$C" || { fail "the test PKI is made"; finish; }
# mq-kafka reads its certificate from here: the reload test replaces it
cp "$C/server.crt" "$T/live.crt"
cp "$C/server.key" "$T/live.key"

# roles are the cluster's, shared by every test database: made once
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_tls_app1') THEN CREATE ROLE mq_tls_app1; END IF;
END \$\$" >/dev/null
sql "SELECT mq.create_topic('tls_t', 1), mq.create_topic('tls_ro', 1), mq.create_topic('tls_rdk', 3)" >/dev/null
for t in tls_t tls_rdk; do
	sql "SELECT mq.grant('read, write, describe', 'topic', '$t', 'mq_tls_app1')" >/dev/null
done
sql "SELECT mq.grant('read, describe', 'topic', 'tls_ro', 'mq_tls_app1')" >/dev/null
sql "SELECT mq.grant('read', 'group', 'tls_*', 'mq_tls_app1')" >/dev/null

P_PLAIN="$(_free_port)"
P_SSL="$(_free_port)"
METRICS="127.0.0.1:$(_free_port)"
SSL_B="127.0.0.1:$P_SSL"
RULES='RULE:^CN=([^,]*),OU=clients,O=mq test$/mq_tls_$1/L'
# a subject with emailAddress as Kafka's broker writes it (Java's RFC 2253:
# the attribute's OID and its DER in hex), which a rule written for Kafka matches
RULES+=',RULE:^1.2.840.113549.1.9.1=#16056140622e63,CN=([^,]*),OU=clients,O=mq test$/mq_tls_$1/L'

# tls_start [OPTION...]: mq-kafka on both listeners, until the SSL one accepts
tls_start() {
	"$MQ_KAFKA" -d "dbname=$PGDATABASE" --group-initial-delay-ms 300 --metrics "$METRICS" \
		--listeners "PLAINTEXT://127.0.0.1:$P_PLAIN,SSL://127.0.0.1:$P_SSL" \
		--advertised-listeners "PLAINTEXT://localhost:$P_PLAIN" \
		--ssl-certificate "$T/live.crt" --ssl-key "$T/live.key" --ssl-ca "$C/ca.crt" \
		--ssl-principal-mapping-rules "$RULES" "$@" >>"$T/mq-kafka.log" 2>&1 &
	KAFKA_PID=$!
	wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$P_SSL" 2>/dev/null ||
		{ sed 's/^/#   /' "$T/mq-kafka.log" >&2; return 1; }
}
connections() { curl -s "http://$METRICS/metrics" | awk '$1 == "mq_kafka_connections" {print $2}'; }
records() { sql "SELECT count(*) FROM mq.fetch('$1', 0, 0, 1000)"; }

tls_start --ssl-client-auth requested || { fail "mq-kafka starts with two listeners"; finish; }
check_match "$(cat "$T/mq-kafka.log")" "listener SSL \\(SSL\\) on 127.0.0.1:$P_SSL, advertised as 127.0.0.1:$P_SSL" \
	"the SSL listener is up"

# kcat's settings in files (-F): server-authenticated TLS, and mutual TLS
printf 'security.protocol=ssl\nssl.ca.location=%s\n' "$C/ca.crt" >"$T/ssl.conf"
for who in client expired rogue other mailed; do
	cat "$T/ssl.conf" - >"$T/$who.conf" <<EOF
ssl.certificate.location=$C/$who.crt
ssl.key.location=$C/$who.key
EOF
done

# --- two listeners, each advertising its own address
run timeout 60 kcat -b "127.0.0.1:$P_PLAIN" -L -J
check_match "$OUT" "\"name\":\"localhost:$P_PLAIN\"" "Metadata over PLAINTEXT gives the PLAINTEXT listener's advertised address"
check_no_match "$OUT" ":$P_SSL\"" "and not the SSL listener's"
run timeout 60 kcat -b "$SSL_B" -F "$T/ssl.conf" -L -J
check_match "$OUT" "\"name\":\"127.0.0.1:$P_SSL\"" "Metadata over SSL gives the SSL listener's address"
check_no_match "$OUT" ":$P_PLAIN\"" "and not the PLAINTEXT listener's"

# --- kcat over SSL (no client certificate: the daemon's role) and mutual TLS
printf 'one\ntwo\nthree\n' >"$T/in"
run timeout 60 kcat -b "$SSL_B" -F "$T/ssl.conf" -P -t tls_ro -p 0 -l "$T/in"
check_eq "$RC:$(records tls_ro)" "0:3" "kcat produces over SSL without a client certificate"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -P -t tls_t -p 0 -l "$T/in"
check_eq "$RC:$(records tls_t)" "0:3" "kcat produces over mutual TLS as mq_tls_app1 (write on tls_t)"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -C -t tls_t -p 0 -o beginning -e -q
check_eq "$OUT" $'one\ntwo\nthree' "and consumes them"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -P -t tls_ro -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "Topic authorization failed" \
	"the certificate's principal mq_tls_app1 (read only on tls_ro) gets TOPIC_AUTHORIZATION_FAILED"
check_eq "$(records tls_ro)" "3" "and nothing of it was stored"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -C -G tls_gk -o beginning -e -q tls_t
check_eq "$(sort <<<"$OUT" | tr '\n' ,)" "one,three,two," "kcat consumes in a group over mutual TLS"
check_eq "$(sql "SELECT mq.committed_offset('tls_gk', 'tls_t', 0)")" "3" "and its commit is mq's"

# --- librdkafka (C): an idempotent producer and a three-member group, mutual TLS
cc -O2 -Wall -o "$T/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread || fail "rdk_client builds"
cp "$T/client.conf" "$T/rdk.conf"
run env RDK_CONF="$T/rdk.conf" RDK_PACE_US=0 timeout 120 "$T/rdk_client" produce "$SSL_B" tls_rdk 3000 lz4
expect_rc 0 "librdkafka produces 3000 records over mutual TLS"
run env RDK_CONF="$T/rdk.conf" timeout 150 "$T/rdk_client" group "$SSL_B" tls_rdk 3000 tls_gr
expect_rc 0 "a librdkafka group of three commits each record exactly once over mutual TLS"
check_eq "$(sql "SELECT sum(mq.committed_offset('tls_gr', 'tls_rdk', p)) FROM generate_series(0, 2) p")" "3000" \
	"its commits are mq's"

# --- kafkajs and kafka-python, over SSL and over mutual TLS
js_install kafkajs
run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/tls.js "$SSL_B" tls_t tls_gj "$C" client
check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{consumed}') $(json_get "$OUT" '{committed}')" "true 5 8" \
	"kafkajs produces, consumes and commits in a group over mutual TLS"
run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/tls.js "$SSL_B" tls_ro tls_gj2 "$C" client
check_match "$(json_get "$OUT" '{produceError}')" "TOPIC_AUTHORIZATION_FAILED" "kafkajs as mq_tls_app1 may not write tls_ro"
run env KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 node test/kafka/js/tls.js "$SSL_B" tls_ro tls_gj3 "$C"
check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{consumed}')" "true 5" "kafkajs over SSL without a client certificate"
run timeout 120 "$PY" test/kafka/py/tls.py clients "$SSL_B" tls_t tls_gp "$C" client
check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{committed}')" "[8, 9, 10, 11, 12, 13] 14" \
	"kafka-python produces, consumes and commits over mutual TLS"
check_eq "$(json_get "$OUT" '{consumed}')" '["py0", "py1", "py2", "py3", "py4", "py5"]' "and reads its records back"
run timeout 120 "$PY" test/kafka/py/tls.py clients "$SSL_B" tls_ro tls_gp2 "$C"
check_eq "$(json_get "$OUT" '{committed}')" "14" "kafka-python over SSL without a client certificate"

# a rule written for the subject as Kafka writes it maps the certificate
# with an emailAddress (OpenSSL's own form, emailAddress=a@b.c first, did not)
before_t="$(records tls_t)"
run timeout 60 kcat -b "$SSL_B" -F "$T/mailed.conf" -P -t tls_t -p 0 -l "$T/in"
check_eq "$RC:$(($(records tls_t) - before_t))" "0:3" \
	"a subject with emailAddress, written as Kafka writes it (1.2.840.113549.1.9.1=#16056140622e63,CN=app1,...), maps to mq_tls_app1"

# --- refusals: nothing authenticated, nothing stored, no connection left
before_t="$(records tls_t)"
for who in expired rogue other; do
	run timeout 30 kcat -b "$SSL_B" -F "$T/$who.conf" -P -t tls_t -p 0 -X message.timeout.ms=3000 -l "$T/in"
	check_eq "$RC" "1" "a client with the $who certificate cannot produce"
done
check_match "$(cat "$T/mq-kafka.log")" "client certificate: certificate has expired" "the expired certificate is refused in the handshake"
check_match "$(cat "$T/mq-kafka.log")" "client certificate: unable to get local issuer certificate" \
	"the untrusted CA's certificate is refused in the handshake"
check_match "$(cat "$T/mq-kafka.log")" 'no ssl principal mapping rule applies to certificate subject "CN=app2,OU=ops,O=mq test", closing' \
	"a subject no mapping rule applies to is refused"
run timeout 30 kcat -b "$SSL_B" -P -t tls_t -p 0 -X message.timeout.ms=3000 -l "$T/in"
check_eq "$RC" "1" "a plaintext client on the TLS port cannot produce"
check_match "$(cat "$T/mq-kafka.log")" "tls: .*(wrong version number|packet length too long|http request)" \
	"it fails the handshake"
run timeout 10 openssl s_client -connect "$SSL_B" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' </dev/null
check_match "$OUT$ERR" "(no protocols available|unsupported protocol|alert protocol version|wrong version number)" \
	"TLS 1.1 is refused"
check_match "$OUT" "New, \(NONE\), Cipher is \(NONE\)" "no TLS 1.1 session is made"
run timeout 10 openssl s_client -connect "$SSL_B" -tls1_2 -CAfile "$C/ca.crt" </dev/null
check_match "$OUT" "New, TLSv1.2, Cipher is" "TLS 1.2 is served"
run timeout 10 openssl s_client -connect "$SSL_B" -tls1_3 -CAfile "$C/ca.crt" </dev/null
check_match "$OUT" "New, TLSv1.3, Cipher is" "TLS 1.3 is served"
check_eq "$(records tls_t)" "$before_t" "the refused clients stored nothing"
wait_eq 10 0 connections || true
check_eq "$(connections)" "0" "and left no connection open"

# --- SIGHUP: a new certificate for new connections, the live one kept
coproc LIVE { "$PY" test/kafka/py/tls.py live "$SSL_B" "$C"; }
read -r -t 30 live_state live_fp <&"${LIVE[0]}" || true
check_eq "$live_state" "ready" "a TLS connection is open"
check_eq "$live_fp" "$(openssl x509 -in "$C/server.crt" -outform DER | sha256sum | cut -d' ' -f1)" "with the first certificate"
cp "$C/server2.crt" "$T/live.crt"
cp "$C/server2.key" "$T/live.key"
kill -HUP "$KAFKA_PID"
wait_for 10 grep -q "tls reloaded" "$T/mq-kafka.log" || true
check_match "$(cat "$T/mq-kafka.log")" "tls reloaded: new connections use certificate" "SIGHUP reloads (logged)"
fp2="$(openssl x509 -in "$C/server2.crt" -outform DER | sha256sum | cut -d' ' -f1)"
new_fp() { timeout 10 openssl s_client -connect "$SSL_B" -CAfile "$C/ca.crt" </dev/null 2>/dev/null |
	openssl x509 -outform DER 2>/dev/null | sha256sum | cut -d' ' -f1; }
check_eq "$(new_fp)" "$fp2" "a new connection gets the new certificate"
live_after=""
if [[ -n "${LIVE[1]:-}" ]]; then
	echo go >&"${LIVE[1]}" || true
	read -r -t 30 live_after <&"${LIVE[0]}" || true
fi
check_eq "$live_after" "same connection ok" "the connection made before the reload still works"
wait "$LIVE_PID" 2>/dev/null || true
echo "not a certificate" >"$T/live.crt"
kill -HUP "$KAFKA_PID"
wait_for 10 grep -q "tls reload failed" "$T/mq-kafka.log" || true
check_match "$(cat "$T/mq-kafka.log")" "cannot load the certificate \"$T/live.crt\"" "a bad certificate is logged"
check_match "$(cat "$T/mq-kafka.log")" "tls reload failed: new connections keep the previous certificate and key" \
	"and the old one is kept"
check_eq "$(new_fp)" "$fp2" "new connections still get the last good certificate"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -L
expect_rc 0 "and clients still connect"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
kafka_kill

# --- ssl.client.auth=required: no certificate, no connection
cp "$C/server.crt" "$T/live.crt"
cp "$C/server.key" "$T/live.key"
tls_start --ssl-client-auth required || { fail "mq-kafka starts with required client certificates"; finish; }
run timeout 30 kcat -b "$SSL_B" -F "$T/ssl.conf" -L -m 5
check_eq "$RC" "1" "ssl.client.auth=required: a client without a certificate is refused"
check_match "$(cat "$T/mq-kafka.log")" "tls: .*peer did not return a certificate" "in the handshake"
run timeout 60 kcat -b "$SSL_B" -F "$T/client.conf" -L
expect_rc 0 "a client with its certificate gets in"

# --- a DEFAULT rule passes an unmatched subject through: a principal no
# role has is refused as Kafka refuses one no ACL names
kafka_kill
tls_start --ssl-client-auth required --ssl-principal-mapping-rules "$RULES,DEFAULT" ||
	{ fail "mq-kafka starts with a DEFAULT mapping rule"; finish; }
run timeout 30 kcat -b "$SSL_B" -F "$T/other.conf" -P -t tls_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "Topic authorization failed" \
	"the principal CN=app2,OU=ops,O=mq test, which no role has, gets TOPIC_AUTHORIZATION_FAILED on produce"
run timeout 30 kcat -b "$SSL_B" -F "$T/other.conf" -C -t tls_t -p 0 -o beginning -e -q
check_match "$ERR" "[Aa]uthoriz" "and on fetch"

# --- bad settings are usage errors
run "$MQ_KAFKA" --listeners "SSL://127.0.0.1:1"
check_match "$ERR" "needs --ssl-certificate and --ssl-key" "an SSL listener without a certificate is refused"
run "$MQ_KAFKA" --listeners "EXTERNAL://127.0.0.1:1"
check_match "$ERR" "is not a security protocol" "a listener name that is no protocol needs the map"
run "$MQ_KAFKA" --listeners "PLAINTEXT://127.0.0.1:1" --listen 127.0.0.1:2
check_match "$ERR" "replaces --listen" "--listeners and --listen exclude each other"
run "$MQ_KAFKA" --listeners "SSL://127.0.0.1:1" --ssl-certificate "$C/server.crt" --ssl-key "$C/server.key" \
	--ssl-principal-mapping-rules 'RULE:^CN=(.*/x'
check_match "$ERR" "a mapping rule must be RULE:pattern/replacement" "a malformed mapping rule is refused"
run "$MQ_KAFKA" --listeners "SSL://127.0.0.1:1" --ssl-certificate "$C/server.crt" --ssl-key "$C/other.key"
check_match "$ERR" "cannot load the private key .*key values mismatch" "a key that is not the certificate's is refused"

finish
