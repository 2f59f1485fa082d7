#!/usr/bin/env bash
# docs/kafka.md: every ```console block is run, command by command ("$ "
# lines, with 127.0.0.1:9092 replaced by the test broker's address), and
# each command's output must be the lines that follow it in the block.
# This covers the example session, the ACL session (kafka-python's admin
# client) and the verbatim `mq-kafka --help`.
# The ```sh blocks start the daemon: each is run (on a free port, against
# the test database; 127.0.0.1:9093, a second listener, on another) in a
# directory holding a throwaway CA's ca.crt, server.crt and server.key
# (test/kafka/tls_certs.bash), and must listen on every port it names.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
source "$(dirname "${BASH_SOURCE[0]}")/tls_certs.bash"

doc=docs/kafka.md
kafka_start || { fail "mq-kafka starts"; finish; }

# the blocks as "CMD<TAB>command" and "OUT<TAB>line" records, "END" after each block
parse() {
	awk '
		/^```console$/ { inside = 1; next }
		inside && /^```/ { inside = 0; print "END"; next }
		inside && /^\$ / { print "CMD\t" substr($0, 3); next }
		inside { print "OUT\t" $0 }' "$doc"
}

check_command() {
	local cmd="$1" want="$2" got
	cmd="${cmd//127.0.0.1:9092/$BROKER}"
	cmd="${cmd/#mq-kafka /\"\$MQ_KAFKA\" }"
	# Debian's python3-kafka, whatever python3 is first on the PATH
	cmd="${cmd/#python3 //usr/bin/python3 }"
	got="$(bash -c "$cmd" 2>&1)" || true
	check_eq "$got" "$want" "$doc: $1"
}

n=0
cmd=""
want=""
while IFS= read -r rec; do
	case "$rec" in
	CMD$'\t'*)
		[[ -n "$cmd" ]] && check_command "$cmd" "$want"
		cmd="${rec#CMD$'\t'}"
		want=""
		n=$((n + 1))
		;;
	OUT$'\t'*)
		want+="${want:+$'\n'}${rec#OUT$'\t'}"
		;;
	END)
		[[ -n "$cmd" ]] && check_command "$cmd" "$want"
		cmd=""
		want=""
		;;
	esac
done < <(parse)
check_match "$n" '^[1-9][0-9]*$' "$doc has console examples ($n commands)"

pki="$(tmpdir)/pki"
tls_make_certs "$pki" || fail "the test PKI for the TLS examples is made"
while IFS= read -r line; do
	port="$(_free_port)"
	port2="$(_free_port)"
	ports=("$port")
	[[ "$line" == *127.0.0.1:9093* ]] && ports+=("$port2")
	line="${line//127.0.0.1:9092/127.0.0.1:$port}"
	line="${line//127.0.0.1:9093/127.0.0.1:$port2}"
	line="${line//dbname=app/dbname=$PGDATABASE}"
	line="${line/#mq-kafka /\"\$MQ_KAFKA\" }"
	bash -c "cd '$pki' && exec $line" >"$(tmpdir)/sh.log" 2>&1 &
	pid=$!
	if wait_for 20 bash -c "for p in ${ports[*]}; do exec 3<>/dev/tcp/127.0.0.1/\$p || exit 1; done" 2>/dev/null; then
		pass "$doc: the daemon example listens"
	else
		fail "$doc: the daemon example listens" "$(cat "$(tmpdir)/sh.log")"
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
done < <(awk '/^```sh$/ { inside = 1; next } inside && /^```/ { inside = 0 } inside' "$doc")

finish
