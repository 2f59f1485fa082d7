#!/usr/bin/env bash
# mqctl's command line: help for every command, exit codes, and clear
# messages for bad arguments, unknown commands, failed connections (which
# never show a password) and a database without mq.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# --- help -----------------------------------------------------------------
run mqctl --help
expect_rc 0 "mqctl --help"
check_match "$OUT" $'Commands:\n  topic create' "--help lists the commands"
check_match "$OUT" 'Exit status:' "--help documents the exit status"

mapfile -t commands < <(mqctl --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z -]*[a-z]\)  .*/\1/p')
check_match "${#commands[@]}" '^[0-9]+$' "commands found in --help: ${commands[*]}"
for c in "${commands[@]}"; do
	# shellcheck disable=SC2086 # the words of the command
	run mqctl $c --help
	expect_rc 0 "mqctl $c --help"
	check_match "$OUT" "^Usage: mqctl $c" "mqctl $c --help starts with its usage"
	check_match "$OUT" '--dbname=CONNINFO' "mqctl $c --help shows the connection options"
	# shellcheck disable=SC2086
	run mqctl help $c
	check_eq "$OUT" "$(mqctl $c --help)" "mqctl help $c = mqctl $c --help"
done

run mqctl --version
expect_rc 0 "--version"
check_match "$OUT" '^mqctl \(mq\) [0-9]' "--version prints the version"

run mqctl topic --help
expect_rc 0 "mqctl topic --help"
check_match "$OUT" 'topic create' "mqctl topic --help lists the topic commands"

# --- bad command lines: exit 2, a message, a pointer to --help -------------
bad() {
	local want="$1"
	shift
	run mqctl "$@" </dev/null
	expect_rc 2 "mqctl $*"
	check_match "$ERR" "$want" "mqctl $*: says why"
}
bad 'no command given' 
bad 'unknown command "nosuch"' nosuch
bad '"topic" needs a subcommand' topic
bad 'unknown command "topic frobnicate"' topic frobnicate
bad 'missing topic name' topic create
bad 'unexpected argument "b"' topic create a b
bad '--partitions: "x" is not a whole number' topic create t --partitions x
bad '--partitions: 0 is out of range' topic create t --partitions 0
bad '"retention" is not KEY=VALUE' topic create t --config retention
bad 'has no key before' topic create t --config =1
bad 'unknown or ambiguous option --bogus' topic list --bogus
bad '--format: "yaml" is not one of table, json' topic list --format yaml
bad 'missing topic name' topic describe
bad 'nothing to change' topic alter t
bad '--delete-config takes a key alone' topic alter t --delete-config a=b
bad '--count is required' topic add-partitions t
bad 'option --count needs a value' topic add-partitions t --count
bad 'missing topic name' topic delete
bad 'missing topic name' produce
bad '--batch-size: 0 is out of range' produce t --batch-size 0
bad 'unknown option -x' produce t -x
bad '--acks: "2" is not one of' produce t --acks 2
bad 'unknown escape' produce t --key-separator '\q'
bad 'option --verbose=1 does not take a value' produce t --verbose=1
bad '--offset needs --partition' consume t --offset 3
bad '--group reads the partitions' consume t --group g --partition 0
bad '--offset and --from-beginning exclude each other' consume t -p 0 -o 1 --from-beginning
bad '--offset: "soon" is not a whole number' consume t -p 0 -o soon
bad '--format: "xml" is not one of value, kv, json' consume t --format xml
bad '--group must not be empty' consume t --group ''
bad '--records is required' perf produce t
bad '--throughput must be positive' perf produce t --records 1 --throughput 0
bad '--records is required' perf consume t
check_match "$ERR" 'Try "mqctl perf consume --help" for more information' "usage errors point to the command's --help"
bad 'option --no-idempotence=yes does not take a value' produce t --no-idempotence=yes
bad '--request-timeout-ms is the wait of --acks all' produce t --request-timeout-ms 100
bad '--request-timeout-ms: 0 is out of range' produce t --acks all --request-timeout-ms 0
bad 'unknown or ambiguous option --retries' perf produce t --records 1 --retries 3
bad '"group" needs a subcommand' group
bad 'unknown command "group frobnicate"' group frobnicate
bad '--format: "csv" is not one of table, json' group list --format csv
bad 'unexpected argument "g"' group list g
bad 'missing group name' group describe
bad 'the group name must not be empty' group describe ''
bad 'unexpected argument "h"' group describe g h
bad 'missing group name' group reset-offsets --topic t --to-earliest
bad 'give --topic or --all-topics' group reset-offsets g --to-earliest
bad 'give --topic or --all-topics, not both' group reset-offsets g --topic t --all-topics --to-earliest
bad '--topic must not be empty' group reset-offsets g --topic '' --to-earliest
bad '--topic must not be empty' group reset-offsets g --topic :0 --to-earliest
bad '--topic t:: give partition numbers separated by commas, e.g. t:0,2' group reset-offsets g --topic t: --to-earliest
bad '--topic t:0,,1: give partition numbers separated by commas' group reset-offsets g --topic t:0,,1 --to-earliest
bad '--topic: "x" is not a whole number' group reset-offsets g --topic t:0,x --to-earliest
bad '--topic: -1 is out of range' group reset-offsets g --topic t:-1 --to-earliest
bad 'say where to: --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime or --by-duration' \
	group reset-offsets g --topic t
