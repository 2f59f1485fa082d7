#!/usr/bin/env bash
# No mq-broker or mq-kafka outlives a TAP test (test/t/MqCluster.pm,
# scripts/lib.sh's mq_stop_daemons_under).  A stand-in test registers a
# cluster whose two "brokers" each run an "mq-kafka" (stand-ins with those
# process names, no PostgreSQL), pauses one mq-kafka (SIGSTOP keeps a
# SIGTERM pending, so a paused one used to survive its broker), then:
#   1. dies mid-test: MqCluster's END block stops every daemon;
#   2. is stopped by SIGTERM, as the test command's timeout does: the
#      signal handler exits through the END block too;
#   3. is killed by SIGKILL (no END block runs): the daemons are left, and
#      mq_stop_daemons_under, which the test command runs after each test,
#      kills those under the test's TMPDIR and no other test's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

mq_pg_paths || true
if [[ -z "${PG_TAP_PERL:-}" ]] ||
	! perl -I"$PG_TAP_PERL" -Itest/t -e 'use PostgreSQL::Test::Cluster; 1' 2>/dev/null; then
	echo "1..0 # skip: PostgreSQL's TAP modules (postgresql-server-dev-15, libipc-run-perl) are missing"
	exit 0
fi

W="$(mktemp -d "${TMPDIR:-/tmp}/mq-tap-daemons.XXXXXX")"
decoy=""
mq_on_exit "mq_stop_daemons_under '$W'; rm -rf '$W'"
mkdir -p "$W/bin" "$W/run"

# the stand-ins: process names mq-kafka (a copy of sleep) and mq-broker (a
# script that runs one mq-kafka, passes SIGTERM on to it and exits, as the
# broker does, without waiting for it)
cp "$(command -v sleep)" "$W/bin/mq-kafka"
cat >"$W/bin/mq-broker" <<'EOF'
#!/usr/bin/perl
use strict;
use warnings;
use File::Basename;
my $kid = fork() // die "fork: $!";
exec(dirname($0) . '/mq-kafka', '600') or exit 1 if $kid == 0;
$SIG{TERM} = sub { kill 'TERM', $kid; exit 0; };
sleep 600;
EOF
chmod 755 "$W/bin/mq-broker"

# the stand-in test: MODE die (dies once ready) or wait (for a signal)
cat >"$W/t.pl" <<'EOF'
use strict;
use warnings;
use MqCluster;
use Time::HiRes qw(usleep);
my ($mode, $bin, $ready) = @ARGV;
my $c = bless { nodes => [], brokers => [], opt => {} }, 'MqCluster';
$c->register;
for my $i (1, 2)
{
	my $pid = fork() // die "fork: $!";
	exec("$bin/mq-broker") or POSIX::_exit(1) if $pid == 0;
	$c->{brokers}[$i] = $pid;
}
my @kafka;
for my $i (1, 2)
{
	my @kids;
	for (1 .. 500) { last if @kids = MqCluster::child_pids($c->{brokers}[$i]); usleep(10_000); }
	die "broker $i started no mq-kafka" unless @kids;
	push @kafka, @kids;
}
kill 'STOP', $kafka[0];
open my $fh, '>', $ready or die;
close $fh;
die "failing mid-test\n" if $mode eq 'die';
sleep 600;
EOF

# the stand-ins whose TMPDIR is DIR (as the test command's TAP tests have)
daemons_under() {
	local p comm
	for p in /proc/[0-9]*; do
		{ read -r comm <"$p/comm"; } 2>/dev/null || continue
		case "$comm" in mq-broker | mq-kafka) ;; *) continue ;; esac
		if _mq_proc_under "$p" "$1"; then echo "${p#/proc/}"; fi
	done
}
# wait (at most 10 s) until none is left under DIR
none_left() {
	local i
	for ((i = 0; i < 500; i++)); do
		[[ -z "$(daemons_under "$1")" ]] && return 0
		sleep 0.02
	done
	echo "# left running: $(daemons_under "$1" | tr '\n' ' ')"
	return 1
}
# start the stand-in test in MODE in the background (its pid in TPID),
# with its own TMPDIR (DIR/tmp, which its daemons inherit) and TESTDIR
start_test() {
	mkdir -p "$2/tmp"
	env TMPDIR="$2/tmp" TESTDIR="$2" PERL5LIB="$PG_TAP_PERL:$PWD/test/t" \
		perl "$W/t.pl" "$1" "$W/bin" "$2/ready" >"$2/out" 2>&1 &
	TPID=$!
}
wait_ready() {
	local i
	for ((i = 0; i < 1000; i++)); do
		[[ -e "$1/ready" ]] && return 0
		sleep 0.02
	done
	return 1
}

# 1. a test that dies
r=0
start_test die "$W/run/die"
wait "$TPID" && r=1
[[ -e "$W/run/die/ready" ]] || r=1
none_left "$W/run/die/tmp" || r=1
ok "$r" "a test that dies mid-test leaves no mq-broker or mq-kafka, a paused one included"

# 2. a test stopped by SIGTERM
r=0
start_test wait "$W/run/term"
pid=$TPID
wait_ready "$W/run/term" || r=1
[[ -n "$(daemons_under "$W/run/term/tmp")" ]] || r=1
kill -TERM "$pid" 2>/dev/null || r=1
wait "$pid" && r=1
none_left "$W/run/term/tmp" || r=1
ok "$r" "a test stopped by SIGTERM (the test command's timeout) leaves none either"

# 3. a test killed by SIGKILL: the test command's reaper
r=0
mkdir -p "$W/run/decoy/tmp"
TMPDIR="$W/run/decoy/tmp" "$W/bin/mq-broker" &
decoy=$!
disown "$decoy"
start_test wait "$W/run/kill"
pid=$TPID
wait_ready "$W/run/kill" || r=1
kill -KILL "$pid" 2>/dev/null || r=1
{ wait "$pid"; } 2>/dev/null && r=1
[[ "$(daemons_under "$W/run/kill/tmp" | wc -l)" == 4 ]] || r=1
mq_stop_daemons_under "$W/run/kill/tmp"
none_left "$W/run/kill/tmp" || r=1
kill -0 "$decoy" 2>/dev/null || r=1
[[ "$(daemons_under "$W/run/decoy/tmp" | wc -l)" == 2 ]] || r=1
ok "$r" "after SIGKILL, mq_stop_daemons_under kills the four daemons under the test's TMPDIR and not another test's"
mq_stop_daemons_under "$W/run/decoy/tmp"

tap_done
