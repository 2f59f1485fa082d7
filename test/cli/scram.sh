#!/usr/bin/env bash
# mqctl scram set / describe / delete: the password from an environment
# variable, a file or standard input (never an argument); the stored
# verifier is the password's and the password is not in PostgreSQL's log
# even with every statement logged; describe lists without keys; an ordinary
# role may not touch another user's credential; delete, and deleting what
# is not there; bad options; the ```bash example of docs/kafka.md's
# "SCRAM" section runs as written; and one set of raw SCRAM exchanges
# (test/kafka/scram.pl) through mq-kafka, stopped with SIGTERM, so that the
# sanitize phase (scripts/sanitize.sh runs test/cli with the tools built
# with ASan and UBSan) checks the exchange's code too.
source "$(dirname "${BASH_SOURCE[0]}")/../kafka/lib.bash"
T="$(tmpdir)"

# the roles are the cluster's: made once
login_role mq_cli_scram_eve

# the verifier of USER/MECH is the one of PASSWORD (recomputed from its salt)
matches() { # USER MECH PASSWORD
	psql -X -q -At -v ON_ERROR_STOP=1 -v u="$1" -v m="$2" -v pw="$3" <<'EOF'
SET log_statement = 'none'; -- this check's own statement holds the password
SELECT k.stored_key = c.stored_key AND k.server_key = c.server_key
  FROM mq.scram_credential c,
       mq._scram_keys(c.mechanism, convert_to(:'pw', 'UTF8'), c.salt, c.iterations, false) k
 WHERE c.user_name = :'u' AND c.mechanism = :'m';
EOF
}

PW="cli-$RANDOM-$RANDOM-pw"
# PostgreSQL logs every statement of this database with its parameters,
# as an audited server does: mqctl sends the verifier, not the password
sql "ALTER DATABASE \"$PGDATABASE\" SET log_statement = 'all'" >/dev/null
on_exit "psql -X -q -c 'ALTER DATABASE \"$PGDATABASE\" RESET log_statement' >/dev/null 2>&1"
run env MQ_TEST_PW="$PW" "$MQCTL" scram set alice --iterations 8192 --password-env MQ_TEST_PW
expect_rc 0 "scram set with --password-env"
check_eq "$OUT" "SCRAM credentials of alice set (8192 iterations)." "sets both mechanisms"
check_eq "$(matches alice SCRAM-SHA-256 "$PW")$(matches alice SCRAM-SHA-512 "$PW")" "tt" \
	"the stored verifiers are the password's"

printf '%s\n' "$PW-file" >"$T/pw"
chmod 600 "$T/pw"
run mqctl scram set bob --mechanism SCRAM-SHA-512 --password-file "$T/pw"
expect_rc 0 "scram set with --password-file"
check_eq "$(matches bob SCRAM-SHA-512 "$PW-file")" "t" "the file's first line is the password"

run mqctl scram set carol --mechanism scram-sha-256 <<<"$PW-stdin"
expect_rc 0 "scram set with the password on standard input"
check_eq "$(matches carol SCRAM-SHA-256 "$PW-stdin")" "t" "standard input's first line is the password"

check_match "$(grep -c 'mq.set_scram_keys' "${MQ_SERVER_LOG:-/dev/null}")" '^[1-9]' \
	"PostgreSQL logged mqctl's statements with their parameters"
check_eq "$(grep -c -e "$PW" "${MQ_SERVER_LOG:-/dev/null}")" "0" "and no password: it never left mqctl"

run mqctl scram describe
expect_rc 0 "scram describe"
check_eq "$(awk '{print $1, $2, $3}' <<<"$OUT")" $'USER MECHANISM ITERATIONS\nalice SCRAM-SHA-256 8192\nalice SCRAM-SHA-512 8192\nbob SCRAM-SHA-512 4096\ncarol SCRAM-SHA-256 4096' \
	"lists user, mechanism and iterations"
check_no_match "$OUT" "$PW|stored|salt" "and no password, salt or key"
run mqctl scram describe bob
check_eq "$(awk 'NR > 1 {print $1, $2}' <<<"$OUT")" "bob SCRAM-SHA-512" "describe USER lists that user's"

