#!/usr/bin/env bash
# scripts/coord-ha.sh: a highly available mq coordinator on loopback, run by
# pg_auto_failover (Debian postgresql-15-auto-failover): a monitor and two
# PostgreSQL nodes, a primary and a synchronous standby, each supervised
# by its own `pg_autoctl run` (docs/design.md, "The coordinator, highly
# available", says why this engine; docs/replication.md why elections stay
# safe across its failovers).
#
#   scripts/coord-ha.sh start DIR MONPORT PORT1 PORT2 [ROLE [POOLPORT]]
#       creates and starts everything under DIR (which must not exist),
#       CREATE EXTENSION mq on the primary and, with ROLE, the broker role
#       (mq_coord.grant_broker); prints the clients' multi-host conninfo
#       (both nodes, target_session_attrs=read-write) on stdout; with
#       POOLPORT the keepers reach the monitor through PgBouncer there
#   scripts/coord-ha.sh primary DIR     the primary's number (1 or 2), once there is one
#   scripts/coord-ha.sh wait DIR        until a primary and a secondary run
#   scripts/coord-ha.sh pids DIR N      node N's (1 or 2, or "monitor")
#                                       pg_autoctl and PostgreSQL processes
#   scripts/coord-ha.sh kill9 DIR N     kill -9 all of them (a machine lost)
#   scripts/coord-ha.sh restart DIR N   start node N's pg_autoctl again
#   scripts/coord-ha.sh stop DIR        stop everything (DIR stays)
#
# With MQ_COORD_HA_OWNER=PID in the environment, start also leaves a
# watchdog that stops everything once process PID is gone (a test killed
# by its time limit runs no clean-up of its own; pg_autoctl runs in
# sessions of its own and would restart its PostgreSQL forever).
#
# Runs as the invoking user, as the postgres user when invoked as root.
# The failure detection is tuned for tests (about 3 s to notice a dead
# primary; pg_auto_failover's defaults take about 30 s); everything listens
# on 127.0.0.1 and DIR only.  pg_autoctl keeps its configuration and state
# under DIR too (XDG_CONFIG_HOME, XDG_DATA_HOME), never in the home
# directory.
set -euo pipefail

# Root runs the script as postgres from its text, never from its file: the
# checkout may be one only root can read (a clone in /root, mode 700).
# Run with `bash -c TEXT`, the text is in BASH_EXECUTION_STRING; the
# watchdog below runs `stop` the same way.
if [[ -n "${BASH_EXECUTION_STRING:-}" ]]; then
	self="$BASH_EXECUTION_STRING"
else
	self="$(cat "${BASH_SOURCE[0]}")"
