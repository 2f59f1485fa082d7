#!/usr/bin/env bash
# mq against the systems its users would otherwise pick (issue 15,
# "Published comparison"), in ONE run on ONE machine, every server
# throwaway on a free loopback port and stopped at the end:
#
#   mq              the installed extension, one-partition topics
#   mq-async        the same with synchronous_commit = off (a second line)
#   pgq             PgQ (postgresql-15-pgq3) with its ticker pgqd, in the
#                   same PostgreSQL cluster as mq
#   plain           plain PostgreSQL: a table as a queue, INSERT, and
#                   DELETE ... FOR UPDATE SKIP LOCKED ... RETURNING
#   redis-always    Redis Streams, appendonly yes, appendfsync always
#   redis-everysec  the same with appendfsync everysec (a second line)
#   nats            NATS JetStream (nats-server 2.9), file storage
#
# and, with --replicated (issue 25), replicated systems instead:
#
#   mq-rf3          three mq data nodes, a coordinator and three mq-broker
#                   processes; one-partition topics of replication.factor 3
#                   and min.insync.replicas 2, CALL mq.produce with
#                   acks=all on the leader's node, consume with
#                   mq.await_commit after each commit
#   redis-wait2     a Redis primary and two replicas (appendfsync always on
#                   each), WAIT 2 after each write and each XACK
#   nats-r3         three NATS servers in one JetStream cluster, a
#                   file-stored stream of 3 replicas
#
# (servers: test/bench/peers/servers.sh)
# Workloads, each with 100-byte values through small C clients
# (test/bench/peers/: libpq, hiredis, the NATS C client):
#
#   single1  single-record produce, 1 client, records/s
#   single4  single-record produce, 4 clients, records/s
#   batch    batches of 1,000 records, 1 client, records/s
#   consume  consume with acknowledgement (a commit per batch of up to
#            1,000) from a backlog of --backlog records, records/s
#   latency  end-to-end latency at --rate records/s, p50 and p99 in ms
#
# Medians of --runs alternating runs: every round runs each workload on
# every system, in an order rotated each round.  The durability of each
# system is printed with the results.  Not a test: prints figures (with
# --out FILE a markdown table, with --data FILE the plot's input) and never
# fails on them.  MQ_PEERS_SHORT=1 makes every size tiny and one round, so
# that test/cli/peers_bench.sh can check in seconds that the script works.
#
# Usage: test/bench/peers.sh [--seconds S] [--runs N] [--backlog N]
#                            [--rate R] [--latency-count N] [--systems "..."]
#                            [--replicated] [--workloads "..."]
#                            [--out FILE] [--data FILE]
# (with --workloads, the figures of the others are left empty)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

SECONDS_RUN=5 RUNS=3 BACKLOG=200000 RATE=500 LCOUNT=2500 OUT="" DATA=""
SYSTEMS="mq mq-async pgq plain redis-always redis-everysec nats"
WORKLOADS="single1 single4 batch consume latency"
if [[ -n "${MQ_PEERS_SHORT:-}" ]]; then
	SECONDS_RUN=0.25 RUNS=1 BACKLOG=2000 LCOUNT=60
fi
while (($#)); do
	case "$1" in
	--seconds) SECONDS_RUN="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--backlog) BACKLOG="${2:?}"; shift ;;
	--rate) RATE="${2:?}"; shift ;;
	--latency-count) LCOUNT="${2:?}"; shift ;;
	--systems) SYSTEMS="${2:?}"; shift ;;
	--replicated)
		SYSTEMS="mq-rf3 redis-wait2 nats-r3"
		# a replicated write may take longer than a short run's 0.25 s
		[[ -n "${MQ_PEERS_SHORT:-}" ]] && SECONDS_RUN=1
		;;
	--workloads) WORKLOADS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--data) DATA="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done
# Redis, NATS, PgQ and their clients: the bench dependencies
bash "$REPO/scripts/install-deps.sh" bench >&2