# an ordinary role: its own credential only
run env MQ_TEST_PW=x-pw "$MQCTL" -d "dbname=$PGDATABASE user=mq_cli_scram_eve" scram set alice --password-env MQ_TEST_PW
expect_rc 1 "an ordinary role may not set another user's credential"
check_match "$ERR" "42501" "permission denied (42501)"
check_eq "$(matches alice SCRAM-SHA-256 "$PW")" "t" "alice's credential is unchanged"
run env MQ_TEST_PW=eve-pw "$MQCTL" -d "dbname=$PGDATABASE user=mq_cli_scram_eve" scram set mq_cli_scram_eve --password-env MQ_TEST_PW
expect_rc 0 "but sets its own"
run mqctl -d "dbname=$PGDATABASE user=mq_cli_scram_eve" scram describe
check_eq "$(awk 'NR > 1 {print $1}' <<<"$OUT" | sort -u)" "mq_cli_scram_eve" "and sees only its own"

run mqctl scram delete bob
expect_rc 0 "scram delete"
check_eq "$OUT" "1 SCRAM credential of bob deleted." "deletes bob's one credential"
run mqctl scram delete alice --mechanism SCRAM-SHA-512
check_eq "$(sql "SELECT string_agg(mechanism, ',') FROM mq.scram_credentials WHERE user_name = 'alice'")" "SCRAM-SHA-256" \
	"--mechanism deletes one"
run mqctl scram delete bob
expect_rc 1 "deleting a credential that is not there fails"
check_match "$ERR" "MQ062" "with MQ062"

run env MQ_TEST_PW=x "$MQCTL" scram set dave --iterations 100 --password-env MQ_TEST_PW
expect_rc 2 "fewer than 4096 iterations is a usage error"
run mqctl scram set dave --password "$PW"
expect_rc 2 "there is no --password option: passwords stay off the command line"
run mqctl scram set dave --mechanism SCRAM-SHA-1 <<<"$PW"
expect_rc 1 "an unknown mechanism is refused by the server"
check_match "$ERR" "MQ061" "with MQ061"
run mqctl scram set dave </dev/null
expect_rc 2 "no password at all is refused"
check_eq "$(sql "SELECT count(*) FROM mq.scram_credential WHERE user_name = 'dave'")" "0" "nothing of dave was stored"
run env -u MQ_CLI_NO_SUCH_VAR "$MQCTL" scram set dave --password-env MQ_CLI_NO_SUCH_VAR
expect_rc 2 "--password-env naming a variable that is not set"
check_match "$ERR" '^mqctl: error: no password given: the environment variable MQ_CLI_NO_SUCH_VAR is not set$' \
	"says the variable is not set"
run env MQ_TEST_PW= "$MQCTL" scram set dave --password-env MQ_TEST_PW
check_match "$ERR" 'the environment variable MQ_TEST_PW is empty$' "or empty"

# docs/kafka.md, "SCRAM": its ```bash block, run in a scratch directory
awk '/^## SCRAM$/ { sec = 1; next } /^## / { sec = 0 }
	sec && /^```bash$/ { inside = 1; next } inside && /^```/ { inside = 0 } sec && inside' docs/kafka.md >"$T/doc.sh"
check_match "$(cat "$T/doc.sh")" "mqctl scram set" "docs/kafka.md has the mqctl example"
export -f mqctl
run bash -c "cd '$T' && set -e && source ./doc.sh"
expect_rc 0 "docs/kafka.md's mqctl example runs"
check_match "$OUT" $'SCRAM credential of app1 set \\(8192 iterations\\)\\.\n.*app1 +SCRAM-SHA-256 +8192.*\n1 SCRAM credential of app1 deleted\\.' \
	"and sets, lists and deletes app1's credential"

# SCRAM exchanges as mq_cli_scram_eve (set above with eve-pw, 4096 iterations)
kafka_start --sasl=scram-sha-256,scram-sha-512 || { fail "mq-kafka starts"; finish; }
run env MQ_SCRAM_PASSWORD=eve-pw perl test/kafka/scram.pl "$KAFKA_PORT" mq_cli_scram_eve 4096
printf '%s\n' "$OUT" | sed 's/^/# /'
expect_rc 0 "scram.pl: SCRAM-SHA-256 and -512 exchanges and their refusals through mq-kafka"
kill -TERM "$KAFKA_PID"
rc=0
wait "$KAFKA_PID" || rc=$?
KAFKA_PID=""
check_eq "$rc" "0" "mq-kafka stops cleanly after them (in the sanitize phase: no sanitizer report)"

finish
