#!/usr/bin/env bash
# mq-kafka's requests about one partition as the database holds more
# partitions of other topics, in one run on one throwaway cluster: the
# mq-kafka of this tree ("after") and that of --base ("before"),
# alternating.  A topic "one" of one partition holds 3 records; after
# each step the database holds that many more partitions, in topics of
# --per-topic partitions (--steps, default "0 1000 4000"; default 500 a
# topic; with 1, as many topics as partitions).  test/bench/kafka_lookups.py
# sends each request --count times in turn on one connection and gives
# its median and 90th percentile:
#
#   apiversions  no database work: the floor
#   metadata     Metadata v1 of "one"
#   fetch4       Fetch v4 of its partition (record batches from mq.kafka_fetch)
#   fetch13      Fetch v13 of it, the topic named by its id
#
# Printed: each run, then per step the medians over --runs (µs) and
# after / before.  The figures of docs/design.md ("Views joined by their
# keys") come from it.
#
# Usage: test/bench/kafka_lookups.sh [--steps "0 1000 ..."] [--per-topic N]
#        [--count N] [--runs N] [--base REV] [--base-kafka PATH]
# Uses the INSTALLED extension (MQ_PG_ROOT honoured) and this tree's
# broker/ (build first); the base's mq-kafka is built in a temporary
# directory.
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"
cd "$REPO"
STEPS="0 1000 4000" PER=500 COUNT=200 RUNS=3 BASE=main BASE_KAFKA=""
while (($#)); do
	case "$1" in
	--steps) STEPS="${2:?}"; shift ;;
	--per-topic) PER="${2:?}"; shift ;;
	--count) COUNT="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--base) BASE="${2:?}"; shift ;;
	--base-kafka) BASE_KAFKA="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-lookups.XXXXXX")"
KPID=""
cleanup() {
	[[ -n "$KPID" ]] && { kill "$KPID" 2>/dev/null; wait "$KPID" 2>/dev/null; }
	rm -rf "$WORK"
}
mq_on_exit cleanup

[[ -n "$BASE_KAFKA" ]] || BASE_KAFKA="$(base_kafka "$BASE" "$WORK/base")"
declare -A PROG=([before]="$BASE_KAFKA" [after]="$PWD/broker/mq-kafka/mq-kafka")

cluster_start lookups "log_min_messages = warning" >/dev/null
psql -X -q -c "CREATE EXTENSION mq" -c "SELECT mq.create_topic('one', 1)" \
	-c "SELECT count(*) FROM mq.send_batch('one', NULL::text[], ARRAY['a', 'b', 'c'])" >/dev/null

KINDS="apiversions metadata fetch4 fetch13"
declare -A MED=()
added=0
table="| topics | partitions | request | before (µs) | after (µs) | after/before |
|---:|---:|---|---:|---:|---:|"
for step in $STEPS; do
	while ((added < step)); do
		psql -X -q -c "SELECT mq.create_topic('bulk_$added', $PER)" >/dev/null
		added=$((added + PER))
	done
	parts="$(psql -X -At -c "SELECT count(*) FROM mq.partition_state")"
	topics="$(psql -X -At -c "SELECT count(*) FROM mq.topic")"
	for ((run = 1; run <= RUNS; run++)); do
		for v in before after; do
			port="$(free_port)"
			"${PROG[$v]}" --listen "127.0.0.1:$port" -d "dbname=postgres" >"$WORK/$v.log" 2>&1 &
			KPID=$!
			until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
			out="$(/usr/bin/python3 test/bench/kafka_lookups.py "$port" one "$COUNT")"
			kill "$KPID"
			wait "$KPID" 2>/dev/null || true
			KPID=""
			printf 'partitions %d, run %d, %s: %s\n' "$parts" "$run" "$v" "$(tr '\n' ' ' <<<"$out")"
			while read -r kind p50 _; do
				MED[$parts.$kind.$v]="${MED[$parts.$kind.$v]:-} $p50"
			done <<<"$out"
		done
	done
	for kind in $KINDS; do
		b="$(median "${MED[$parts.$kind.before]}")" a="$(median "${MED[$parts.$kind.after]}")"
		table+=$'\n'"| $topics | $parts | $kind | $b | $a | $(mq_ratio "$a" "$b") |"
	done
done
printf '%s\n' "$table"
cluster_stop lookups immediate
