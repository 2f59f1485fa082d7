#!/usr/bin/env bash
# mq-broker's config file takes long lines (issue 21): a node connection
# string of 396 characters is accepted and used whole (the broker's
# sessions carry the application_name at its end); a line longer than the
# limit is refused with its line number, never cut.  libinih's default
# cut lines at 200 bytes and called the rest a syntax error.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

BROKER="${MQ_BROKER:-broker/mq-broker/mq-broker}"
[[ -x "$BROKER" ]] || make -s -C broker mq-broker/mq-broker >/dev/null

app="mq_long_conninfo_$$"
conn="host=$PGHOST port=$PGPORT dbname=$PGDATABASE user=$PGUSER connect_timeout=10 keepalives=1"
conn+=" keepalives_idle=30 keepalives_interval=10 keepalives_count=3 sslmode=disable"
conn+=" options='-c statement_timeout=0 -c lock_timeout=0 -c idle_in_transaction_session_timeout=0'"
# pad to 396 characters before the application_name that ends it
pad=$((396 - ${#conn} - 25 - 18 - ${#app}))
conn+=" target_session_attrs=any$(printf '%*s' "$pad" '') application_name=$app"
check_eq "${#conn}" 396 "the connection string has 396 characters"

cfg="$(tmpdir)/broker.ini"
printf '[broker]\nid = 1\nnode = %s\ncoordinator = %s\n' "$conn" "$conn" >"$cfg"
"$BROKER" -c "$cfg" >"$(tmpdir)/broker.out" 2>&1 &
pid=$!
on_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
seen=0
for _ in $(seq 200); do
	if [[ "$(sql "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$app'")" == t ]]; then
		seen=1
		break
	fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
check_eq "$seen" 1 "the broker connects with the whole 396-character connection string"
check_no_match "$(cat "$(tmpdir)/broker.out")" 'syntax error' "no syntax error"

# one line over the limit: refused, naming the line
long="$(printf 'x%.0s' $(seq 8200))"
printf '[broker]\nid = 1\nnode = dbname=x application_name=%s\ncoordinator = dbname=x\n' "$long" >"$cfg"
run "$BROKER" -c "$cfg"
expect_rc 2 "mq-broker refuses a config with an over-long line"
check_match "$ERR" "broker.ini:3: line longer than 8192 characters \\(a value is never cut\\)" \
	"the error names the line and the limit"
finish