fi
if [[ "$(id -u)" -eq 0 ]]; then
	if ! runuser -u postgres -- test -x "$PWD" 2>/dev/null; then
		(($# < 2)) || set -- "$1" "$(realpath -m -- "$2")" "${@:3}"
		cd /
	fi
	exec runuser -u postgres -- env PATH="$PATH" bash -c "$self" coord-ha.sh "$@"
fi

cmd="${1:?usage: coord-ha.sh start|primary|wait|pids|kill9|restart|stop DIR ...}"
dir="${2:?coord-ha.sh: DIR missing}"
# pg_autoctl reads PGHOST, PGPORT, PGDATA, ... (a test harness sets some)
unset PGHOST PGHOSTADDR PGPORT PGDATA PGDATABASE PGUSER PGSERVICE PGTARGETSESSIONATTRS PGOPTIONS
export XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data"
export PGCONNECT_TIMEOUT=2

pgbin="$(dirname "$(command -v pg_ctl)")"

say() { echo "coord-ha: $*" >&2; }

# The monitor's failure detection: a health check every second, a dead
# node after one failed retry and 2 s without news.  A standby is promoted
# read-only and opened for writes only once the old primary reported
# itself demoted or primary_demote_timeout passed: longer than the
# keepers' network_partition_timeout (create_node), after which a primary
# that reaches neither the monitor nor its standby demotes itself.
monitor_conf() {
	cat <<-EOF

		# --- added by scripts/coord-ha.sh ---
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir'
		shared_buffers = 16MB
		max_connections = 50
		pgautofailover.health_check_period = 1000
		pgautofailover.health_check_timeout = 1000
		pgautofailover.health_check_max_retries = 1
		pgautofailover.health_check_retry_delay = 500
		pgautofailover.node_considered_unhealthy_timeout = 2000
		pgautofailover.startup_grace_period = 2000
		pgautofailover.primary_demote_timeout = 5000
	EOF
}

# The coordinator nodes: mq preloaded, small, and a commit waits for the
# standby's flush (synchronous_commit = on with the standby names that
# pg_auto_failover sets).
node_conf() {
	cat <<-EOF

		# --- added by scripts/coord-ha.sh ---
		shared_preload_libraries = 'mq'
		unix_socket_directories = '$dir'
		shared_buffers = 16MB
		max_connections = 100
		synchronous_commit = on
		checkpoint_completion_target = 0
		log_min_messages = warning
	EOF
}

autoctl() { pg_autoctl "$@"; }

# Start pg_autoctl for PGDATA in its own session (so that kill9 can take
# its whole process group), remembering its pid.
run_keeper() {
	local pgdata="$1" name="$2"
	setsid pg_autoctl run --pgdata "$pgdata" >>"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
}

# With POOLPORT, the keepers reach the monitor through a PgBouncer on
# 127.0.0.1:POOLPORT (session pooling): each keeper opens a connection to
# the monitor for every call, several a second, and a new PostgreSQL
# backend cost about 37 ms of CPU on the 2-core test machine, half a core
# for an idle coordinator (docs/design.md, "The test command's time").
# The monitor's own checks and this script's queries go to it directly.
monitor_uri() {
	local port
	port="$(cat "$dir/pool.port" 2>/dev/null || cat "$dir/monitor.port")"
	echo "postgres://autoctl_node@127.0.0.1:$port/pg_auto_failover?sslmode=disable"
}

start_pool() {
	local mport="$1" port="$2"
	mkdir -m 700 "$dir/pool"
	printf '"autoctl_node" ""\n' >"$dir/pool/users.txt"
	cat >"$dir/pool/pgbouncer.ini" <<-EOF
		[databases]
		pg_auto_failover = host=127.0.0.1 port=$mport dbname=pg_auto_failover
		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $port
		unix_socket_dir =
		auth_type = trust
		auth_file = $dir/pool/users.txt
		pool_mode = session
		server_reset_query = DISCARD ALL
		logfile = $dir/pool/pgbouncer.log
		pidfile = $dir/pool/pgbouncer.pid
		log_connections = 0
		log_disconnections = 0
	EOF
	pgbouncer -d -q "$dir/pool/pgbouncer.ini"
	echo "$port" >"$dir/pool.port"
}

stop_pool() {
	local pid
	pid="$(cat "$dir/pool/pgbouncer.pid" 2>/dev/null || true)"
	[[ -n "$pid" ]] || return 0
	kill -INT "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
	kill -KILL "$pid" 2>/dev/null || true
}

# SQL on the monitor, one value per line
monitor_sql() {
	psql -X -A -t -q -h 127.0.0.1 -p "$(cat "$dir/monitor.port")" -U autoctl_node \
		-d pg_auto_failover -c "$1"
}

# Wait (up to $2 seconds) until the monitor's query $1 says t.
wait_monitor() {
	local q="$1" secs="$2" i
	for ((i = 0; i < secs * 10; i++)); do
		[[ "$(monitor_sql "$q" 2>/dev/null || true)" == t ]] && return 0
		sleep 0.1
	done
	say "timed out waiting for: $q"
	return 1
}

create_monitor() {
	local port="$1"
	echo "$port" >"$dir/monitor.port"
	autoctl create monitor --pgdata "$dir/monitor" --pgport "$port" --hostname 127.0.0.1 \
		--auth trust --no-ssl --pgctl "$pgbin/pg_ctl" >>"$dir/monitor.log" 2>&1
	autoctl config set --pgdata "$dir/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null
	monitor_conf >>"$dir/monitor/postgresql.conf"
	run_keeper "$dir/monitor" monitor
	wait_monitor "SELECT true" 60
}

create_node() {
	local n="$1" port="$2"
	echo "$port" >"$dir/node$n.port"
	autoctl create postgres --pgdata "$dir/node$n" --pgport "$port" --pghost 127.0.0.1 \
		--listen 127.0.0.1 --hostname 127.0.0.1 --name "coord$n" --dbname postgres \
		--monitor "$(monitor_uri)" --auth trust --no-ssl --pgctl "$pgbin/pg_ctl" \
		>>"$dir/node$n.log" 2>&1
	autoctl config set --pgdata "$dir/node$n" timeout.network_partition_timeout 2 >/dev/null
	# the standby got this file from the primary's base backup
	grep -q 'added by scripts/coord-ha.sh' "$dir/node$n/postgresql.conf" ||
		node_conf >>"$dir/node$n/postgresql.conf"
	run_keeper "$dir/node$n" "node$n"
}

# Both nodes in the monitor's view: one primary, one secondary.
ready_sql="SELECT count(*) FILTER (WHERE reportedstate = 'primary' AND goalstate = 'primary') = 1
	AND count(*) FILTER (WHERE reportedstate = 'secondary' AND goalstate = 'secondary') = 1
	FROM pgautofailover.node"

start() {
	local mport="$1" p1="$2" p2="$3" role="${4:-}" pool="${5:-}"
	[[ ! -e "$dir" ]] || { say "$dir exists"; return 1; }
	mkdir -p "$dir" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME"
	chmod 700 "$dir"
	if [[ -n "${MQ_COORD_HA_OWNER:-}" ]]; then
		setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash -c "$2" coord-ha.sh stop "$3"' \
			watchdog "$MQ_COORD_HA_OWNER" "$self" "$dir" >/dev/null 2>&1 </dev/null &
	fi
	create_monitor "$mport"
	[[ -z "$pool" ]] || start_pool "$mport" "$pool"
	create_node 1 "$p1"
	wait_monitor "SELECT count(*) = 1 FROM pgautofailover.node WHERE reportedstate = 'single'" 60
	for _ in $(seq 300); do
		pg_isready -q -h 127.0.0.1 -p "$p1" && break
		sleep 0.1
	done
	local sql="CREATE EXTENSION IF NOT EXISTS mq"
	if [[ -n "$role" ]]; then
		sql="$sql; CREATE ROLE $role LOGIN NOSUPERUSER; SELECT mq_coord.grant_broker('$role')"
	fi
	psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p1" -d postgres -c "$sql" >/dev/null
	create_node 2 "$p2"
	wait_monitor "$ready_sql" 120
	echo "host=127.0.0.1,127.0.0.1 port=$p1,$p2 dbname=postgres target_session_attrs=read-write"
}

primary() {
	local i port
	for ((i = 0; i < 600; i++)); do
		port="$(monitor_sql "SELECT nodeport FROM pgautofailover.node
			WHERE reportedstate IN ('primary', 'wait_primary', 'single')
			  AND goalstate = reportedstate" 2>/dev/null || true)"
		if [[ "$port" =~ ^[0-9]+$ ]]; then
			[[ "$port" == "$(cat "$dir/node1.port")" ]] && echo 1 || echo 2
			return 0
		fi
		sleep 0.1
	done
	say "no primary"
	return 1
}

# The name of node N under DIR: node1, node2 or monitor.
node_name() { [[ "$1" == monitor ]] && echo monitor || echo "node$1"; }

# Node N's pg_autoctl process group, and its PostgreSQL (postmaster.pid).
pids() {
	local name pgid pm
	name="$(node_name "$1")"
	pgid="$(cat "$dir/$name.pid" 2>/dev/null || true)"
	if [[ -n "$pgid" ]]; then
		pgrep -g "$pgid" || true
	fi
	if [[ -f "$dir/$name/postmaster.pid" ]]; then
		pm="$(head -n 1 "$dir/$name/postmaster.pid")"
		if kill -0 "$pm" 2>/dev/null; then
			echo "$pm"
			pgrep -P "$pm" || true
		fi
	fi
}

# The keeper's whole process group at once, and again while anything is
# left: a keeper could fork a service between the listing and the kill,
# and that process outlived the test (seen once, in 118).
kill9() {
	local n="$1" p pgid
	pgid="$(cat "$dir/$(node_name "$n").pid" 2>/dev/null || true)"
	for _ in $(seq 100); do
		[[ -z "$pgid" ]] || kill -KILL -- "-$pgid" 2>/dev/null || true
		mapfile -t p < <(pids "$n" | sort -u)
		((${#p[@]})) || return 0
		kill -9 "${p[@]}" 2>/dev/null || true
		sleep 0.05
	done
}

stop() {
	local name pid
	for name in node1 node2 monitor; do
		pid="$(cat "$dir/$name.pid" 2>/dev/null || true)"
		[[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null || true
	done
	for name in node1 node2 monitor; do
		pid="$(cat "$dir/$name.pid" 2>/dev/null || true)"
		[[ -n "$pid" ]] || continue
		for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	for name in node1 node2 monitor; do
		[[ -f "$dir/$name/postmaster.pid" ]] &&
			"$pgbin/pg_ctl" -D "$dir/$name" -m immediate stop >/dev/null 2>&1 || true
	done
	stop_pool
}

shift 2
case "$cmd" in
start) start "$@" ;;
primary) primary ;;
wait) wait_monitor "$ready_sql" "${1:-120}" ;;
pids) pids "$1" ;;
kill9) kill9 "$1" ;;
restart) run_keeper "$dir/$(node_name "$1")" "$(node_name "$1")" ;;
stop) stop ;;
*) say "unknown command $cmd"; exit 2 ;;
esac
