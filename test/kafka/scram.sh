#!/usr/bin/env bash
# mq-kafka --sasl=scram-sha-256,scram-sha-512,plain over SASL_PLAINTEXT:
# credentials set in SQL (mq.set_scram_credential; mq keeps verifiers, not
# passwords); kcat, librdkafka (rdk_client.c), kafkajs and kafka-python
# authenticate with SCRAM-SHA-256 and -512, produce, consume and commit in
# a group as the role of their user name; a wrong password and an unknown
# user are refused alike and leave nothing behind; PLAIN is refused
# without TLS (test/kafka/sasl.sh allows it with --sasl-plain-on-plaintext);
# raw exchanges (scram.pl) check every server message and refusal; no
# password reaches a log.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"
PY=/usr/bin/python3 # Debian's python3-kafka

# roles are the cluster's, shared by every test database: made once
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_scram_alice') THEN CREATE ROLE mq_scram_alice; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_scram_bob') THEN CREATE ROLE mq_scram_bob; END IF;
END \$\$" >/dev/null
PW_ALICE="alice-$RANDOM-$RANDOM-scram"
PW_BOB="bob-$RANDOM-$RANDOM-scram"
# the passwords go to PostgreSQL through psql's stdin, never a command line
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<EOF
SELECT mq.set_scram_credential('mq_scram_alice', 'SCRAM-SHA-256', '$PW_ALICE', 8192);
SELECT mq.set_scram_credential('mq_scram_alice', 'SCRAM-SHA-512', '$PW_ALICE', 8192);
SELECT mq.set_scram_credential('mq_scram_bob', 'SCRAM-SHA-512', '$PW_BOB');
EOF
check_eq "$(sql "SELECT string_agg(user_name || '/' || mechanism || '/' || iterations, ',' ORDER BY 1) FROM mq.scram_credentials")" \
	"mq_scram_alice/SCRAM-SHA-256/8192,mq_scram_alice/SCRAM-SHA-512/8192,mq_scram_bob/SCRAM-SHA-512/4096" \
	"mq.scram_credentials lists the credentials set"
# from here on PostgreSQL logs every statement of this database with its
# parameters, as an audited server does: AlterUserScramCredentials below
# must not put a SaltedPassword (which logs in as its user) there
sql "ALTER DATABASE \"$PGDATABASE\" SET log_statement = 'all'" >/dev/null
on_exit "psql -X -q -c 'ALTER DATABASE \"$PGDATABASE\" RESET log_statement' >/dev/null 2>&1"
sql "SELECT mq.create_topic('scram_t', 1)" >/dev/null
sql "SELECT mq.grant('read, write', 'topic', 'scram_t', 'mq_scram_alice')" >/dev/null
sql "SELECT mq.grant('read', 'group', 'scram_g', 'mq_scram_alice')" >/dev/null
sql "SELECT mq.grant('read', 'group', 'scram_rdk', 'mq_scram_alice')" >/dev/null
sql "SELECT mq.grant('read', 'group', 'scram_g_', 'mq_scram_alice', 'prefixed')" >/dev/null
sql "SELECT mq.grant('read', 'topic', 'scram_t', 'mq_scram_bob')" >/dev/null

kafka_start --sasl=scram-sha-256,scram-sha-512,plain || { fail "mq-kafka starts"; finish; }

# client settings, the password among them, in files (mode 600)
conf() { # FILE USER PASSWORD MECHANISM
	printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=%s\nsasl.username=%s\nsasl.password=%s\n' "$4" "$2" "$3" >"$T/$1.conf"
	chmod 600 "$T/$1.conf"
}
conf a256 mq_scram_alice "$PW_ALICE" SCRAM-SHA-256
conf a512 mq_scram_alice "$PW_ALICE" SCRAM-SHA-512
conf wrong mq_scram_alice "$PW_ALICE-wrong" SCRAM-SHA-256
conf ghost mq_scram_ghost "$PW_ALICE" SCRAM-SHA-256
conf bob mq_scram_bob "$PW_BOB" SCRAM-SHA-512
conf plain mq_scram_alice "$PW_ALICE" PLAIN
# docs/kafka.md's client settings ("SCRAM"), with alice's name and password
awk '/^## SCRAM$/ { sec = 1; next } /^## / { sec = 0 }
	sec && /^```properties$/ { inside = 1; next } inside && /^```/ { inside = 0 } sec && inside' docs/kafka.md |
	sed "s/^sasl.username=.*/sasl.username=mq_scram_alice/; s/^sasl.password=.*/sasl.password=$PW_ALICE/" >"$T/doc.conf"
