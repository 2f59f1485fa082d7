# shellcheck shell=bash
# servers.sh: the servers of test/bench/peers.sh, sourced by it (it needs
# scripts/lib.sh's clusters and brokers, and the script's WORK, PID and
# TARGET).  Each start_* function starts one system's servers as
# throwaways on free loopback ports and records how to reach them:
#
#   start_pg            one PostgreSQL (mq, mq-async, PgQ with pgqd, plain)
#   start_redis MODE    one Redis with appendfsync MODE (always, everysec)
#   start_nats          one NATS JetStream server
#   start_mq_rf3        three mq data nodes, a coordinator and three
#                       mq-broker processes (as test/bench/replication.sh;
#                       RF_BROKER_CONF: more lines of each broker's config)
#   start_redis_repl N  a Redis primary with two replicas, every one with
#                       appendfsync always; clients WAIT N after each write
#   start_nats_cluster  three NATS servers in one JetStream cluster
#
# Servers that are plain processes go in PID (stopped by the script at
# exit); PostgreSQL clusters and brokers are lib.sh's (stopped by its exit
# hook).  Nothing here is shared with other runs.

# wait_port PORT: until something listens on 127.0.0.1:PORT (10 s at most)
wait_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	mq_die "nothing listens on port $1"
}

# wait_for SECONDS CMD...: until CMD succeeds (every 0.1 s)
wait_for() {
	local i n=$(($1 * 10))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

start_pg() {
	local i p
	cluster_start peers "fsync = on" "synchronous_commit = on" "shared_buffers = 256MB" \
		"max_wal_size = 4GB" "log_min_messages = warning"
	PGCONN="$(cluster_conninfo peers)"
	cluster_psql peers -c "CREATE EXTENSION mq" -c "CREATE EXTENSION pgq" >/dev/null
	cat >"$WORK/pgqd.ini" <<-EOF
		[pgqd]
		logfile = $WORK/pgqd.log
		pidfile = $WORK/pgqd.pid
		base_connstr = host=$PGHOST port=$PGPORT user=postgres
		initial_database = postgres
		database_list = postgres
		ticker_period = 0.02
		check_period = 1
	EOF
	chown postgres "$WORK" 2>/dev/null || true
	as_postgres pgqd -q -d "$WORK/pgqd.ini" >/dev/null 2>&1
	# the daemon's pid: the pid file may first name the process that forked
	# it, so wait until it names a live pgqd running our ini file
	for ((i = 0; i < 200; i++)); do
		p="$(cat "$WORK/pgqd.pid" 2>/dev/null || true)"
		if [[ "$p" =~ ^[0-9]+$ ]] && grep -qaF "$WORK/pgqd.ini" "/proc/$p/cmdline" 2>/dev/null; then
			PID[pgqd]="$p"
			break
		fi
		sleep 0.05
	done
	[[ -n "${PID[pgqd]:-}" ]] || mq_die "pgqd did not start: $(cat "$WORK/pgqd.log" 2>/dev/null)"
	for s in mq mq-async pgq plain; do TARGET[$s]="$PGCONN"; done
}

# redis_server NAME PORT MODE [ARGS...]: one Redis in the background
redis_server() {
	local name="$1" port="$2" mode="$3"
	shift 3
	mkdir -p "$WORK/$name"
	redis-server --bind 127.0.0.1 --port "$port" --dir "$WORK/$name" --save '' \
		--appendonly yes --appendfsync "$mode" --daemonize no --loglevel warning \
		--logfile "$WORK/$name.log" "$@" >/dev/null 2>&1 &
	PID[$name]=$!
	wait_port "$port"
}

start_redis() {
	local port
	port="$(free_port)"
	redis_server "redis-$1" "$port" "$1"
	TARGET["redis-$1"]="127.0.0.1:$port"
}

start_nats() {
	local port
	port="$(free_port)"
	nats-server -a 127.0.0.1 -p "$port" -js -sd "$WORK/nats" -l "$WORK/nats.log" >/dev/null 2>&1 &
	PID[nats]=$!
	TARGET[nats]="nats://127.0.0.1:$port"
	wait_port "$port"
}

# ---------------------------------------------------------------------------
# replicated systems

RF_BROKER_CONF=()
RF_CONF=("fsync = on" "synchronous_commit = on" "shared_buffers = 128MB" "max_wal_size = 4GB"
	"log_min_messages = warning" "max_prepared_transactions = 10")
rf_coord() { cluster_psql rfcoord -A -t -c "$1"; }

start_mq_rf3() {
	local n i
	for n in rf1 rf2 rf3 rfcoord; do
		cluster_start "$n" "${RF_CONF[@]}"
		cluster_psql "$n" -c "CREATE EXTENSION mq" >/dev/null
	done
	for i in 1 2 3; do broker_start "$i" "rf$i" rfcoord "${RF_BROKER_CONF[@]}"; done
	rf_brokers() { [[ "$(rf_coord 'SELECT count(*) FROM mq_coord.broker')" == 3 ]]; }
	wait_for 60 rf_brokers || mq_die "the brokers did not register"
}

# mq_rf3_topic NAME: a one-partition topic of replication.factor 3 and
# min.insync.replicas 2, its full ISR, and its leader's node as the target
mq_rf3_topic() {
	local l
	rf_coord "SELECT mq_coord.create_topic('$1', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null
	mq_rf3_ready "$1" || mq_die "no leader with a full ISR for $1"
	l="$(rf_coord "SELECT leader FROM mq_coord.partition WHERE topic = '$1' AND partition = 0")"
	TARGET["mq-rf3/$1"]="$(cluster_conninfo "rf$l")"
}

# mq_rf3_ready NAME: its leader named and all three replicas in the ISR
mq_rf3_ready() {
	rf_full() {
		[[ "$(rf_coord "SELECT leader IS NOT NULL AND cardinality(isr) = 3 FROM mq_coord.partition \
			WHERE topic = '$1' AND partition = 0")" == t ]]
	}
	wait_for 120 rf_full "$1"
}

start_redis_repl() {
	local p i
	p="$(free_port)"
	redis_server redis-primary "$p" always
	for i in 1 2; do
		redis_server "redis-replica$i" "$(free_port)" always --replicaof 127.0.0.1 "$p"
	done
	redis_synced() {
		[[ "$(redis-cli -p "$1" INFO replication | grep -c '^slave[0-9]*:.*state=online')" == 2 ]]
	}
	wait_for 30 redis_synced "$p" || mq_die "the Redis replicas did not sync"
	TARGET["redis-wait$1"]="127.0.0.1:$p"
}

# nats_routed N: server N logged routes to two others
nats_routed() { grep -c 'Route connection created' "$WORK/nats$1.log" | grep -q '^[2-9]'; }

start_nats_cluster() {
	local i j routes="" client=() cport=()
	for i in 1 2 3; do
		client[i]="$(free_port)" cport[i]="$(free_port)"
		routes+="${routes:+, }nats-route://127.0.0.1:${cport[i]}"
	done
	for i in 1 2 3; do
		cat >"$WORK/nats$i.conf" <<-EOF
			server_name: n$i
			listen: 127.0.0.1:${client[i]}
			jetstream { store_dir: "$WORK/nats-r3-$i" }
			cluster { name: peers, listen: 127.0.0.1:${cport[i]}, routes: [$routes] }
		EOF
		nats-server -c "$WORK/nats$i.conf" -l "$WORK/nats$i.log" >/dev/null 2>&1 &
		PID[nats$i]=$!
	done
	for i in 1 2 3; do wait_port "${client[i]}"; done
	# every server sees the other two (its routes are up)
	for j in 1 2 3; do
		wait_for 30 nats_routed "$j" || mq_die "NATS server $j did not join the cluster"
	done
	TARGET["nats-r3"]="nats://127.0.0.1:${client[1]}"
}
