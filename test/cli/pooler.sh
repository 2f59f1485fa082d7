#!/usr/bin/env bash
# auto_commit behind a connection pooler (pgbouncer from Debian, pool of
# one server connection, so every client gets the same backend): a
# client's batch that it did not commit is never committed by the next
# client of that backend (issue 21: it was, in both pooling modes).
#  - session pooling: pgbouncer's server_reset_query, DISCARD ALL, drops
#    the batch, and the next client gets it again (docs/delivery.md: a
#    session that dies has its last batch delivered again);
#  - transaction pooling: group members each poll with their member id,
#    and a poll commits only its own member's previous batch, whichever
#    server session each ran in (three here, in turn); poll and
#    commit_polled in one transaction need no session state at all.
# Also without a pooler: DISCARD ALL drops the pending batch.  And mqctl
# produce, consume and perf behind transaction pooling with several server
# sessions (its prepared statements survive the pooler), and mq-kafka with
# its database connections through it.
# The pooling statements of docs/operations.md ("Connection poolers") are
# these checks.
source "$(dirname "${BASH_SOURCE[0]}")/../kafka/lib.bash"

PGBOUNCER="${PGBOUNCER:-/usr/sbin/pgbouncer}"
[[ -x "$PGBOUNCER" ]] || {
	echo "not ok 1 - pgbouncer not installed (scripts/install-deps.sh installs it)"
	exit 1
}

sql "SELECT mq.create_topic('pq', 1)" >/dev/null
sql "SELECT count(*) FROM mq.send_batch('pq', NULL::text[], ARRAY(SELECT 'v' || g FROM generate_series(0, 19) g))" >/dev/null

# --- without a pooler: DISCARD ALL forgets the pending batch -------------------------
got="$(psql -X -q -At -v ON_ERROR_STOP=1 <<'SQL'
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('direct', 'pq', 3, true);
DISCARD ALL;
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('direct', 'pq', 3, true);
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('direct', 'pq', 3, true);
SELECT mq.committed_offset('direct', 'pq', 0);
SQL
)"
check_eq "$got" $'0,1,2\n0,1,2\n3,4,5\n3' \
	"DISCARD ALL: the batch is delivered again; the next poll commits the one before"

# --- pgbouncer -------------------------------------------------------------------------
dir="$(tmpdir)/pgbouncer"
mkdir -p "$dir"
chmod 755 "$(tmpdir)"
as_user=()
if [[ "$(id -u)" -eq 0 ]]; then
	chown postgres "$dir"
	as_user=(runuser -u postgres --)
fi
port="$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 1)->sockport')"
bouncer_pid=""
stop_bouncer() {
	if [[ -n "$bouncer_pid" ]]; then
		kill "$bouncer_pid" 2>/dev/null || true
		wait "$bouncer_pid" 2>/dev/null || true
		bouncer_pid=""
	fi
}
on_exit stop_bouncer

# start_bouncer MODE: pgbouncer in pool_mode MODE, one server connection
start_bouncer() {
	stop_bouncer
	printf '"%s" ""\n' "$PGUSER" >"$dir/users.txt"
	cat >"$dir/pgbouncer.ini" <<-EOF
		[databases]
		$PGDATABASE = host=$PGHOST port=$PGPORT dbname=$PGDATABASE
		${PGDATABASE}_polls = host=$PGHOST port=$PGPORT dbname=$PGDATABASE pool_size=1
		${PGDATABASE}_many = host=$PGHOST port=$PGPORT dbname=$PGDATABASE pool_size=3
		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $port
		unix_socket_dir =
		auth_type = trust
		auth_file = $dir/users.txt
		pool_mode = $1
		server_round_robin = 1
		default_pool_size = 1
		max_client_conn = 20
		logfile = $dir/pgbouncer.log
	EOF
	"${as_user[@]}" "$PGBOUNCER" "$dir/pgbouncer.ini" >"$dir/stdout.log" 2>&1 &
	bouncer_pid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		if psql -X -At -h 127.0.0.1 -p "$port" -c 'SELECT 1' >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "pgbouncer did not start:" >&2
	cat "$dir/stdout.log" "$dir/pgbouncer.log" >&2 || true
	return 1
}
# client SQL: one client connection through pgbouncer, then it disconnects
client() { psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -c "$1"; }
# poll_client SQL: the same, through the pool of the long pollers
poll_client() { PGDATABASE="${PGDATABASE}_polls" client "$1"; }
offsets() { psql -X -q -At -v ON_ERROR_STOP=1 -c "SELECT string_agg(msg_offset::text, ',') FROM ($1) r"; }

