#!/usr/bin/env bash
# mq-kafka --sasl=plain --sasl-plain-on-plaintext: kcat and kafkajs authenticate as PostgreSQL roles
# (PostgreSQL checks the password: scripts/lib.sh's clusters ask members of
# mq_sasl_test for one) and act with exactly that role's mq rights; a role
# without write gets TOPIC_AUTHORIZATION_FAILED, a wrong password and an
# unauthenticated client are turned away; raw frames (protocol.pl sasl,
# also: one role's read-ahead never answers another's Fetch, and an
# OffsetFetch of two groups refuses only the one she may not read);
# no password reaches a log.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

# roles are the cluster's, shared by every test database: made once
PW_ALICE="alice-$RANDOM-$RANDOM-secret"
PW_BOB="bob-$RANDOM-$RANDOM-secret"
PW_DAVE="dave-$RANDOM-$RANDOM-secret"
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_test') THEN CREATE ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_alice') THEN CREATE ROLE mq_sasl_alice LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_bob') THEN CREATE ROLE mq_sasl_bob LOGIN IN ROLE mq_sasl_test; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_dave') THEN CREATE ROLE mq_sasl_dave LOGIN IN ROLE mq_sasl_test; END IF;
	-- not a member: pg_hba.conf trusts it, so no password proves anything
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_sasl_carol') THEN CREATE ROLE mq_sasl_carol LOGIN; END IF;
END \$\$" >/dev/null
# the passwords go to PostgreSQL through psql's stdin, never a command line
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<EOF
ALTER ROLE mq_sasl_alice PASSWORD '$PW_ALICE';
ALTER ROLE mq_sasl_bob PASSWORD '$PW_BOB';
ALTER ROLE mq_sasl_dave PASSWORD '$PW_DAVE';
EOF
sql "SELECT mq.create_topic('sasl_t', 1)" >/dev/null
sql "SELECT mq.grant('read, write', 'topic', 'sasl_t', 'mq_sasl_alice')" >/dev/null
sql "SELECT mq.grant('read', 'group', 'sasl_g', 'mq_sasl_alice')" >/dev/null
sql "SELECT mq.grant('read', 'topic', 'sasl_t', 'mq_sasl_bob')" >/dev/null

kafka_start --sasl=plain --sasl-plain-on-plaintext || { fail "mq-kafka starts"; finish; }

# kcat's settings, the password among them, in a config file (-F)
kcat_conf() {
	printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\n' "$1" "$2" >"$T/$3.conf"
	chmod 600 "$T/$3.conf"
}
kcat_conf mq_sasl_alice "$PW_ALICE" alice
kcat_conf mq_sasl_bob "$PW_BOB" bob
kcat_conf mq_sasl_alice "$PW_ALICE-wrong" wrong
kcat_conf mq_sasl_carol "$PW_ALICE" carol

printf 'one\ntwo\nthree\n' >"$T/in"
run kcat_ -F "$T/alice.conf" -P -t sasl_t -p 0 -l "$T/in"
check_eq "$RC:$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('sasl_t', 0, 0, 10)")" \
	"0:one,two,three" "alice (write on the topic) produces with kcat over SASL/PLAIN"
run kcat_ -F "$T/alice.conf" -C -t sasl_t -p 0 -o beginning -e -q
check_eq "$OUT" $'one\ntwo\nthree' "alice consumes them"
run kcat_ -F "$T/alice.conf" -C -G sasl_g -o beginning -e -q sasl_t
check_eq "$(sort <<<"$OUT" | tr '\n' ,)" "one,three,two," "alice consumes in her group"

run timeout 60 kcat -b "$BROKER" -F "$T/bob.conf" -P -t sasl_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "Topic authorization failed" "bob (read only) gets TOPIC_AUTHORIZATION_FAILED on produce"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('sasl_t', 0, 0, 10)")" "3" "and nothing of bob's was stored"
run kcat_ -F "$T/bob.conf" -C -t sasl_t -p 0 -o beginning -e -q
check_eq "$OUT" $'one\ntwo\nthree' "bob may read"
run timeout 15 kcat -b "$BROKER" -F "$T/bob.conf" -C -G sasl_g -o beginning -e -q sasl_t
check_match "$ERR" "Group authorization failed" "bob (no right on the group) may not join it"