chmod 600 "$T/doc.conf"

printf 'one\ntwo\nthree\n' >"$T/in"
run kcat_ -F "$T/doc.conf" -P -t scram_t -p 0 -l "$T/in"
check_eq "$RC:$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('scram_t', 0, 0, 10)")" \
	"0:one,two,three" "kcat produces as alice with SCRAM-SHA-256 and docs/kafka.md's client settings"
run kcat_ -F "$T/a512.conf" -C -t scram_t -p 0 -o beginning -e -q
check_eq "$OUT" $'one\ntwo\nthree' "kcat consumes as alice with SCRAM-SHA-512"
run kcat_ -F "$T/a512.conf" -C -G scram_g -o beginning -e -q -X enable.auto.commit=true -X auto.commit.interval.ms=100 scram_t
check_eq "$(sort <<<"$OUT" | tr '\n' ,)" "one,three,two," "kcat consumes in alice's group with SCRAM-SHA-512"
wait_eq 10 3 sql "SELECT mq.committed_offset('scram_g', 'scram_t', 0)" ||
	fail "kcat's group commits its offset"

run timeout 60 kcat -b "$BROKER" -F "$T/bob.conf" -P -t scram_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "Topic authorization failed" "bob (SCRAM-SHA-512, read only) acts as his role: TOPIC_AUTHORIZATION_FAILED"

before="$(sql "SELECT count(*) FROM mq.fetch('scram_t', 0, 0, 100)"):$(sql "SELECT count(*) FROM mq.scram_credential")"
conns="$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")"
run timeout 30 kcat -b "$BROKER" -F "$T/wrong.conf" -P -t scram_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "[Aa]uthentication failed: invalid user name or password" "a wrong password is refused"
wrong_err="$(grep -oi 'authentication failed[^(]*' <<<"$ERR" | head -1 || true)"
run timeout 30 kcat -b "$BROKER" -F "$T/ghost.conf" -P -t scram_t -p 0 -X message.timeout.ms=5000 -l "$T/in"
check_match "$ERR" "[Aa]uthentication failed: invalid user name or password" "an unknown user is refused"
check_eq "$(grep -oi 'authentication failed[^(]*' <<<"$ERR" | head -1 || true)" "$wrong_err" "with the same message as a wrong password"
check_eq "$(sql "SELECT count(*) FROM mq.fetch('scram_t', 0, 0, 100)"):$(sql "SELECT count(*) FROM mq.scram_credential")" \
	"$before" "and neither left a record or a credential behind"
check_eq "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")" "$conns" \
	"nor a database session"
run timeout 30 kcat -b "$BROKER" -F "$T/plain.conf" -L -m 5
check_match "$ERR" "[Uu]nsupported SASL mechanism|mechanism|PLAIN" "PLAIN is refused on a plaintext listener"
check_match "$(cat "$T/mq-kafka.log")" 'mechanism "PLAIN" refused on a connection without tls' "and the daemon says why"

# librdkafka (C): a producer, then three group members committing each record
cc -O2 -Wall -o "$T/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread || fail "rdk_client builds"
sql "SELECT mq.create_topic('scram_rdk', 3)" >/dev/null
sql "SELECT mq.grant('read, write', 'topic', 'scram_rdk', 'mq_scram_alice')" >/dev/null
run env RDK_CONF="$T/a256.conf" timeout 120 "$T/rdk_client" produce "$BROKER" scram_rdk 300 none
expect_rc 0 "librdkafka produces 300 records with SCRAM-SHA-256"
run env RDK_CONF="$T/a512.conf" timeout 150 "$T/rdk_client" group "$BROKER" scram_rdk 300 scram_rdk
expect_rc 0 "librdkafka's three group members commit each record once with SCRAM-SHA-512"
check_eq "$(sql "SELECT sum(mq.committed_offset('scram_rdk', 'scram_rdk', p)) FROM generate_series(0, 2) p")" "300" \
	"the group's commits are mq's"

