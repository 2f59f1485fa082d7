# shellcheck shell=bash
# Helpers for the Kafka protocol tests in test/kafka/*.sh (sourced, not
# run).  They build on test/cli/lib.bash (run, check_eq, sql, finish, ...)
# and run against the database in PGHOST, PGPORT, PGUSER and PGDATABASE,
# where `CREATE EXTENSION mq` has run (scripts/test.sh provides one).
#
#   kafka_start [OPTION...]   # mq-kafka on a free loopback port; sets BROKER
#   kafka_kill                # SIGKILL it (a crash); kafka_start again after
#   go_build NAME LIBRARY     # test/kafka/go/NAME.go built offline; sets BIN
#   wait_for SECONDS CMD...   # until CMD succeeds (wait_eq: until it prints a value)
#
# mq-kafka is broker/mq-kafka/mq-kafka (built here if missing) or $MQ_KAFKA.
# shellcheck source=test/cli/lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.bash"

if [[ -z "${MQ_KAFKA:-}" ]]; then
	MQ_KAFKA="$PWD/broker/mq-kafka/mq-kafka"
	if [[ ! -x "$MQ_KAFKA" ]]; then
		make -s -C broker >&2
	fi
fi
export MQ_KAFKA

KAFKA_PID=""
KAFKA_PORT=""
BROKER=""

_free_port() {
	perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0,
			Proto => "tcp", Listen => 1) or die "bind: $!\n";
		print $s->sockport, "\n";'
}

# kafka_start [OPTION...]: start mq-kafka (on the same port as before, if
# it ran already) and wait until it accepts connections.  glibc fills its
# freed memory with a pattern (MALLOC_PERTURB_), so that a use after free
# of a pointer crashes it and fails the test instead of going unseen (a
# static member's rejoin read its freed request's role: groups.sh).
kafka_start() {
	[[ -n "$KAFKA_PORT" ]] || KAFKA_PORT="$(_free_port)"
	BROKER="127.0.0.1:$KAFKA_PORT"
	MALLOC_PERTURB_=165 "$MQ_KAFKA" --listen "$BROKER" -d "dbname=$PGDATABASE" --group-initial-delay-ms 300 "$@" \
		>>"$(tmpdir)/mq-kafka.log" 2>&1 &
	KAFKA_PID=$!
	local deadline=$((SECONDS + 30))
	until (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT") 2>/dev/null; do
		if ! kill -0 "$KAFKA_PID" 2>/dev/null || ((SECONDS > deadline)); then
			echo "# mq-kafka did not start:" >&2
			sed 's/^/#   /' "$(tmpdir)/mq-kafka.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

kafka_kill() {
	if [[ -n "$KAFKA_PID" ]]; then
		kill -9 "$KAFKA_PID" 2>/dev/null || true
		wait "$KAFKA_PID" 2>/dev/null || true
		KAFKA_PID=""
	fi
}

on_exit kafka_kill

# wait_for SECONDS CMD...: until CMD succeeds; false after SECONDS
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS > deadline)) && return 1
		sleep 0.05
	done
}

# wait_eq SECONDS WANT CMD...: until CMD prints WANT, running it each
# time (wait_for test "$(CMD)" = WANT would compare one output forever)
wait_eq() {
	local deadline=$((SECONDS + $1)) want="$2"
	shift 2
	until [[ "$("$@")" == "$want" ]]; do
		((SECONDS > deadline)) && return 1
		sleep 0.05
	done
}

kcat_() { kcat -b "$BROKER" "$@"; }

# npm_install DIR PATH: install DIR's npm packages (pinned by its
# lockfile) unless DIR/node_modules/PATH is there, and check that it worked
npm_install() {
	[[ -e "$1/node_modules/$2" ]] && return 0
	run npm ci --prefix "$1" --no-audit --no-fund
	expect_rc 0 "npm ci installs ${2%%/*} ($1)"
}

# js_install PACKAGE: test/kafka/js's packages, unless PACKAGE is there
js_install() { npm_install test/kafka/js "$1"; }

# platformatic_install: test/kafka/platformatic's @platformatic/kafka, which
# needs Node.js 20.19.4 or newer: with an older one (Debian 12's is 18) a
# check is skipped, saying why, and it returns false
platformatic_install() {
	if ! node -e 'const [a, b, c] = process.versions.node.split(".").map(Number);
		process.exit(a > 20 || (a === 20 && (b > 19 || (b === 19 && c >= 4))) ? 0 : 1)'; then
		pass "@platformatic/kafka # SKIP node $(node --version) is older than its 20.19.4"
		return 1
	fi
	npm_install test/kafka/platformatic @platformatic/kafka
}

# go_build NAME LIBRARY: build test/kafka/go/NAME.go offline against the Go
# libraries Debian installs (GOPATH mode) into BIN, and check that it built
go_build() {
	BIN="$(tmpdir)/$1"
	run env GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$(tmpdir)/gocache" GOFLAGS= \
		go build -o "$BIN" "test/kafka/go/$1.go"
	expect_rc 0 "$1.go builds offline against Debian's $2"
}
