#!/usr/bin/env bash
# The mq test command (README and .ci/run call exactly this).
#
# Phases:
#   0. scripts/install-deps.sh run build test
#   1. build + install the extension and the tools (make -s; make -s install)
#   2. static: checks test/static/*.sh, run with bash from the repo root
#      (docs vs. what the code generates, and the like; they need no
#      server and read only the sources); then format: scripts/format.sh
#      check (the C code in pgindent's layout).  Both after the build, so
#      that the lanes beside (below) start before them
#   3. unit: tests that need no shared PostgreSQL server: the C unit tests
#      test/unit/*_test.c (built by `make -C broker unit`) and the checks
#      test/unit/*.sh (run with bash from the repo root; the benchmarks'
#      own tests, test/unit/bench_*.sh, are the phase `bench`: not in the
#      default run; when named, in the background until the end)
#   4. one throwaway cluster (shared_preload_libraries = 'mq'), then
#      a. pg_regress: `make installcheck` (sql/*.sql vs expected/*.out)
#      isolation: pg_isolation_regress (from the PGXS tree) runs the
#         specs test/isolation/specs/*.spec against
#         test/isolation/expected/*.out, in one database where
#         `CREATE EXTENSION mq` ran: races between sessions, step by step
#      b. pgTAP: each test/pgtap/*.sql with pg_prove, in its own fresh
#         database where `CREATE EXTENSION pgtap; CREATE EXTENSION mq;`
#         already ran (suites must not create them again, or must use
#         IF NOT EXISTS)
#      c. test/concurrency/*.sh, d. test/cli/*.sh (mqctl) and
#      e. test/kafka/*.sh (mq-kafka: kcat, librdkafka, kafkajs, raw
#         protocol, its docs, a short libFuzzer run), each
#         run with bash from the repo root with
#         PGHOST/PGPORT/PGUSER set and PGDATABASE (= MQ_TEST_DB) a fresh
#         database where `CREATE EXTENSION mq` already ran
#   5. sanitize (not in the default run: MQ_TEST_ONLY names it, or
#      scripts/sanitize.sh runs more; with it the mq-kafka phase runs
#      test/kafka/fuzz.sh, a short libFuzzer run): test/cli/*.sh again (test/cli/kafka_tls.sh among them: one
#      TLS exchange with mq-kafka), with mqctl and mq-kafka built with
#      -fsanitize=address,undefined in a copy of the tree (scripts/sanitize.sh
#      with MQ_SANITIZE_ONLY=cli, in a throwaway cluster of its own; about
#      a minute); any sanitizer report fails it.  The multi-node tests with
#      a sanitized mq-broker take some 4 minutes more: `bash
#      scripts/sanitize.sh` runs them, not this command.
#   6. multi-node TAP tests test/t/*.pl with prove as the postgres user
#      (PostgreSQL::Test::Cluster; each test starts its own nodes),
#      MQ_TAP_JOBS at a time, the slowest first (test/t/slow.txt), each on
#      its own ports, data, temp and log
#      files (tap_start below).  MQ_REPO_ROOT names the repo; test/t is in
#      @INC for helper modules.  By default this phase runs beside phases
#      3 to 5, in a second instance of this command started after the
#      build, and phases 4e and 5 in a third, with a cluster of its own
#      (MQ_TAP_BESIDE below); their output is printed after phase 5.
#   7. package: test/package/*.sh, run with bash from the repo root as
#      root (timeout MQ_PACKAGE_TIMEOUT, default 900 s): the Debian
#      packages are built, installed with apt, proven on a cluster of the
#      system's PostgreSQL and under their systemd units, and purged, the
#      machine left as it was (test/package/deb.sh).  It replaces the
#      files `make install` put in the system's PostgreSQL until it puts
#      them back, so it runs last, unless the run (as root, with the lanes
#      and the mq-kafka phase) builds into a private copy of PostgreSQL
#      (scripts/pg-private.sh; MQ_PG_ROOT): then it runs in the mq-kafka
#      lane after the mq-kafka tests (4e), and nothing is left to run
#      alone at the end.
#
# Each phase begins with mq_phase (scripts/lib.sh), which here also ends
# the previous one: its elapsed time is printed when it ends, and at the
# end a table of every phase's time and the ten slowest suites (a suite's
# time runs from the end of the one before it in its phase, so it includes
# its fresh database; a TAP test's from its own start, as they run side by
# side).  A new phase needs nothing more than its mq_phase
# line to be timed.
#
# Prints `N passed, N failed` (N counts suites) as its very last line and
# exits non-zero if any suite failed.
#
# Knobs: MQ_SUITE_TIMEOUT (seconds per suite, default 300),
#        MQ_TAP_TIMEOUT (seconds per multi-node TAP test, default twice that),
#        MQ_TEST_ONLY (space-separated phases to run: static format unit
#        regress isolation pgtap concurrency cli kafka sanitize tap package
#        bench; default all but sanitize and bench),
#        MQ_SKIP_BUILD=1 (skip install-deps and build/install: rerun
#        tests against what is already installed),
#        MQ_TESTS (space-separated globs narrowing the suites of every
#        phase to those matching, e.g. MQ_TESTS='test/t/112*'; pg_regress
#        then runs only the sql/*.sql that match),
#        MQ_QUICK=1 (for development: the suites listed in test/quick.txt,
#        a few of every area, in under 3 minutes on 2 cores; the static
#        checks run whole, the format check looks at the C files changed
#        since the branch left main, the package phase is
#        left out unless MQ_TEST_ONLY names it; MQ_TESTS, if set too, wins),
#        MQ_TAP_JOBS (multi-node TAP tests run at a time, default 3; two
#        more in the TAP lane once the other phases are done),
#        MQ_TAP_NICE (niceness of the TAP lane beside the others, default 10),
#        MQ_KEEP_TAP_LOGS=1 (keep the logs of passed TAP tests too),
#        MQ_TAP_BESIDE=0 (run every phase in its place, the TAP phase and
#        the mq-kafka and sanitizer phases not beside the others),
#        MQ_PRELOAD / MQ_EXTENSION (see scripts/lib.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