bad 'give only one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime or --by-duration' \
	group reset-offsets g -t t --to-earliest --to-latest
bad 'give only one of --to-earliest' group reset-offsets g -t t --shift-by 1 --to-current
bad 'give only one of --execute and --dry-run' group reset-offsets g -t t --to-latest --execute --dry-run
bad '--shift-by: "x" is not a whole number' group reset-offsets g -t t --shift-by x
bad 'option --by-duration needs a value' group reset-offsets g -t t --by-duration
bad '--by-duration: "1 hour" is not an ISO 8601 duration \(e.g. PT1H or P1DT2H\)' group reset-offsets g -t t --by-duration '1 hour'
bad '--to-offset: "first" is not a whole number' group reset-offsets g -t t --to-offset first
bad '--to-offset: -1 is out of range' group reset-offsets g -t t --to-offset -1
bad 'option --to-datetime needs a value' group reset-offsets g -t t --to-datetime
bad 'option --execute=1 does not take a value' group reset-offsets g -t t --to-latest --execute=1

# --- connections: exit 3, and never a password -----------------------------
run mqctl -d "host=$(tmpdir)/nowhere port=1 user=u password=sekrit123" topic list
expect_rc 3 "no server there"
check_match "$ERR" 'cannot connect' "says it cannot connect"
check_no_match "$OUT$ERR" 'sekrit123' "does not print the password"
run mqctl -d "postgresql://u:sekrit123@127.0.0.1:1/db" topic list
expect_rc 3 "no server at a URI"
check_no_match "$OUT$ERR" 'sekrit123' "does not print the password of a URI"
run mqctl topic list -d "host=/tmp password sekrit123"
expect_rc 3 "broken connection string"
check_match "$ERR" 'invalid connection string' "says the connection string is invalid"
check_no_match "$OUT$ERR" 'sekrit123' "does not quote a broken connection string"
run mqctl -d "postgresql://u:sekrit123@h:notaport/db" topic list
expect_rc 3 "broken URI"
check_no_match "$OUT$ERR" 'sekrit123' "does not quote a broken URI"
run mqctl -d "$PGDATABASE" topic list
expect_rc 0 "a database name alone, as psql -d takes it"

# -d works after the command words as well as before
run mqctl topic list -d "dbname=$PGDATABASE"
expect_rc 0 "-d after the command"
run mqctl --dbname="dbname=$PGDATABASE" topic list
expect_rc 0 "--dbname before the command"

# service files: PGSERVICE, or service= in -d
cat >"$(tmpdir)/pg_service.conf" <<SERVICE
[mqtest]
host=$PGHOST
port=$PGPORT
user=$PGUSER
dbname=$PGDATABASE
SERVICE
run env -u PGHOST -u PGPORT -u PGDATABASE PGSERVICEFILE="$(tmpdir)/pg_service.conf" PGSERVICE=mqtest "$MQCTL" topic list
expect_rc 0 "connect with PGSERVICE"
check_match "$OUT" '^TOPIC' "PGSERVICE: lists topics"
run env -u PGHOST -u PGPORT -u PGDATABASE PGSERVICEFILE="$(tmpdir)/pg_service.conf" "$MQCTL" -d service=mqtest topic list
expect_rc 0 "connect with -d service=mqtest"

# a database without the extension: exit 1 and a hint
noext="${PGDATABASE}_noext"
createdb "$noext"
on_exit "dropdb --if-exists '$noext'"
run mqctl -d "dbname=$noext" topic list
expect_rc 1 "database without mq"
check_match "$ERR" 'the mq extension is not installed in database .* \[SQLSTATE 3F000\]' "says mq is missing, with the SQLSTATE of a missing schema"
check_match "$ERR" 'CREATE EXTENSION mq' "hints at CREATE EXTENSION"

# --- server errors: exit 1 with the SQLSTATE ---------------------------------
run mqctl topic describe no.such.topic
expect_rc 1 "describe a missing topic"
check_match "$ERR" 'topic "no.such.topic" does not exist' "says the topic is missing"
run mqctl topic delete no.such.topic
expect_rc 1 "delete a missing topic"
check_match "$ERR" '\[SQLSTATE MQ001\]' "shows the SQLSTATE"
run mqctl topic create 'bad/name'
expect_rc 1 "invalid topic name"
check_match "$ERR" 'SQLSTATE MQ003' "invalid name: MQ003"
check_match "$ERR" 'hint: A topic name has 1 to 249 characters' "shows the server's hint"

finish
