#!/usr/bin/env bash
# mq-kafka without --dbname, connected by libpq's environment alone (PGHOST,
# PGPORT, PGDATABASE, PGUSER), as its --help says it may be: kcat produces,
# then reads to the end, which parks a fetch and starts the fetch watch's
# connection (it segfaulted there: its pool parsed a NULL connection
# string), then reads again once more records came.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sql "SELECT mq.create_topic('envt', 1)" >/dev/null
PORT="$(_free_port)"
BROKER="127.0.0.1:$PORT"
LOG="$(tmpdir)/mq-kafka-env.log"
"$MQ_KAFKA" --listen "$BROKER" >"$LOG" 2>&1 &
KPID=$!
on_exit "kill -9 $KPID 2>/dev/null || true"
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null || fail "mq-kafka starts without --dbname"

printf 'a\nb\n' | kcat_ -P -t envt -p 0
check_eq "$?" "0" "kcat produces through it"
run timeout 30 kcat -b "$BROKER" -C -t envt -p 0 -o beginning -e -q
check_eq "$RC $OUT" $'0 a\nb' "kcat reads to the end (a fetch parks there)"
printf 'c\n' | kcat_ -P -t envt -p 0
run timeout 30 kcat -b "$BROKER" -C -t envt -p 0 -o beginning -e -q
check_eq "$RC $OUT" $'0 a\nb\nc' "and reads again after more records came"
check_eq "$(kill -0 "$KPID" 2>/dev/null && echo alive)" "alive" "mq-kafka is still running"
if ((FAILED > 0)); then
	sed 's/^/# /' "$LOG"
fi
finish
