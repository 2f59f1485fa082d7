#!/usr/bin/env bash
# Consuming through Kafka with the record batches the database encodes
# (mq.kafka_fetch, the default) against mq-kafka's own encoder
# (--fetch-encoder=daemon, what Fetch did before) and `mqctl perf consume`
# through SQL, on one throwaway cluster in one run.
#
#   bash test/bench/kafka_fetch.sh [RECORDS] [ROUNDS]   # default 200000 3
#
# RECORDS 100-byte records on one partition; each round reads them all
# from the beginning three ways, in rotated order: librdkafka
# (test/kafka/rdk_client.c consume, defaults: 1 MB a partition) through a
# daemon that copies the database's batches, librdkafka through a daemon
# that encodes rows itself, and `mqctl perf consume` (batches of 1000).
# Printed per round: records/s of each and the ratios to SQL; then the
# medians; and the server CPU per record of each Kafka path: the daemon
# process's and its database backends' user+system time over the read
# (/proc/PID/stat; the backends are found by application_name), which
# depends much less on the machine's load than the rates do.  Uses the
# INSTALLED extension and broker/ binaries (build first).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
N="${1:-200000}"
ROUNDS="${2:-3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-kfetch.XXXXXX")"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
mq_on_exit cleanup

cc -O2 -o "$WORK/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread
cluster_start bench >/dev/null
psql -X -q -c "CREATE EXTENSION mq" -c "SELECT mq.create_topic('kfb', 1)" >/dev/null
for ((i = 0; i < N; i += 10000)); do
	psql -X -q -c "SELECT count(*) FROM mq.send_batch('kfb', NULL::text[],
	                 ARRAY(SELECT repeat('x', 100) FROM generate_series(1, least(10000, $N - $i))))" >/dev/null
done
psql -X -q -c "VACUUM ANALYZE" >/dev/null

# start_daemon NAME [OPTION...]: an mq-kafka whose backends are application_name NAME
declare -A PORT PID
start_daemon() {
	local name="$1" port
	shift
	port="$(free_port)"
	broker/mq-kafka/mq-kafka --listen "127.0.0.1:$port" -d "dbname=postgres application_name=$name" "$@" \
		>"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=($!)
	PORT[$name]=$port
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
}
start_daemon kfetch_db
start_daemon kfetch_daemon --fetch-encoder=daemon

# CPU ticks of the daemon NAME, and of its backends
ticks() {
	local name="$1" total=0 p
	for p in $(psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$name'"); do
		total=$((total + $(mq_proc_ticks "$p" || echo 0)))
	done
	echo "$(mq_proc_ticks "${PID[$name]}" || echo 0) $total"
}
HZ="$(getconf CLK_TCK)"

rate() { sed -n 's/.*records\/s \([0-9.]*\).*/\1/p' <<<"$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# records/s, then CPU ticks of the daemon and of its backends over the read
kafka_read() {
	local name="$1" d0 b0 d1 b1 out
	read -r d0 b0 < <(ticks "$name")
	out="$("$WORK/rdk_client" consume "127.0.0.1:${PORT[$name]}" kfb "$N")"
	read -r d1 b1 < <(ticks "$name")
	echo "$(rate "$out") $((d1 - d0)) $((b1 - b0))"
}
sql_read() {
	broker/mqctl/mqctl perf consume kfb --records "$N" --reporting-interval-ms 600000 | tail -1 |
		sed -n 's/.* \([0-9.]*\) records\/sec.*/\1/p'
}

# warm up: each path once (pools connected, caches filled)
kafka_read kfetch_db >/dev/null
kafka_read kfetch_daemon >/dev/null
sql_read >/dev/null

echo "| round | Kafka, database encodes | Kafka, daemon encodes | SQL | database/SQL | daemon/SQL | database/daemon |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for ((r = 1; r <= ROUNDS; r++)); do
	order=(db daemon sql)
	for ((k = 1; k < r; k++)); do order=("${order[@]:1}" "${order[0]}"); done
	for w in "${order[@]}"; do
		case "$w" in
			db) read -r db dbd dbb < <(kafka_read kfetch_db) ;;
			daemon) read -r dm dmd dmb < <(kafka_read kfetch_daemon) ;;
			sql) sq="$(sql_read)" ;;
		esac
	done
	printf '| %d | %.0f | %.0f | %.0f | %s | %s | %s |\n' "$r" "$db" "$dm" "$sq" \
		"$(mq_ratio "$db" "$sq")" "$(mq_ratio "$dm" "$sq")" "$(mq_ratio "$db" "$dm")"
	echo "$db" >>"$WORK/db"
	echo "$dm" >>"$WORK/dm"
	echo "$sq" >>"$WORK/sq"
	echo "$dbd" >>"$WORK/dbd"
	echo "$dbb" >>"$WORK/dbb"
	echo "$dmd" >>"$WORK/dmd"
	echo "$dmb" >>"$WORK/dmb"
done
db="$(median <"$WORK/db")"
dm="$(median <"$WORK/dm")"
sq="$(median <"$WORK/sq")"
printf '| median | %.0f | %.0f | %.0f | %s | %s | %s |\n' "$db" "$dm" "$sq" \
	"$(mq_ratio "$db" "$sq")" "$(mq_ratio "$dm" "$sq")" "$(mq_ratio "$db" "$dm")"
echo
echo "server CPU per record, median of $ROUNDS reads of $N (mq-kafka process / its backends / both):"
for w in db dm; do
	d="$(median <"$WORK/${w}d")"
	b="$(median <"$WORK/${w}b")"
	awk -v d="$d" -v b="$b" -v hz="$HZ" -v n="$N" -v w="$w" 'BEGIN {
		printf "  %s: %.2f / %.2f / %.2f us\n", (w == "db" ? "database encodes" : "daemon encodes  "),
			d / hz / n * 1e6, b / hz / n * 1e6, (d + b) / hz / n * 1e6 }'
done

