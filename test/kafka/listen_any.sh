#!/usr/bin/env bash
# A listener on every interface (0.0.0.0, :: or an empty host) with no
# advertised address advertises this machine's canonical host name, as
# Kafka's broker does for an empty host: Metadata and FindCoordinator never
# send a client to a wildcard address, which from another machine would be
# the client itself.  kcat bootstraps on the loopback address, then talks
# to the advertised name (here it resolves to this machine), produces and
# consumes in a group; an explicit --advertise still wins.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# the name Kafka's InetAddress.getLocalHost().getCanonicalHostName() means
HOST="$(/usr/bin/python3 -c 'import socket
print(socket.getaddrinfo(socket.gethostname(), None, 0, 0, 0, socket.AI_CANONNAME)[0][3] or socket.gethostname())')"
printf '# this machine: %s\n' "$HOST"
sql "SELECT mq.create_topic('any_t', 1)" >/dev/null

# any_start LISTEN-OPTION...: mq-kafka on a fresh port P, until 127.0.0.1:P accepts
any_start() {
	kafka_kill
	P="$(_free_port)"
	"$MQ_KAFKA" -d "dbname=$PGDATABASE" --group-initial-delay-ms 300 "${@//PORT/$P}" >"$(tmpdir)/any.log" 2>&1 &
	KAFKA_PID=$!
	wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$P" 2>/dev/null
}

# the brokers Metadata lists to a client bootstrapped on 127.0.0.1:P
advertised() {
	kcat -b "127.0.0.1:$P" -L -J -m 10 | perl -MJSON::PP -0ne 'print join(",", map { $_->{name} } @{decode_json($_)->{brokers}})'
}

for form in "--listen 0.0.0.0:PORT" "--listeners PLAINTEXT://:PORT" "--listen [::]:PORT"; do
	# shellcheck disable=SC2086 # the form is words on purpose
	any_start $form || { fail "mq-kafka starts with $form" "$(cat "$(tmpdir)/any.log")"; continue; }
	check_eq "$(advertised)" "$HOST:$P" "with $form, Metadata advertises this machine's host name"
	check_match "$(cat "$(tmpdir)/any.log")" "every interface: it advertises this machine's host name $HOST" \
		"and the daemon says so"
done

# through the advertised name: produce, and a group that consumes and commits
if getent hosts "$HOST" >/dev/null; then
	any_start --listen 0.0.0.0:PORT
	printf 'a\nb\n' >"$(tmpdir)/in"
	run timeout 30 kcat -b "127.0.0.1:$P" -P -t any_t -p 0 -l "$(tmpdir)/in"
	expect_rc 0 "kcat produces through the advertised host name"
	run timeout 30 kcat -b "127.0.0.1:$P" -C -G any_g -o beginning -e -q -X enable.auto.commit=true \
		-X auto.commit.interval.ms=100 any_t
	check_eq "$(sort <<<"$OUT" | tr '\n' ,)" "a,b," "a kcat group reads them through its coordinator's advertised name"
	wait_eq 10 2 sql "SELECT mq.committed_offset('any_g', 'any_t', 0)" || fail "and commits them"
else
	pass "# SKIP $HOST does not resolve here, so no client could reach it"
fi

any_start --listen 0.0.0.0:PORT --advertise kafka.example:9000 || fail "mq-kafka starts with --advertise"
check_eq "$(advertised)" "kafka.example:9000" "--advertise still names the address of a wildcard listener"
any_start --listen 127.0.0.1:PORT || fail "mq-kafka starts on the loopback address"
check_eq "$(advertised)" "127.0.0.1:$P" "a listener on one address advertises it"

finish