# a private PostgreSQL (MQ_PG_ROOT, scripts/pg-private.sh) copied before
# PgQ was installed lacks it: copy PgQ's files in, as pg-private.sh would
if [[ -n "${MQ_PG_ROOT:-}" && ! -f "$MQ_PG_ROOT$("$PG_CONFIG" --sharedir)/extension/pgq.control" ]]; then
	dpkg -L postgresql-15-pgq3 | while IFS= read -r f; do
		if [[ -f "$f" && "$f" == /usr/*/postgresql/15/* ]]; then
			install -D -m 644 "$f" "$MQ_PG_ROOT$f"
		fi
	done
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-peers.XXXXXX")"
chmod 755 "$WORK"
mq_on_exit "rm -rf '$WORK'"

mq_phase "clients"
CFLAGS=(-O2 -Wall -Wextra -Werror -pthread)
gcc "${CFLAGS[@]}" $(pkg-config --cflags libpq) -o "$WORK/peers-pg" \
	"$HERE/peers/driver.c" "$HERE/peers/pg.c" -lpq
gcc "${CFLAGS[@]}" -o "$WORK/peers-redis" "$HERE/peers/driver.c" "$HERE/peers/redis.c" -lhiredis
gcc "${CFLAGS[@]}" -o "$WORK/peers-nats" "$HERE/peers/driver.c" "$HERE/peers/nats.c" -lnats

# servers: each a background process whose pid is kept and stopped at exit
# (test/bench/peers/servers.sh starts them)
declare -A PID=() TARGET=()
stop_pid() {
	if kill -TERM "$1" 2>/dev/null && ! timeout 20 tail --pid="$1" -f /dev/null; then
		kill -KILL "$1" 2>/dev/null || true
	fi
}
mq_on_exit 'for p in "${PID[@]}"; do stop_pid "$p"; done'
# shellcheck source=test/bench/peers/servers.sh
source "$HERE/peers/servers.sh"
has() { [[ " $SYSTEMS " == *" $1 "* ]]; }

if has mq || has mq-async || has pgq || has plain; then
	mq_phase "PostgreSQL (fsync on, synchronous_commit on) with mq and PgQ"
	start_pg
fi
for mode in always everysec; do
	if has "redis-$mode"; then
		mq_phase "Redis, appendfsync $mode"
		start_redis "$mode"
	fi
done
if has nats; then
	mq_phase "NATS JetStream"
	start_nats
fi
if has mq-rf3; then
	mq_phase "mq replicated: 3 data nodes, a coordinator, 3 brokers"
	start_mq_rf3
fi
for n in 1 2; do
	if has "redis-wait$n"; then
		mq_phase "Redis, a primary and 2 replicas, WAIT $n per write"
		start_redis_repl "$n"
	fi
done
if has nats-r3; then
	mq_phase "NATS JetStream, a cluster of 3 servers"
	start_nats_cluster
fi

# client MODE SYSTEM NAME ARGS...: the client binary for SYSTEM, with its
# target (for mq-rf3 the leader of topic NAME)
client() {
	local m="$1" s="$2" bin t
	shift 2
	case "$s" in
	redis-*) bin=peers-redis ;;
	nats*) bin=peers-nats ;;
	*) bin=peers-pg ;;
	esac
	t="${TARGET[$s]:-${TARGET[$s/$1]:-}}"
	"$WORK/$bin" "$m" "$s" "$t" "$@"
}
# the names: one topic/queue/stream per workload kind and system (mq and
# mq-async share a cluster, so they get their own names)
name() { echo "${2//-/_}_$1"; }
for s in $SYSTEMS; do
	for w in prod cons lat; do
		[[ "$s" == mq-rf3 ]] && mq_rf3_topic "$(name "$w" "$s")"
		client setup "$s" "$(name "$w" "$s")"
	done
	if [[ "$s" == pgq ]]; then
		# the latency queue ticks as soon as the ticker sees an event
		cluster_psql peers -c "SELECT pgq.set_queue_config('pgq_lat', 'ticker_max_lag', '0')" >/dev/null
	fi
done

# one WORKLOAD on SYSTEM: prints its figure(s)
measure() {
	local w="$1" s="$2" k
	if [[ "$s" == mq-rf3 ]]; then
		# every replica back in the ISR before a run (a run may shrink it)
		for k in prod cons lat; do mq_rf3_ready "$(name "$k" "$s")" || return 1; done
	fi
	case "$w" in
	single1) client produce "$s" "$(name prod "$s")" -c 1 -s "$SECONDS_RUN" ;;
	single4) client produce "$s" "$(name prod "$s")" -c 4 -s "$SECONDS_RUN" ;;
	batch) client produce "$s" "$(name prod "$s")" -c 1 -b 1000 -s "$SECONDS_RUN" ;;
	consume)
		client fill "$s" "$(name cons "$s")" -n "$BACKLOG" -b 1000 || return 1
		if [[ "$s" == pgq ]]; then
			# close the last batch now rather than at the ticker's next lag check
			cluster_psql peers -A -t -c "SELECT pgq.force_tick('pgq_cons')" \
				-c "SELECT pgq.ticker('pgq_cons')" >/dev/null || return 1
		fi
		client consume "$s" "$(name cons "$s")" -n "$BACKLOG" -b 1000
		;;
	latency) client latency "$s" "$(name lat "$s")" -r "$RATE" -n "$LCOUNT" ;;
	esac
}

read -r -a sys <<<"$SYSTEMS"
for ((r = 1; r <= RUNS; r++)); do
	mq_phase "round $r of $RUNS"
	for w in $WORKLOADS; do
		for ((i = 0; i < ${#sys[@]}; i++)); do
			s="${sys[(i + r - 1) % ${#sys[@]}]}"
			v="$(measure "$w" "$s")" || mq_die "$w on $s failed"
			echo "$w $s $v" | tee -a "$WORK/results"
		done
	done
done
for p in "${!PID[@]}"; do stop_pid "${PID[$p]}"; unset "PID[$p]"; done

# median WORKLOAD SYSTEM FIELD: the median of that figure over the rounds
median() {
	awk -v w="$1" -v s="$2" -v f="$3" '$1 == w && $2 == s { print $(f + 2) }' "$WORK/results" |
		sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
durability() {
	case "$1" in
	mq | pgq | plain) echo "fsync on, synchronous_commit on: each commit flushed before it is acknowledged" ;;
	mq-async) echo "synchronous_commit off: the last ~0.6 s of commits can be lost in a crash of the machine" ;;
	redis-always) echo "appendfsync always: each write fsynced before the reply" ;;
	redis-everysec) echo "appendfsync everysec: about 1 s of writes can be lost in a crash of the machine" ;;
	nats) echo "JetStream file store: written to the OS before the acknowledgement, fsynced every 2 min (nats-server 2.9 has no per-message fsync)" ;;
	mq-rf3) echo "replication.factor 3, min.insync.replicas 2, acks=all: every in-sync replica committed (fsync on) before the acknowledgement; committed offsets the same (mq.await_commit)" ;;
	redis-wait*) echo "appendfsync always on the primary; WAIT ${1#redis-wait}: that many replicas received the write (Redis 7.0 has no WAITAOF: their fsync is not awaited)" ;;
	nats-r3) echo "R3 file stream: 2 of 3 servers wrote it to the OS before the acknowledgement, none fsynced it" ;;
	esac
}
mq_phase "results (medians of $RUNS rounds)"
table="| system | single, 1 client, rec/s | single, 4 clients, rec/s | batches of 1,000, rec/s | consume + ack, rec/s | latency p50, ms | latency p99, ms | durability |
|---|---:|---:|---:|---:|---:|---:|---|"
[[ -n "$DATA" ]] && echo "# system single1 single4 batch consume p50_ms p99_ms" >"$DATA"
for s in $SYSTEMS; do
	row="$s $(median single1 "$s" 1) $(median single4 "$s" 1) $(median batch "$s" 1) $(median consume "$s" 1) $(median latency "$s" 1) $(median latency "$s" 2)"
	read -r _ a b c d e f <<<"$row"
	table+="
| $s | $a | $b | $c | $d | $e | $f | $(durability "$s") |"
	[[ -n "$DATA" ]] && echo "$row" >>"$DATA"
done
table+="

Each round ran every workload on every system in turn (order rotated per
round); $SECONDS_RUN s per produce run, a backlog of $BACKLOG records,
latency at $RATE records/s over $LCOUNT records; 100-byte values."
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
