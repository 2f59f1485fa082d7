#!/usr/bin/env bash
# Parked Kafka fetches woken by the database (broker/mq-kafka/
# fetch_watch.c) against the 100 ms recheck they had, in one run on one
# throwaway cluster: the mq-kafka of this tree ("after") and that of
# --base (default main, "before"), alternating.
#
#   idle CPU  --consumers kcat consumers (librdkafka's defaults: each
#             Fetch waits up to 500 ms) at the end of partitions of one
#             idle topic, for --seconds: the CPU seconds mq-kafka and its
#             database backends spent (/proc utime + stime), per second.
#   latency   with those consumers running, a record sent through SQL to
#             another topic, to the moment a kcat waiting at that topic's
#             end has printed it and exited (--records of them, median):
#             the wake-up the database gives is the one a replicated
#             partition's moving high watermark gives (the same change
#             counter, notify.c), so this is also that path's wake-up.
#
# Printed: each run, then the medians of --runs and the ratios after /
# before.
#
# Usage: test/bench/fetch_wake.sh [--consumers N] [--seconds S]
#        [--records N] [--runs N] [--base REV] [--base-kafka PATH]
# Uses the INSTALLED extension (MQ_PG_ROOT honoured) and this tree's
# broker/ (build first); the base's mq-kafka is built in a temporary
# directory.  Fixed sleeps are settling times of a benchmark, not checks.
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"
cd "$REPO"
CONSUMERS=20 SECS=10 RECORDS=9 RUNS=3 BASE=main BASE_KAFKA=""
while (($#)); do
	case "$1" in
	--consumers) CONSUMERS="${2:?}"; shift ;;
	--seconds) SECS="${2:?}"; shift ;;
	--records) RECORDS="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--base) BASE="${2:?}"; shift ;;
	--base-kafka) BASE_KAFKA="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-wake.XXXXXX")"
PIDS=()
stop_all() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}
cleanup() {
	stop_all
	rm -rf "$WORK"
}
mq_on_exit cleanup

# the base's mq-kafka (--base-kafka: one built already)
[[ -n "$BASE_KAFKA" ]] || BASE_KAFKA="$(base_kafka "$BASE" "$WORK/base")"
declare -A PROG=([before]="$BASE_KAFKA" [after]="$PWD/broker/mq-kafka/mq-kafka")

cluster_start fetchwake "log_min_messages = warning" >/dev/null
psql -X -q -c "CREATE EXTENSION mq" -c "SELECT mq.create_topic('idle', $CONSUMERS)" \
	-c "SELECT mq.create_topic('lat', 1)" >/dev/null

# CPU ticks of mq-kafka ($1) and of every client backend but ours
ticks() {
	local pids p sum=0
	pids="$(psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'
	                          AND pid <> pg_backend_pid()")"
	for p in "$1" $pids; do
		sum=$((sum + $(mq_proc_ticks "$p" || echo 0)))
	done
	echo "$sum"
}
now_ms() { date +%s%3N; }

declare -A CPU=() LAT=()
HZ="$(getconf CLK_TCK)"
for ((run = 1; run <= RUNS; run++)); do
	for v in before after; do
		port="$(free_port)"
		B="127.0.0.1:$port"
		"${PROG[$v]}" --listen "$B" -d "dbname=postgres" >"$WORK/$v.log" 2>&1 &
		KPID=$!
		PIDS+=("$KPID")
		until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
		for ((i = 0; i < CONSUMERS; i++)); do
			kcat -b "$B" -C -t idle -p "$i" -o end -q >/dev/null 2>&1 &
			PIDS+=($!)
		done
		sleep 3
		t0="$(ticks "$KPID")"
		sleep "$SECS"
		t1="$(ticks "$KPID")"
		cpu="$(awk -v t="$((t1 - t0))" -v hz="$HZ" -v s="$SECS" 'BEGIN { printf "%.4f", t / hz / s }')"
		lats=""
		for ((r = 0; r < RECORDS; r++)); do
			# from the offset the record will get (not "end": a kcat slow
			# to start would look after it and wait for ever)
			next="$(psql -X -At -c "SELECT high_watermark FROM mq.partitions WHERE topic = 'lat'")"
			kcat -b "$B" -C -t lat -p 0 -o "$next" -c 1 -q >/dev/null 2>&1 &
			kc=$!
			sleep 1
			s="$(now_ms)"
			psql -X -q -c "SELECT mq.send('lat', NULL::text, 'r$r', partition => 0)" >/dev/null
			wait "$kc"
			lats="$lats $(($(now_ms) - s))"
		done
		lat="$(median "$lats")"
		CPU[$v]="${CPU[$v]:-} $cpu"
		LAT[$v]="${LAT[$v]:-} $lat"
		printf 'run %d %s: idle CPU %s s/s, latency median %s ms (%s)\n' "$run" "$v" "$cpu" "$lat" "${lats# }"
		stop_all
	done
done
cb="$(median "${CPU[before]}")" ca="$(median "${CPU[after]}")"
lb="$(median "${LAT[before]}")" la="$(median "${LAT[after]}")"
printf '| figure | before (%s) | after | after/before |\n|---|---|---|---|\n' "$BASE"
printf '| idle CPU, %d consumers (CPU s per s) | %s | %s | %s |\n' "$CONSUMERS" "$cb" "$ca" "$(mq_ratio "$ca" "$cb")"
printf '| SQL record to a waiting consumer, median (ms) | %s | %s | %s |\n' "$lb" "$la" "$(mq_ratio "$la" "$lb")"
cluster_stop fetchwake immediate