# --- session pooling -------------------------------------------------------------------
start_bouncer session
a="$(client "SELECT pg_backend_pid() || ' ' || string_agg(msg_offset::text, ',') FROM mq.poll('sess', 'pq', 3, true)")"
b="$(client "SELECT pg_backend_pid() || ' ' || string_agg(msg_offset::text, ',') FROM mq.poll('sess', 'pq', 3, true)")"
check_eq "${a%% *}" "${b%% *}" "session pooling: both clients got the same server backend"
check_eq "${a#* } / ${b#* }" "0,1,2 / 0,1,2" \
	"session pooling: client A's batch, not committed when it left, goes to client B again"
check_eq "$(sql "SELECT coalesce(mq.committed_offset('sess', 'pq', 0)::text, 'none')")" none \
	"session pooling: nothing was committed for A"
got="$(psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" <<'SQL'
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('sess', 'pq', 3, true);
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('sess', 'pq', 3, true);
SQL
)"
check_eq "$got" $'0,1,2\n3,4,5' "session pooling: within one client, auto_commit commits the previous batch"
check_eq "$(sql "SELECT mq.committed_offset('sess', 'pq', 0)")" 3 "session pooling: committed 3"

# --- transaction pooling ---------------------------------------------------------------
start_bouncer transaction
ma="$(client "SELECT member FROM mq.join_group('txg', ARRAY['pq'])")"
a1="$(client "SELECT pg_backend_pid() || ' ' || string_agg(msg_offset::text, ',') FROM mq.poll('txg', 'pq', 3, true, member_id => '$ma')")"
a2="$(client "SELECT string_agg(msg_offset::text, ',') FROM mq.poll('txg', 'pq', 3, true, member_id => '$ma')")"
check_eq "${a1#* } / $a2" "0,1,2 / 3,4,5" "transaction pooling: a member's polls auto-commit its previous batch"
check_eq "$(sql "SELECT mq.committed_offset('txg', 'pq', 0)")" 3 "transaction pooling: committed 3"
# member A leaves with its batch 3,4,5 not committed; member B joins
client "SELECT mq.leave_group('txg', '$ma')" >/dev/null
mb="$(client "SELECT member FROM mq.join_group('txg', ARRAY['pq'])")"
b1="$(client "SELECT pg_backend_pid() || ' ' || string_agg(msg_offset::text, ',') FROM mq.poll('txg', 'pq', 3, true, member_id => '$mb')")"
check_eq "${b1%% *}" "${a1%% *}" "transaction pooling: member B got A's server backend"
check_eq "${b1#* }" "3,4,5" "transaction pooling: A's uncommitted batch goes to B again"
check_eq "$(sql "SELECT mq.committed_offset('txg', 'pq', 0)")" 3 "transaction pooling: B's poll committed nothing of A's"
# a member's polls through three server sessions, which pgbouncer takes
# in turn (server_round_robin): each poll commits the member's previous
# batch, whichever session returned it (a batch kept in the session was
# delivered once per session, and committed only when a poll came back
# to it)
many_client() { PGDATABASE="${PGDATABASE}_many" client "$1"; }
warm=()
for c in 1 2 3; do
	many_client "SELECT pg_sleep(0.5)" >/dev/null &
	warm+=($!)
done
wait "${warm[@]}"
mm="$(many_client "SELECT member FROM mq.join_group('txm', ARRAY['pq'])")"
got="" backends=""
for i in 1 2 3 4 5 6; do
	r="$(many_client "SELECT pg_backend_pid() || ' ' || string_agg(msg_offset::text, ',') FROM mq.poll('txm', 'pq', 3, true, member_id => '$mm')")"
	got+="${r#* } " backends+="${r%% *}"$'\n'
done
check_eq "$(sort -u <<<"$backends" | grep -c .)" 3 "transaction pooling: a member's six polls ran in three server sessions"
check_eq "$got" "0,1,2 3,4,5 6,7,8 9,10,11 12,13,14 15,16,17 " \
	"transaction pooling: each poll got the next batch, none twice"
check_eq "$(sql "SELECT mq.committed_offset('txm', 'pq', 0)")" 15 \
	"transaction pooling: each poll committed the member's batch before it"
# a COMMIT and what follows it in one query string run in one server
# session (docs/delivery.md: COMMIT; SELECT mq.await_commit(...)), two
# statements sent apart in two
check_eq "$(many_client "BEGIN; SELECT pg_backend_pid(); COMMIT; SELECT pg_backend_pid()" | sort -u | grep -c .)" 1 \
	"transaction pooling: COMMIT and the next statement in one query string share a server session"
check_eq "$(psql -X -q -At -h 127.0.0.1 -p "$port" -d "${PGDATABASE}_many" -c "SELECT pg_backend_pid()" -c "SELECT pg_backend_pid()" |
	sort -u | grep -c .)" 2 "transaction pooling: sent apart, they do not"