run timeout 30 kcat -b "$BROKER" -F "$T/wrong.conf" -L -m 5
check_match "$ERR" "[Aa]uthentication failed" "a wrong password fails authentication"
run timeout 30 kcat -b "$BROKER" -F "$T/carol.conf" -L -m 5
check_match "$ERR" "[Aa]uthentication failed" "a role that pg_hba.conf trusts is refused: no password was checked"
check_match "$(cat "$T/mq-kafka.log")" "let \"mq_sasl_carol\" connect without a password" "and the daemon says why"
run timeout 30 kcat -b "$BROKER" -L -m 3
check_no_match "$OUT" "sasl_t" "a client without SASL sees no metadata"

# Kafka's sasl.server.max.receive.size (512 KiB): a larger frame before
# authentication closes the connection at once, without waiting for it
big_frame() { # SIZE: seconds until the daemon closes a connection that announced a frame of SIZE bytes
	perl -MIO::Socket::INET -MTime::HiRes=time -e '
		my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], Timeout => 5) or die "connect: $!\n";
		my $t0 = time;
		print $s pack("N", $ARGV[1]), "\0" x 1024;
		$s->flush;
		vec(my $r = "", fileno($s), 1) = 1;
		print select($r, undef, undef, 2) && !sysread($s, my $b, 1) ? "closed\n" : "open\n";' "$BROKER" "$1"
}
check_eq "$(big_frame 600000)" "closed" "a 600,000-byte frame before authentication closes the connection at once"
check_match "$(cat "$(tmpdir)/mq-kafka.log")" "frame size 600000 out of range before authentication" "and the daemon says why"
check_eq "$(big_frame 400000)" "open" "a 400,000-byte one is read (and then refused as the request it is not)"
head -c 700000 /dev/zero | tr '\0' x >"$T/big"
run kcat_ -F "$T/alice.conf" -P -t sasl_t -p 0 -X message.max.bytes=1000000 "$T/big"
check_eq "$RC:$(sql "SELECT max(length(value)) FROM mq.fetch('sasl_t', 0, 0, 10)")" "0:700000" \
	"once authenticated, alice produces a 700,000-byte record"
check_match "$(cat "$T/mq-kafka.log")" "api key 3 before sasl authentication, closing" \
	"and is disconnected"

run env MQ_SASL_PASSWORD="$PW_ALICE" MQ_SASL_PASSWORD_OTHER="$PW_DAVE" \
	perl test/kafka/protocol.pl "$KAFKA_PORT" sasl mq_sasl_alice mq_sasl_dave
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "protocol.pl sasl: every check passed"

js_install kafkajs
run env MQ_SASL_PASSWORD="$PW_ALICE" KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 \
	node test/kafka/js/sasl.js "$BROKER" sasl_t sasl_g mq_sasl_alice
check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{consumed}')" "true 5" \
	"kafkajs with sasl plain produces and consumes as alice"
run env MQ_SASL_PASSWORD="$PW_BOB" KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 \
	node test/kafka/js/sasl.js "$BROKER" sasl_t sasl_g mq_sasl_bob
check_match "$(json_get "$OUT" '{produceError}')" "TOPIC_AUTHORIZATION_FAILED" \
	"kafkajs as bob gets TOPIC_AUTHORIZATION_FAILED"

check_match "$(cat "$T/mq-kafka.log")" "password checks running: \"mq_sasl_alice\" waits" \
	"authentications beyond --pool wait for their turn"
check_no_match "$(cat "$T/mq-kafka.log")" $'\nforged: line' "a user name cannot forge a log line"
check_eq "$(grep -c -e "$PW_ALICE" -e "$PW_BOB" -e "$PW_DAVE" "$T/mq-kafka.log" "${MQ_SERVER_LOG:-/dev/null}" | awk -F: '{s += $NF} END {print s}')" \
	"0" "no password in mq-kafka's or PostgreSQL's log"
check_match "$(cat "$T/mq-kafka.log")" "sasl plain allowed without tls" "the daemon warns that PLAIN is allowed without TLS"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"

finish