SUITE_TIMEOUT="${MQ_SUITE_TIMEOUT:-300}"
# A multi-node TAP test may take twice that: beside the other lanes on a
# slow day of the 2-core machine 117 and 118 took 229 and 249 s, and the
# CI of stop 35 failed on 113 passing 300 s (docs/design.md)
TAP_TIMEOUT="${MQ_TAP_TIMEOUT:-$((SUITE_TIMEOUT * 2))}"
# sanitize and bench are not in the default run (README names them):
# together they took some 400 s of the 2 cores' CPU, and the command had
# become CPU-bound (docs/design.md, "The test command's time")
ALL_PHASES="static format unit regress isolation pgtap concurrency cli kafka tap package"
if [[ -n "${MQ_QUICK:-}" ]]; then
	ONLY="${MQ_TEST_ONLY:-${ALL_PHASES/ package/}}"
	if [[ -z "${MQ_TESTS:-}" ]]; then
		MQ_TESTS="$(sed -e 's/#.*//' test/quick.txt | tr -s ' \t\n' ' ')"
	fi
else
	ONLY="${MQ_TEST_ONLY:-$ALL_PHASES}"
fi
PASSED=0
FAILED=0
FAILED_NAMES=()
LOGS_DIR=""

want() { [[ " $ONLY " == *" $1 "* ]]; }

