#!/usr/bin/env bash
# A silent database (its backends paused, as a cut link or a frozen server
# looks from mq-kafka) does not freeze requests: with
# --statement-timeout-ms, a request whose statements get no answer is
# cancelled and answered with an error (or its connection closed) soon
# after the deadline; the pool reconnects under the connection policy,
# and once the database speaks again, produce and fetch work.  Only the
# backends serving this mq-kafka (found by their application_name) are
# stopped, never the postmaster: the cluster is shared with other suites.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"
APP="mq_silent_$$"

sql "SELECT mq.create_topic('silent', 1)" >/dev/null
kafka_start -d "dbname=$PGDATABASE application_name=$APP" --statement-timeout-ms 1500 ||
	{ fail "mq-kafka starts"; finish; }

PIDS=""
resume() { [[ -z "$PIDS" ]] || kill -CONT $PIDS 2>/dev/null || true; }
on_exit resume

backends() { sql "SELECT pid FROM pg_stat_activity WHERE application_name = '$APP'" | tr '\n' ' '; }
have_backends() { [[ -n "$(backends)" ]]; }
wait_for 20 have_backends || fail "mq-kafka's backends are found"
PIDS="$(backends)"
kill -STOP $PIDS
pass "paused mq-kafka's backends ($(wc -w <<<"$PIDS"))"

# a raw Metadata v0 request naming the topic (needs the database); prints
# "answered" or "closed" and the seconds it took, or "hung" after 30 s
metadata() {
	perl -MIO::Socket::INET -MTime::HiRes=time -e '
		my ($host, $port) = split /:/, $ARGV[0];
		my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port) or die "connect: $!\n";
		my $body = pack("n n N n/a* N n/a*", 3, 0, 7, "silent-test", 1, "silent");
		print $s pack("N/a*", $body);
		my $t0 = time;
		my $got;
		local $SIG{ALRM} = sub { print "hung 30\n"; exit 0 };
		alarm 30;
		my $n = sysread($s, $got, 4);
		printf "%s %.1f\n", ($n ? "answered" : "closed"), time - $t0;' "$BROKER"
}

run metadata
read -r outcome secs <<<"$OUT"
check_match "$outcome" '^(answered|closed)$' "a request to a silent database is answered or closed (got: $OUT)"
if [[ "$outcome" != hung ]] && perl -e 'exit !($ARGV[0] < 15)' "$secs"; then
	pass "within 15 s of a 1.5 s deadline ($secs s)"
else
	fail "within 15 s of a 1.5 s deadline" "$OUT"
fi
check_match "$(cat "$T/mq-kafka.log")" 'statement timeout' "mq-kafka logs the statement timeout"

kill -CONT $PIDS
PIDS=""
pass "resumed the backends"

# the pool serves again: produce, then fetch what was produced
printf 'after-silence\n' >"$T/in"
run timeout 60 kcat -b "$BROKER" -P -t silent -p 0 -l "$T/in"
expect_rc 0 "produce after the database speaks again"
run timeout 60 kcat -b "$BROKER" -C -t silent -p 0 -o beginning -e -q
expect_rc 0 "fetch after the database speaks again"
check_match "$OUT" 'after-silence' "the produced record is fetched"

finish