# without auto_commit: poll and commit in one transaction
got="$(psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" <<'SQL'
BEGIN;
SELECT string_agg(msg_offset::text, ',') FROM mq.poll('txc', 'pq', 4);
SELECT mq.commit_polled('txc', 'pq');
COMMIT;
SQL
)"
check_eq "$got" $'0,1,2,3\n1' "transaction pooling: poll and commit_polled in one transaction"
check_eq "$(sql "SELECT mq.committed_offset('txc', 'pq', 0)")" 4 "transaction pooling: committed 4"

# a long poll holds its server connection for its wait: with a pool of
# one, a produce through the pooler runs only after the poll returned (at
# its deadline: the produce that would wake it cannot run)
sql "SELECT mq.create_topic('pw', 1)" >/dev/null
# produce_behind_poll POLL_CLIENT: how many records a 2-second long poll
# at the log end (through POLL_CLIENT) got, when a produce (through
# client) starts while it waits: 1 if the produce ran meanwhile, 0 if it
# had to wait for the poll's deadline
produce_behind_poll() {
	local got="$dir/poll.out" poller producer i
	("$1" "SELECT count(*) FROM mq.fetch('pw', 0, $2, 10, max_wait_ms => 2000)" >"$got") &
	poller=$!
	for ((i = 0; i < 100; i++)); do
		[[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%mq.fetch(''pw''%'")" == 1 ]] && break
		sleep 0.05
	done
	client "SELECT mq.send('pw', 'k', 'v')" >/dev/null &
	producer=$!
	wait "$poller" "$producer"
	cat "$got"
}
check_eq "$(produce_behind_poll client 0)" 0 \
	"transaction pooling, one server connection: the produce waited for the long poll's deadline"
# the long pollers in a pool of their own: the produce goes ahead and wakes the poll
check_eq "$(produce_behind_poll poll_client 1)" 1 \
	"long polls in a pool of their own leave the produce its connection"

# mqctl behind transaction pooling, several server sessions: each of its
# transactions may land on another one, where the statements mqctl
# prepares are missing or already there under the same name (a session
# another mqctl prepared); they are named after their text and prepared
# again where missing (broker/common/mqconn.c), so every record arrives
sql "SELECT mq.create_topic('pm', 2)" >/dev/null
many="host=127.0.0.1 port=$port dbname=${PGDATABASE}_many"
pids=()
for c in 1 2 3 4; do
	# keyed: mq.partition_for too, and batches spanning both partitions
	# (one transaction block, where statements run unnamed)
	(seq 1 1500 | sed "s/.*/k& v$c-&/" | "$MQCTL" -d "$many" produce pm --key-separator ' ' -b 50 \
		>"$dir/produce$c.out" 2>&1) &
	pids+=($!)
done
(seq 1 300 | sed "s/^/one-/" | "$MQCTL" -d "$many" produce pm -p 1 -b 1 >"$dir/produce5.out" 2>&1) &
pids+=($!)
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
check_eq "$failed" 0 "transaction pooling, 3 server sessions: five mqctl produce run at once and succeed"
if ((failed > 0)); then cat "$dir"/produce*.out | sort | uniq -c | head -n 5 | sed "s/^/# /"; fi
check_eq "$(sql "SELECT count(*) || ' ' || count(DISTINCT value) FROM (
                   SELECT value FROM mq.fetch('pm', 0, 0, 10000) UNION ALL SELECT value FROM mq.fetch('pm', 1, 0, 10000)) r")" \
	"6300 6300" "every record arrived, once"
run "$MQCTL" -d "$many" consume pm --group pmg --from-beginning --no-follow
check_eq "$RC $(wc -l <<<"$OUT")" "0 6300" "mqctl consume --group through it reads them all"
run "$MQCTL" -d "$many" perf produce pm --records 500 --batch-size 1 --clients 3
check_match "$RC $OUT" "^0 .*500 records sent" "mqctl perf produce, 3 clients of single records, through it"

# mq-kafka with its pool behind it: a role per transaction, no session state
sql "SELECT mq.create_topic('pk', 1)" >/dev/null
kafka_start -d "$many" || fail "mq-kafka starts with its database behind pgbouncer"
seq 1 200 | sed 's/^/kafka-/' | kcat_ -P -t pk -X acks=all 2>"$dir/kcat.err"
check_eq "$?:$(sql "SELECT count(*) FROM mq.fetch('pk', 0, 0, 1000)")" "0:200" \
	"mq-kafka through transaction pooling: kcat's 200 records are in the log"
check_eq "$(kcat_ -C -t pk -o beginning -e -q | sort -u | wc -l)" "200" "and kcat reads them back"

finish