# kafkajs
js_install kafkajs
for mech in scram-sha-256 scram-sha-512; do
	run env MQ_SASL_PASSWORD="$PW_ALICE" MQ_SASL_MECHANISM="$mech" KAFKAJS_NO_PARTITIONER_WARNING=1 timeout 120 \
		node test/kafka/js/sasl.js "$BROKER" scram_t "scram_g_$mech" mq_scram_alice
	check_eq "$(json_get "$OUT" '{produced}') $(json_get "$OUT" '{consumed}')" "true 5" \
		"kafkajs produces and consumes in a group with $mech"
done

# kafka-python
for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
	sql "SELECT mq.grant('read', 'group', 'scram_py_$mech', 'mq_scram_alice')" >/dev/null
	run env MQ_SASL_PASSWORD="$PW_ALICE" timeout 120 "$PY" test/kafka/py/scram.py "$BROKER" scram_t "scram_py_$mech" mq_scram_alice "$mech"
	check_eq "$(json_get "$OUT" '{consumed}') $(json_get "$OUT" '{error}')" '["py0", "py1", "py2", "py3"] ' \
		"kafka-python produces, consumes and commits with $mech"
	check_eq "$(sql "SELECT mq.committed_offset('scram_py_$mech', 'scram_t', 0) > 0")" "t" "its commit is mq's"
done

run env MQ_SCRAM_PASSWORD="$PW_ALICE" perl test/kafka/scram.pl "$KAFKA_PORT" mq_scram_alice 8192
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "scram.pl: every raw exchange check passed"

# the admin APIs (KIP-554): as an ordinary user, then with ALTER and DESCRIBE on the cluster
run env MQ_SCRAM_PASSWORD="$PW_ALICE" perl test/kafka/scram.pl "$KAFKA_PORT" mq_scram_alice 8192 admin
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "scram.pl admin: DescribeUserScramCredentials and AlterUserScramCredentials as an ordinary user"
sql "SELECT mq.grant('alter, describe', 'cluster', 'kafka-cluster', 'mq_scram_alice')" >/dev/null
run env MQ_SCRAM_PASSWORD="$PW_ALICE" perl test/kafka/scram.pl "$KAFKA_PORT" mq_scram_alice 8192 admin granted
printf '%s\n' "$OUT" | sed 's/^/# /'
SCRAM_ADMIN_OUT="$OUT"
expect_rc 0 "scram.pl admin granted: the same as an administrator, with every error code"
check_eq "$(sql "SELECT string_agg(user_name || '/' || mechanism || '/' || iterations, ',' ORDER BY 1) FROM mq.scram_credentials WHERE user_name <> 'mq_scram_alice'")" \
	"mq_scram_dora/SCRAM-SHA-256/8192,mq_scram_dora/SCRAM-SHA-512/4096" "what the admin API changed is in mq.scram_credentials"

check_eq "$(grep -c -e "$PW_ALICE" -e "$PW_BOB" "$T/mq-kafka.log" "${MQ_SERVER_LOG:-/dev/null}" | awk -F: '{s += $NF} END {print s}')" \
	"0" "no password in mq-kafka's or PostgreSQL's log"
salted_sent="$(sed -n 's/^# salted-sent //p' <<<"$SCRAM_ADMIN_OUT")"
check_match "$(wc -l <<<"$salted_sent") $(grep -c 'mq.set_scram_keys' "${MQ_SERVER_LOG:-/dev/null}")" '^[1-9][0-9]* [1-9]' \
	"the admin API sent SaltedPasswords, and PostgreSQL logged its statements"
check_eq "$(grep -c -F -f <(tr -d ' ' <<<"$salted_sent") "${MQ_SERVER_LOG:-/dev/null}")" "0" \
	"no SaltedPassword in PostgreSQL's log: mq-kafka sends the verifier it derives"
check_eq "$(kill -0 "$KAFKA_PID" && echo alive)" "alive" "mq-kafka is still running"
if ((FAILED > 0)); then
	echo "# mq-kafka's log:"
	sed 's/^/#   /' "$T/mq-kafka.log"
fi

finish