# ---- timing: phases (started by mq_phase) and suites (ended by pass/fail)
now_ms() { local t="${EPOCHREALTIME/[.,]/}"; printf '%d\n' "$((10#$t / 1000))"; }
secs() { printf '%d.%d' "$(($1 / 1000))" "$((($1 % 1000) / 100))"; }
RUN_T0="$(now_ms)"
PHASE_NAME=""
PHASE_T0=0
SUITE_T0="$RUN_T0"
PHASE_TIMES=()  # "ms<TAB>phase"
SUITE_TIMES=()  # "ms<TAB>suite"
phase_end() {
	[[ -n "$PHASE_NAME" ]] || return 0
	local ms=$(($(now_ms) - PHASE_T0))
	PHASE_TIMES+=("$ms"$'\t'"$PHASE_NAME")
	printf '<== %s: %ss\n' "$PHASE_NAME" "$(secs "$ms")"
	PHASE_NAME=""
}
# lib.sh's mq_phase prints the title; here it also times the phase, named
# by its title up to the first " (" or ": "
eval "$(declare -f mq_phase | sed '1s/^mq_phase/mq_phase_title/')"
mq_phase() {
	phase_end
	PHASE_NAME="${1%% (*}"
	PHASE_NAME="${PHASE_NAME%%: *}"
	PHASE_T0="$(now_ms)"
	SUITE_T0="$PHASE_T0"
	mq_phase_title "$@"
}
# suite_done NAME [MS]: NAME took MS (default: since the last suite ended)
suite_done() {
	local t
	t="$(now_ms)"
	SUITE_TIMES+=("${2:-$((t - SUITE_T0))}"$'\t'"$1")
	SUITE_T0="$t"
}
# the suites' clock starts again here (after a phase's own set-up)
suite_mark() { SUITE_T0="$(now_ms)"; }
print_times() {
	phase_end
	((${#PHASE_TIMES[@]})) || return 0
	local row
	echo
	echo "phase times:"
	for row in "${PHASE_TIMES[@]}"; do
		printf '  %8ss  %s\n' "$(secs "${row%%$'\t'*}")" "${row#*$'\t'}"
	done
	printf '  %8ss  %s\n' "$(secs $(($(now_ms) - RUN_T0)))" "total"
	((${#SUITE_TIMES[@]})) || return 0
	echo "slowest suites:"
	# sed reads to the end: head would leave sort writing into a closed
	# pipe, and with pipefail its SIGPIPE ended the whole run (exit 141)
	printf '%s\n' "${SUITE_TIMES[@]}" | sort -t $'\t' -k1,1nr | sed -n '1,10p' |
		while IFS=$'\t' read -r ms name; do
			printf '  %8ss  %s\n' "$(secs "$ms")" "$name"
		done
}

# pass NAME [MS], fail NAME [MS]: a suite ended (MS: see suite_done)
pass() {
	PASSED=$((PASSED + 1))
	suite_done "$@"
	printf -- '--- PASS: %s (%ss)\n' "$1" "$(secs "${SUITE_TIMES[-1]%%$'\t'*}")"
}
fail() {
	FAILED=$((FAILED + 1))
	FAILED_NAMES+=("$1")
	suite_done "$@"
	printf -- '--- FAIL: %s (%ss)\n' "$1" "$(secs "${SUITE_TIMES[-1]%%$'\t'*}")"
}
# run_suite NAME TIMEOUT COMMAND...: one suite, passed or failed by the
# command's exit within TIMEOUT seconds
run_suite() {
	local name="$1" timeout="$2"
	shift 2
	if mq_run_timeout "$timeout" "$@"; then
		pass "$name"
	else
		fail "$name"
	fi
}

# keep_log FILE-OR-DIR [NAME]: copy into a directory kept after the run.
keep_log() {
	if [[ -z "$LOGS_DIR" ]]; then
		LOGS_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mq-test-logs.XXXXXX")"
		chmod 755 "$LOGS_DIR"
	fi
	cp -r "$1" "$LOGS_DIR/${2:-$(basename "$1")}" 2>/dev/null || true
}

finish() {
	cluster_stop >/dev/null 2>&1 || true
	unit_bg_join
	beside_join
	print_times
	write_results
	if ((FAILED > 0)); then
		echo
		echo "failed suites: ${FAILED_NAMES[*]}"
		local d
		for d in "$LOGS_DIR" "${BESIDE_LOGS[@]}"; do
			[[ -n "$d" ]] && echo "logs of failed suites kept in $d"
		done
	elif [[ -n "$LOGS_DIR" ]]; then
		echo "logs kept in $LOGS_DIR"
	fi
	echo
	printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
	if ((FAILED > 0)); then exit 1; fi
	exit 0
}

# ---- lanes of phases beside the others (MQ_TAP_BESIDE)
# The multi-node TAP tests spend most of their time waiting, and so do the
# phases from unit to sanitize: with MQ_TAP_BESIDE=1 (the default when
# there is something to run beside) this command starts further instances
# of itself right after the build (MQ_SKIP_BUILD=1), one per lane: the TAP
# phase alone, and the mq-kafka and sanitizer phases (each instance with
# its own throwaway cluster, so the suites of two lanes share no roles,
# databases or settings).  The TAP lane runs at niceness MQ_TAP_NICE
# (default 10): its tests' producers and consumers loop as fast as they
# can and would otherwise take the CPU from the other phases, whose
# suites mostly wait on short steps, each a process that must be
# scheduled at once (docs/design.md, "The test command's time").  It runs
# the remaining phases meanwhile, and
# before the package phase (which replaces the installed extension) waits
# for each lane in turn, prints its output and counts its suites and times
# as its own (MQ_RESULTS: the file where an instance writes them).
# MQ_TAP_BESIDE=0 runs every phase in its place, one after the other.
BESIDE_PHASES=() BESIDE_PIDS=() BESIDE_DIRS=()
BESIDE_WAITING="${TMPDIR:-/tmp}/mq-lanes-waiting.$$"
mq_on_exit "rm -f '$BESIDE_WAITING'"
BESIDE_LOGS=()
write_results() {
	[[ -n "${MQ_RESULTS:-}" ]] || return 0
	local row
	{
		for row in "${PHASE_TIMES[@]}"; do printf 'phase\t%s\n' "$row"; done
		for row in "${SUITE_TIMES[@]}"; do printf 'suite\t%s\n' "$row"; done
		for row in "${FAILED_NAMES[@]}"; do printf 'failed\t%s\n' "$row"; done
		printf 'count\t%d\t%d\n' "$PASSED" "$FAILED"
		[[ -z "$LOGS_DIR" ]] || printf 'logs\t%s\n' "$LOGS_DIR"
	} >"$MQ_RESULTS"
}
# ---- the benchmarks' own tests (test/unit/bench_*.sh) in the background
# They check that a benchmark script runs in its short mode: they spend
# their time waiting on servers they start themselves and share nothing
# with the other phases, so they run from the unit phase on, beside the
# rest, and are reported when the run ends (their output then).
declare -A UNIT_BG=() UNIT_BG_T0=() UNIT_BG_OUT=()
unit_bg_start() {
	local out
	out="$(mktemp "${TMPDIR:-/tmp}/mq-unit-bg.XXXXXX")"
	mq_on_exit "rm -f '$out'"
	echo "$1 runs in the background: its output comes at the end"
	mq_spawn_timeout "$SUITE_TIMEOUT" bash "$1" >"$out" 2>&1
	UNIT_BG[$MQ_SPAWNED]="$1"
	UNIT_BG_T0[$MQ_SPAWNED]="$(now_ms)"
	UNIT_BG_OUT[$MQ_SPAWNED]="$out"
}
unit_bg_join() {
	local pid rc f ms
	for pid in "${!UNIT_BG[@]}"; do
		rc=0
		wait "$pid" || rc=$?
		f="${UNIT_BG[$pid]}"
		# its time ends with its last output, not when it is collected
		ms=$(($(stat -c %Y "${UNIT_BG_OUT[$pid]}") * 1000 - ${UNIT_BG_T0[$pid]}))
		((ms > 0)) || ms=0
		mq_reaped "$pid" "$rc" "after ${SUITE_TIMEOUT}s: $f"
		printf -- '--- %s (background, %ss):\n' "$f" "$(secs "$ms")"
		cat "${UNIT_BG_OUT[$pid]}"
		if ((rc == 0)); then pass "unit:$f" "$ms"; else fail "unit:$f" "$ms"; fi
		unset 'UNIT_BG[$pid]'
	done
}
# beside_start TIMEOUT NICE PHASES...: a lane running PHASES at niceness
# NICE, killed after TIMEOUT seconds; the phases are no longer this
# instance's
beside_start() {
	local timeout="$1" nice="$2" dir p
	shift 2
	dir="$(mktemp -d "${TMPDIR:-/tmp}/mq-beside.XXXXXX")"
	mq_on_exit "rm -rf '$dir'"
	echo "phases $* run beside the next ones (MQ_TAP_BESIDE): their output comes after them"
	MQ_TEST_ONLY="$*" MQ_SKIP_BUILD=1 MQ_TAP_BESIDE=0 MQ_RESULTS="$dir/results" \
		MQ_LANES_WAITING="$BESIDE_WAITING" mq_spawn_timeout "$timeout" nice -n "$nice" bash scripts/test.sh >"$dir/out" 2>&1
	BESIDE_PHASES+=("$*")
	BESIDE_PIDS+=("$MQ_SPAWNED")
	BESIDE_DIRS+=("$dir")
	for p in "$@"; do ONLY=" $ONLY "; ONLY="${ONLY/ $p / }"; done
}
beside_join() {
	local i
	((${#BESIDE_PIDS[@]})) || return 0
	phase_end
	: >"$BESIDE_WAITING"
	for i in "${!BESIDE_PIDS[@]}"; do
		beside_join_one "${BESIDE_PHASES[$i]}" "${BESIDE_PIDS[$i]}" "${BESIDE_DIRS[$i]}"
	done
	BESIDE_PIDS=()
}
beside_join_one() {
	local lane="$1" pid="$2" dir="$3" rc=0 t0 kind a b c failed=0 ms
	t0="$(now_ms)"
	echo
	echo "==> lane $lane (beside the phases since unit): waiting for it"
	wait "$pid" || rc=$?
	mq_reaped "$pid" "$rc" "the lane $lane beside the others"
	# its output without its own summary (merged into ours below)
	sed -e '/^phase times:$/,$d' "$dir/out"
	if [[ ! -f "$dir/results" ]]; then
		fail "lane $lane: it ended without results (exit $rc)"
		return 0
	fi
	while IFS=$'\t' read -r kind a b c; do
		case "$kind" in
		phase) [[ "$b" != dependencies ]] && PHASE_TIMES+=("$a"$'\t'"$b (beside)") ;;
		suite) SUITE_TIMES+=("$a"$'\t'"$b") ;;
		failed) FAILED_NAMES+=("$a") ;;
		count) PASSED=$((PASSED + a)) FAILED=$((FAILED + b)) failed="$b" ;;
		logs) BESIDE_LOGS+=("$a") ;;
		esac
	done <"$dir/results"
	: "$c"
	if ((rc != 0 && failed == 0)); then
		fail "lane $lane (exit $rc)"
	fi
	ms=$(($(now_ms) - t0))
	PHASE_TIMES+=("$ms"$'\t'"waiting for the lane $lane at the end")
	echo "<== lane $lane: waited $(secs "$ms")s for it at the end"
}

# fresh_db NAME [extension...]: create database NAME with the extensions,
# a copy of a template database in which they were created (made at the
# first call for that list of extensions in this server: CREATE EXTENSION
# mq cost some 250 ms of CPU per suite, a copy of the template 20 ms).  The
# template takes no connections, so mq's launcher leaves it alone.
# FRESH_TMPL remembers the templates made, per server.
declare -A FRESH_TMPL=()
fresh_db() {
	local db="$1"
	shift
	(($#)) || { createdb "$db"; return; }
	local tmpl ext args=()
	tmpl="tmpl_$(printf '%s_' "$@" | tr -c 'a-z0-9_' '_')"
	if [[ -z "${FRESH_TMPL[${PGHOST:-}:${PGPORT:-}:$tmpl]:-}" ]]; then
		for ext in "$@"; do
			args+=(-c "CREATE EXTENSION $ext")
		done
		createdb "$tmpl" &&
			psql -X -q -v ON_ERROR_STOP=1 -d "$tmpl" "${args[@]}" &&
			psql -X -q -v ON_ERROR_STOP=1 -d postgres \
				-c "ALTER DATABASE $tmpl WITH IS_TEMPLATE true ALLOW_CONNECTIONS false" || return 1
		FRESH_TMPL[${PGHOST:-}:${PGPORT:-}:$tmpl]=1
	fi
	createdb -T "$tmpl" "$db"
}

# db_suites PHASE PREFIX FILE...: each script run with bash in a fresh
# database of its own (named by db_name with PREFIX, the extension
# installed; PGDATABASE and MQ_TEST_DB name it), a suite PHASE:FILE each
db_suites() {
	local phase="$1" prefix="$2" f db
	shift 2
	for f in "$@"; do
		db="$(db_name "$f" "$prefix")"
		echo "running $f (database $db)"
		if ! fresh_db "$db" "$MQ_EXTENSION"; then
			fail "$phase:$f"
			continue
		fi
		PGDATABASE="$db" MQ_TEST_DB="$db" run_suite "$phase:$f" "$SUITE_TIMEOUT" bash "$f"
	done
}

# Database-safe name from a file name.
db_name() {
	local base
	base="$(basename "$1")"
	base="${base%.*}"
	base="$(printf '%s' "$base" | tr -c 'A-Za-z0-9_' '_' | tr '[:upper:]' '[:lower:]')"
	printf '%s_%s\n' "$2" "${base:0:50}"
}

# --------------------------------------------------------------------------
shopt -s nullglob
STATIC_SH=(test/static/*.sh)
shopt -u nullglob
[[ -z "${MQ_QUICK:-}" ]] || echo "MQ_QUICK: the suites of test/quick.txt (phases: $ONLY)"

# --------------------------------------------------------------------------
if [[ -z "${MQ_SKIP_BUILD:-}" ]]; then
	mq_phase "dependencies (scripts/install-deps.sh run build test)"
	bash scripts/install-deps.sh run build test
fi
# The package phase installs mq's Debian packages into the system's
# PostgreSQL and takes them out again.  To run it in a lane beside the
# others (after the mq-kafka phase, the lane that ends first) rather than
# alone at the end, the build is installed and tested in a private copy of
# PostgreSQL (scripts/pg-private.sh), unless MQ_PG_ROOT names one already.
PACKAGE_BESIDE=""
if [[ -z "${MQ_SKIP_BUILD:-}" && -z "${MQ_PG_ROOT:-}" && "${MQ_TAP_BESIDE:-1}" != 0 ]] &&
	want package && want kafka && mq_is_root; then
	MQ_PG_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/mq-pg.XXXXXX")"
	mq_on_exit "rm -rf '$MQ_PG_ROOT'"
	bash scripts/pg-private.sh "$MQ_PG_ROOT"
	export MQ_PG_ROOT
	PACKAGE_BESIDE=1
fi
mq_pg_paths || mq_die "pg_config not found (run scripts/install-deps.sh)"
echo "PostgreSQL: $(pg_config --version), binaries in $PG_BINDIR"

# --------------------------------------------------------------------------
if [[ -z "${MQ_SKIP_BUILD:-}" ]]; then
	mq_phase "build + install (make -s; make -s install)"
	if mq_build_install; then
		echo "extension built and installed into $(pg_config --pkglibdir)"
	else
		fail "build"
		finish
	fi
fi

# --------------------------------------------------------------------------
# The npm packages of test/kafka/js (pinned by its lockfile), before the
# lanes start: the mq-kafka tests install them themselves, but the TAP
# tests that run kafkajs in a cluster (140, 153, 160) only look for them,
# and beside the mq-kafka lane they would find none in a fresh clone and
# skip their Kafka clients.
if { want tap || want kafka; } && [[ ! -d test/kafka/js/node_modules/kafkajs ]] && command -v npm >/dev/null; then
	mq_phase "npm packages of test/kafka/js (npm ci)"
	npm ci --prefix test/kafka/js --no-audit --no-fund || fail "npm ci --prefix test/kafka/js"
fi

# --------------------------------------------------------------------------
shopt -s nullglob
REGRESS_SQL=(sql/*.sql)
ISOLATION_SPECS=(test/isolation/specs/*.spec)
PGTAP_SQL=(test/pgtap/*.sql)
CONC_SH=(test/concurrency/*.sh)
CLI_SH=(test/cli/*.sh)
KAFKA_SH=(test/kafka/*.sh)
# the short libFuzzer run goes with the sanitizers
if ! want sanitize; then
	kept=()
	for f in "${KAFKA_SH[@]}"; do [[ "$f" == test/kafka/fuzz.sh ]] || kept+=("$f"); done
	KAFKA_SH=("${kept[@]}")
fi
# the slowest first (test/t/slow.txt), then the rest by name
TAP_PL=()
while read -r f; do
	[[ -z "$f" || "$f" == \#* ]] && continue
	[[ -f "$f" ]] || mq_die "test/t/slow.txt names $f, which does not exist"
	TAP_PL+=("$f")
done <test/t/slow.txt
for f in test/t/*.pl; do
	[[ " ${TAP_PL[*]} " == *" $f "* ]] || TAP_PL+=("$f")
done
UNIT_C=(test/unit/*_test.c)
UNIT_SH=(test/unit/*.sh)
PACKAGE_SH=(test/package/*.sh)
# MQ_TESTS narrows every list to the files matching one of its globs
if [[ -n "${MQ_TESTS:-}" ]]; then
	narrow() {
		local -n list="$1"
		local keep=() f g
		for f in "${list[@]}"; do
			for g in $MQ_TESTS; do
				# shellcheck disable=SC2053
				if [[ "$f" == $g ]]; then keep+=("$f"); break; fi
			done
		done
		list=("${keep[@]}")
	}
	for l in REGRESS_SQL ISOLATION_SPECS PGTAP_SQL CONC_SH CLI_SH KAFKA_SH TAP_PL UNIT_C UNIT_SH PACKAGE_SH; do narrow "$l"; done
fi
shopt -u nullglob

# node-rdkafka compiles its own librdkafka (about 100 s of CPU): started
# here in the background, so that the build overlaps the phases before
# the mq-kafka lane reaches test/kafka/node_rdkafka.sh, which waits for
# the status file in MQ_RDKAFKA_NPM (the lane's own test.sh finds it set).
if [[ -z "${MQ_RDKAFKA_NPM:-}" ]] && want kafka && [[ " ${KAFKA_SH[*]} " == *" test/kafka/node_rdkafka.sh "* ]] &&
	command -v npm >/dev/null &&
	[[ ! -e test/kafka/rdkafka/node_modules/node-rdkafka/build/Release/node-librdkafka.node ]]; then
	MQ_RDKAFKA_NPM="$(mktemp -d "${TMPDIR:-/tmp}/mq-rdkafka-npm.XXXXXX")"
	mq_on_exit "rm -rf '$MQ_RDKAFKA_NPM'"
	export MQ_RDKAFKA_NPM
	echo "npm ci of test/kafka/rdkafka (node-rdkafka) in the background"
	mq_spawn_timeout 600 bash -c 'npm ci --prefix test/kafka/rdkafka --no-audit --no-fund >"$1/log" 2>&1; echo $? >"$1/rc"' _ "$MQ_RDKAFKA_NPM"
fi

# --------------------------------------------------------------------------
# lanes beside (MQ_TAP_BESIDE): the TAP phase, then mq-kafka and the
# sanitizers, each when something is left to run beside it
wants_any() {
	local p
	for p in "$@"; do if want "$p"; then return 0; fi; done
	return 1
}
if [[ "${MQ_TAP_BESIDE:-1}" != 0 ]]; then
	if want tap && ((${#TAP_PL[@]})) && wants_any static format unit regress isolation pgtap concurrency cli kafka sanitize; then
		beside_start "$((TAP_TIMEOUT * ${#TAP_PL[@]} + 60))" "${MQ_TAP_NICE:-10}" tap
	fi
	if wants_any kafka sanitize && wants_any static format unit regress isolation pgtap concurrency cli; then
		lane=()
		for p in kafka sanitize; do if want "$p"; then lane+=("$p"); fi; done
		[[ -z "$PACKAGE_BESIDE" ]] || lane+=(package)
		beside_start "$((SUITE_TIMEOUT * (${#KAFKA_SH[@]} + 3) + ${MQ_PACKAGE_TIMEOUT:-900} + 60))" 0 "${lane[@]}"
	fi
fi

# --------------------------------------------------------------------------
# The checks of the sources (static, format) run after the build, while
# the lanes beside already run: they need no server and read the
# sources only, and the lanes start sooner.
if want static; then
	mq_phase "static checks (${#STATIC_SH[@]} in test/static/)"
	for f in "${STATIC_SH[@]}"; do
		echo "running $f"
		run_suite "static:$f" "$SUITE_TIMEOUT" bash "$f"
	done
fi

# --------------------------------------------------------------------------
# MQ_QUICK: the C files changed since the branch left main (committed or
# not), when there is a main to compare with; else every file
quick_format_files() {
	local base
	base="$(git merge-base HEAD main 2>/dev/null)" || return 1
	{
		git diff --name-only --diff-filter=d "$base" -- 'src/*.[ch]' 'broker/*.[ch]'
		git ls-files --others --exclude-standard -- 'src/*.[ch]' 'broker/*.[ch]'
	} | sort -u
}
if want format; then
	mq_phase "C layout: scripts/format.sh check (pgindent style, typedefs list)"
	FORMAT_FILES=()
	FORMAT_SOME=""
	if [[ -n "${MQ_QUICK:-}" ]] && FORMAT_LIST="$(quick_format_files)"; then
		mapfile -t FORMAT_FILES < <(printf '%s' "$FORMAT_LIST" | sed '/^$/d')
		echo "MQ_QUICK: the ${#FORMAT_FILES[@]} C files changed since main"
		FORMAT_SOME=1
	fi
	if [[ -n "$FORMAT_SOME" && ${#FORMAT_FILES[@]} -eq 0 ]]; then
		pass "format"
	elif bash scripts/format.sh check "${FORMAT_FILES[@]}"; then
		pass "format"
	else
		fail "format"
	fi
fi

# --------------------------------------------------------------------------
# bench: the benchmarks' own tests, in the background until the end
if want bench; then
	for f in "${UNIT_SH[@]}"; do
		case "$f" in test/unit/bench_*.sh) unit_bg_start "$f" ;; esac
	done
fi

# --------------------------------------------------------------------------
if want unit; then
	mq_phase "unit tests without PostgreSQL (${#UNIT_C[@]} in C, ${#UNIT_SH[@]} scripts in test/unit/)"
	if ! make -s -j"$(nproc)" -C broker unit PG_CONFIG="$PG_CONFIG"; then
		fail "unit:build"
	else
		suite_mark
		for f in "${UNIT_C[@]}"; do
			run_suite "unit:$f" "$SUITE_TIMEOUT" "${f%.c}" 2>/dev/null
		done
	fi
	for f in "${UNIT_SH[@]}"; do
		case "$f" in test/unit/bench_*.sh) continue ;; esac
		run_suite "unit:$f" "$SUITE_TIMEOUT" bash "$f"
	done
fi

if want regress || want isolation || want pgtap || want concurrency || want cli || want kafka; then
	mq_phase "start throwaway cluster (shared_preload_libraries = '$MQ_PRELOAD')"
	if ! cluster_start main "max_prepared_transactions = 10"; then
		fail "cluster-start"
		finish
	fi
fi

# --------------------------------------------------------------------------
if want regress; then
	mq_phase "pg_regress: make installcheck (${#REGRESS_SQL[@]} tests in sql/)"
	if ((${#REGRESS_SQL[@]} == 0)); then
		echo "no sql/*.sql: skipped"
	else
		rm -rf results regression.diffs regression.out
		regress_names=("${REGRESS_SQL[@]#sql/}")
		regress_names=("${regress_names[@]%.sql}")
		# TAP_TESTS= : never let make run prove here (it would run as root).
		if mq_run_timeout "$SUITE_TIMEOUT" make -s installcheck TAP_TESTS= \
			REGRESS="${regress_names[*]}" PG_CONFIG="$PG_CONFIG"; then
			pass "pg_regress"
		else
			fail "pg_regress"
			if [[ -f regression.diffs ]]; then
				echo "---- regression.diffs (first 400 lines) ----"
				head -n 400 regression.diffs
				echo "---- end of regression.diffs ----"
				keep_log regression.diffs
			fi
		fi
	fi
fi

# --------------------------------------------------------------------------
if want isolation; then
	mq_phase "isolation: pg_isolation_regress (${#ISOLATION_SPECS[@]} specs in test/isolation/specs/)"
	if ((${#ISOLATION_SPECS[@]} == 0)); then
		echo "no test/isolation/specs/*.spec: skipped"
	else
		ISO_OUT="$(mktemp -d "${TMPDIR:-/tmp}/mq-isolation.XXXXXX")"
		mq_on_exit "rm -rf '$ISO_OUT'"
		iso_names=()
		for f in "${ISOLATION_SPECS[@]}"; do iso_names+=("$(basename "$f" .spec)"); done
		# one suite per spec, so that a failure names its race
		for n in "${iso_names[@]}"; do
			if mq_run_timeout "$SUITE_TIMEOUT" "$PG_PGXS_DIR/src/test/isolation/pg_isolation_regress" \
				--inputdir=test/isolation --outputdir="$ISO_OUT" --bindir="$PG_BINDIR" \
				--dbname=isolation_mq --load-extension="$MQ_EXTENSION" "$n"; then
				pass "isolation:$n"
			else
				fail "isolation:$n"
				if [[ -f "$ISO_OUT/regression.diffs" ]]; then
					echo "---- regression.diffs of $n (first 200 lines) ----"
					head -n 200 "$ISO_OUT/regression.diffs"
					echo "---- end of regression.diffs ----"
					keep_log "$ISO_OUT/regression.diffs" "isolation-$n.diffs"
				fi
			fi
		done
	fi
fi

# --------------------------------------------------------------------------
if want pgtap; then
	mq_phase "pgTAP: pg_prove (${#PGTAP_SQL[@]} suites in test/pgtap/)"
	((${#PGTAP_SQL[@]})) || echo "no test/pgtap/*.sql: skipped"
	for f in "${PGTAP_SQL[@]}"; do
		db="$(db_name "$f" tap)"
		if ! fresh_db "$db" pgtap "$MQ_EXTENSION"; then
			fail "pgtap:$f"
			continue
		fi
		run_suite "pgtap:$f" "$SUITE_TIMEOUT" pg_prove --failures -d "$db" "$f"
	done
fi

# --------------------------------------------------------------------------
if want concurrency; then
	mq_phase "concurrency scripts (${#CONC_SH[@]} in test/concurrency/)"
	((${#CONC_SH[@]})) || echo "no test/concurrency/*.sh: skipped"
	db_suites concurrency conc "${CONC_SH[@]}"
fi

# --------------------------------------------------------------------------
if want cli; then
	mq_phase "mqctl tests (${#CLI_SH[@]} in test/cli/)"
	db_suites cli cli "${CLI_SH[@]}"
fi

# --------------------------------------------------------------------------
if want kafka; then
	mq_phase "mq-kafka tests (${#KAFKA_SH[@]} in test/kafka/)"
	db_suites kafka kafka "${KAFKA_SH[@]}"
fi

if [[ -n "${MQ_CLUSTER:-}" ]]; then
	mq_phase "stop throwaway cluster"
	if ((FAILED > 0)) && [[ -f "$MQ_SERVER_LOG" ]]; then
		keep_log "$MQ_SERVER_LOG" server-main.log
	fi
	cluster_stop "" immediate nowait
fi

# --------------------------------------------------------------------------
if want sanitize; then
	mq_phase "sanitizers: test/cli/*.sh with mqctl built with -fsanitize=address,undefined"
	# the extension is built and installed already (or MQ_SKIP_BUILD said so)
	if MQ_SKIP_BUILD=1 MQ_SANITIZE_ONLY=cli \
		mq_run_timeout "$((SUITE_TIMEOUT * 2))" bash scripts/sanitize.sh; then
		pass "sanitize:cli"
	else
		fail "sanitize:cli"
	fi
fi

# --------------------------------------------------------------------------
# The multi-node TAP tests, TAP_JOBS at a time: they spend their time
# waiting on servers, brokers and deadlines more than on the CPU (see
# "The test command's time" in docs/design.md).  Each runs prove as
# postgres with its own TMPDIR ($TAPDIR/tmp/NAME: its sockets, the HA
# coordinator's nodes); its nodes' data dirs are $TAPDIR/tmp_check/t_NAME_*
# and its logs $TAPDIR/tmp_check/log/{regress_log_NAME,NAME_*}, so tests
# that run together share nothing but the port reservations of
# PostgreSQL::Test::Cluster (PG_TEST_PORT_DIR: one directory for every run
# on the machine, so that two runs of this command do not pick the same
# port either).  Each test's output goes to a file, printed whole when the
# test ends; its time runs from its own start; scripts/cpu-time.pl adds
# the CPU time of the test and of every process it started, its servers
# included.  Their nodes' initdb copies one template made at the first
# (scripts/tap-initdb/initdb).
TAP_JOBS="${MQ_TAP_JOBS:-3}"
declare -A TAP_RUNNING=() TAP_T0=()
# In a lane, once the instance that started it has nothing left but to
# wait (it creates the file MQ_LANES_WAITING), two more tests run at a
# time: the TAP lane, the longest, would otherwise end alone with three.
tap_jobs_now() {
	TAP_JOBS_NOW="$TAP_JOBS"
	[[ -n "${MQ_LANES_WAITING:-}" && -e "$MQ_LANES_WAITING" ]] || return 0
	TAP_JOBS_NOW=$((TAP_JOBS + 2))
	if [[ -z "${TAP_MORE_SAID:-}" ]]; then
		TAP_MORE_SAID=1
		echo "the other phases are done: $TAP_JOBS_NOW tests at a time from here"
	fi
}

tap_start() {
	local f="$1" base
	base="$(basename "$f" .pl)"
	mkdir -p "$TAPDIR/tmp/$base"
	if mq_is_root; then chown postgres:postgres "$TAPDIR/tmp/$base"; fi
	echo "starting $f"
	PATH="$MQ_PG_REPO/scripts/tap-initdb:$PATH" MQ_REAL_INITDB="$PG_BINDIR/initdb" \
		MQ_INITDB_TEMPLATE="$TAPDIR/initdb-template" \
		TESTDIR="$TAPDIR" PG_REGRESS="$PG_REGRESS" TMPDIR="$TAPDIR/tmp/$base" \
		PG_TEST_PORT_DIR="$TAP_PORT_DIR" MQ_REPO_ROOT="$MQ_PG_REPO" \
		PERL5LIB="$PG_TAP_PERL:$MQ_PG_REPO/test/t${PERL5LIB:+:$PERL5LIB}" \
		mq_spawn_timeout "$TAP_TIMEOUT" as_postgres perl "$MQ_PG_REPO/scripts/cpu-time.pl" \
		prove -I "$PG_TAP_PERL" -I "$MQ_PG_REPO/test/t" "$MQ_PG_REPO/$f" \
		>"$TAPDIR/out/$base.out" 2>&1
	TAP_RUNNING[$MQ_SPAWNED]="$f"
	TAP_T0[$MQ_SPAWNED]="$(now_ms)"
}

# tap_reap: wait for one running test to end, and report it.
tap_reap() {
	local pid="" rc=0 f base ms log d
	wait -n -p pid "${!TAP_RUNNING[@]}" || rc=$?
	[[ -n "$pid" ]] || return 0
	f="${TAP_RUNNING[$pid]}"
	ms=$(($(now_ms) - ${TAP_T0[$pid]}))
	unset 'TAP_RUNNING[$pid]' 'TAP_T0[$pid]'
	mq_reaped "$pid" "$rc" "after ${TAP_TIMEOUT}s: $f"
	base="$(basename "$f" .pl)"
	# whatever of its servers and daemons outlived it (a test killed by
	# its timeout, a broker's paused mq-kafka)
	mq_stop_daemons_under "$TAPDIR/tmp/$base"
	mq_stop_servers_under "$TAPDIR/tmp/$base"
	for d in "$TAPDIR/tmp_check/t_${base}_"*; do mq_stop_servers_under "$d"; done
	printf -- '--- %s (%ss):\n' "$f" "$(secs "$ms")"
	sed 's/^/    /' "$TAPDIR/out/$base.out"
	if ((rc == 0)); then
		pass "tap:$f" "$ms"
		# MQ_KEEP_TAP_LOGS=1: keep a passed test's logs too
		[[ -n "${MQ_KEEP_TAP_LOGS:-}" ]] || return 0
	else
		fail "tap:$f" "$ms"
	fi
	log="$TAPDIR/tmp_check/log/regress_log_$base"
	if ((rc != 0)) && [[ -f "$log" ]]; then
		echo "---- last 60 lines of regress_log_$base ----"
		tail -n 60 "$log"
		echo "---- end ----"
	fi
	d="$TAPDIR/keep/tap-$base"
	mkdir -p "$d"
	cp "$TAPDIR/out/$base.out" "$d/prove.out"
	cp -r "$TAPDIR/tmp_check/log/regress_log_$base" "$TAPDIR/tmp_check/log/${base}_"* "$d/" 2>/dev/null || true
	keep_log "$d"
}

tap_run_all() {
	TAP_PORT_DIR="${TMPDIR:-/tmp}/mq-tap-portlock"
	mkdir -p "$TAP_PORT_DIR"
	chmod 1777 "$TAP_PORT_DIR" 2>/dev/null || true
	local f
	for f in "${TAP_PL[@]}"; do
		while tap_jobs_now && ((${#TAP_RUNNING[@]} >= TAP_JOBS_NOW)); do tap_reap; done
		tap_start "$f"
	done
	while ((${#TAP_RUNNING[@]})); do tap_reap; done
}

# --------------------------------------------------------------------------
beside_join
if want tap; then
	mq_phase "multi-node TAP: prove as postgres (${#TAP_PL[@]} tests in test/t/, $TAP_JOBS at a time)"
	if ((${#TAP_PL[@]} == 0)); then
		echo "no test/t/*.pl: skipped"
	else
		TAPDIR="$(mktemp -d "${TMPDIR:-/tmp}/mq-tap.XXXXXX")"
		mkdir -p "$TAPDIR/tmp"
		if mq_is_root; then chown -R postgres:postgres "$TAPDIR"; fi
		mq_on_exit "mq_stop_daemons_under '$TAPDIR'; mq_stop_servers_under '$TAPDIR'; rm -rf '$TAPDIR'"

		# postgres must read the tests and whatever they use in the repo: a
		# copy when it cannot read the checkout (mq_postgres_repo)
		mq_postgres_repo || mq_die "cannot copy the checkout for the postgres user"

		mkdir -p "$TAPDIR/out"
		tap_run_all
	fi
fi

# --------------------------------------------------------------------------
if want package; then
	mq_phase "Debian packages (${#PACKAGE_SH[@]} in test/package/)"
	for f in "${PACKAGE_SH[@]}"; do
		echo "running $f"
		run_suite "package:$f" "${MQ_PACKAGE_TIMEOUT:-900}" bash "$f"
	done
fi

finish
