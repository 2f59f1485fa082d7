# shellcheck shell=bash
# Helpers for the mqctl tests in test/cli/*.sh (this file is sourced, not
# run: the harness runs *.sh only).
#
# The tests run from the repository root against the database in PGHOST,
# PGPORT, PGUSER and PGDATABASE, where `CREATE EXTENSION mq` has run
# (scripts/test.sh provides one; see docs/cli.md, "Tests").  They use
# broker/mqctl/mqctl, built here if missing, or $MQCTL.
#
#   run mqctl topic list        # sets OUT, ERR and RC; never aborts
#   expect_rc 0 "topic list"    # checks RC, shows OUT/ERR on failure
#   check_eq "$OUT" "want" "what"
#   check_match "$OUT" 'regex' "what"
#   json_get "$OUT" 'path'      # PostgreSQL parses the JSON: jsonb #>> path
#   finish                      # TAP plan, exit status
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [[ -z "${MQCTL:-}" ]]; then
	MQCTL="$PWD/broker/mqctl/mqctl"
	if [[ ! -x "$MQCTL" ]]; then
		make -s -C broker >&2
	fi
fi
export MQCTL

TESTS=0
FAILED=0
OUT=""
ERR=""
RC=0
_tmp="$(mktemp -d "${TMPDIR:-/tmp}/mqctl-test.XXXXXX")"
_cleanups=("rm -rf '$_tmp'")
_cleanup() {
	local i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_cleanups[i]}" || true
	done
}
trap _cleanup EXIT
on_exit() { _cleanups+=("$1"); }
tmpdir() { printf '%s\n' "$_tmp"; }

# mqctl ARGS...: the binary under test
mqctl() { "$MQCTL" "$@"; }

# run CMD...: run it, keeping stdout in OUT, stderr in ERR, status in RC.
# Standard input is the caller's (redirect it to feed produce).
run() {
	RC=0
	"$@" >"$_tmp/out" 2>"$_tmp/err" || RC=$?
	OUT="$(cat "$_tmp/out")"
	ERR="$(cat "$_tmp/err")"
}

pass() {
	TESTS=$((TESTS + 1))
	echo "ok $TESTS - $1"
}
fail() {
	TESTS=$((TESTS + 1))
	FAILED=$((FAILED + 1))
	echo "not ok $TESTS - $1"
	shift
	local line
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/#   /'
	done
}

expect_rc() {
	if [[ "$RC" == "$1" ]]; then
		pass "$2 (exit $1)"
	else
		fail "$2: exit $RC, want $1" "stdout: $OUT" "stderr: $ERR"
	fi
}

check_eq() {
	if [[ "$1" == "$2" ]]; then
		pass "$3"
	else
		fail "$3" "got:  $1" "want: $2"
	fi
}

check_match() {
	if [[ "$1" =~ $2 ]]; then
		pass "$3"
	else
		fail "$3" "got: $1" "does not match: $2"
	fi
}

check_no_match() {
	if [[ "$1" =~ $2 ]]; then
		fail "$3" "got: $1" "matches: $2"
	else
		pass "$3"
	fi
}

# sql QUERY: one value (or rows joined by newlines), unaligned
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

# login_role NAME: a role that logs in and may use schema mq (roles are
# the cluster's, shared by every test's database: made once)
login_role() {
	sql "DO \$\$ BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$1') THEN CREATE ROLE $1 LOGIN; END IF;
	END \$\$" >/dev/null
	sql "GRANT USAGE ON SCHEMA mq TO $1" >/dev/null
}

# hold_briefly SQL: another session runs SQL in a transaction that it keeps
# open for 1.5 s more, in the background (HOLDER is its pid, for `wait`);
# returns once that session sleeps, holding what SQL took (false after 10 s)
hold_briefly() {
	psql -X -q -c "BEGIN" -c "$1" -c "SELECT pg_sleep(1.5)" -c "COMMIT" >/dev/null 2>&1 &
	HOLDER=$!
	local i
	for ((i = 0; i < 200; i++)); do
		[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(1.5)%'
		             AND state = 'active' AND pid <> pg_backend_pid()")" == 1 ]] && return 0
		sleep 0.05
	done
	return 1
}

# json_get JSON PATH: the text at PATH ('{partition_details,0,log_end}')
# (psql interpolates variables in its input, not in -c)
json_get() {
	psql -X -q -At -v ON_ERROR_STOP=1 -v j="$1" -v p="$2" <<<"SELECT (:'j'::jsonb) #>> :'p';"
}

finish() {
	echo "1..$TESTS"
	if ((FAILED > 0)); then
		echo "# $FAILED of $TESTS checks failed"
		exit 1
	fi
	echo "# all $TESTS checks passed"
	exit 0
}
