#!/usr/bin/env bash
# pipeline_floor.sh: what acks=all could cost on this machine if followers
# wrote a batch while their leader writes it (docs/benchmarks.md, "What
# followers writing beside their leader would buy").  Three throwaway
# clusters stand for a leader and two followers (a plain topic on the
# leader, follower partitions appended by mq.replica_append on the
# others); no broker, no fetch: one client (test/bench/pipeline_floor.c)
# hands the same records to the three nodes and times each call in three
# orders, rotated in every round:
#   one        the leader's write with its flush (acks=1)
#   serial     today's order: the leader's write committed without its
#              flush, then its flush beside the followers' flushed
#              appends, then a small committed write on the leader for
#              the acknowledging fetch
#   pipelined  the leader's write with its flush beside the followers'
#              appends, then the same acknowledgement
# Both replicated orders leave out the transfer (the leader's read, the
# brokers): the ratio pipelined / serial is what the order alone buys,
# and pipelined / one a floor for acks=all / acks=1 with followers that
# write while their leader writes.  Not a test: nothing passes or fails.
#   --records N   records per call (default 1000; 1 for single records)
#   --duration S  seconds per timed run (default 5)
#   --runs N      rounds (default 3)
set -euo pipefail
# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

RECORDS=1000 DURATION=5 RUNS=3
while (($#)); do
	case "$1" in
	--records) RECORDS="${2:?}"; shift ;;
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done

mq_bench_work pipe
gcc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir)" -o "$WORK/pipeline_floor" \
	"$HERE/pipeline_floor.c" -L"$("$PG_CONFIG" --libdir)" -lpq

# a database of its own on each node, which the maintenance worker
# (mq.database) leaves alone, as in replica_append.sh
conn=()
for n in node1 node2 node3; do
	bench_node "$n" "log_min_messages = warning"
	cluster_psql "$n" -c "CREATE DATABASE bench" >/dev/null
	conn+=("$(cluster_conninfo "$n") dbname=bench")
done
psqlq -d "${conn[0]}" >/dev/null <<'SQL'
CREATE EXTENSION mq;
SELECT mq.create_topic('t', 1);
CREATE TABLE ack (n bigint);
INSERT INTO ack VALUES (0);
SQL
for c in "${conn[1]}" "${conn[2]}"; do
	psqlq -d "$c" >/dev/null <<'SQL'
CREATE EXTENSION mq;
SELECT mq.create_topic('t', 1);
SELECT mq.replica_become_follower('t', 0, 1, 1);
CREATE FUNCTION bench_append(p_base bigint, p_vals bytea[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    b mq.replica_batch;
BEGIN
    b.base_offset := p_base;
    b.log_end_offset := p_base + cardinality(p_vals);
    b.log_start_offset := 0;
    b.created_at := array_fill(now(), ARRAY[cardinality(p_vals)]);
    b.vals := p_vals;
    b.keys := array_fill(NULL::bytea, ARRAY[cardinality(p_vals)]);
    b.headers := array_fill(NULL::jsonb, ARRAY[cardinality(p_vals)]);
    b.producer_ids := array_fill(NULL::bigint, ARRAY[cardinality(p_vals)]);
    b.producer_epochs := array_fill(NULL::integer, ARRAY[cardinality(p_vals)]);
    b.sequences := array_fill(NULL::integer, ARRAY[cardinality(p_vals)]);
    RETURN mq.replica_append('t', 0, 1, b);
END $$;
SQL
done

mq_log "pipeline floor: $RUNS round(s) of ${DURATION}s, $RECORDS record(s) a call (load $(cut -d' ' -f1 /proc/loadavg))"
declare -A rate p50 p99
modes=(one serial pipelined)
for ((r = 1; r <= RUNS; r++)); do
	for ((k = 0; k < 3; k++)); do
		m="${modes[$(((r - 1 + k) % 3))]}"
		read -r calls rs a b < <("$WORK/pipeline_floor" "$m" "$RECORDS" "$DURATION" "${conn[@]}")
		printf 'round %d %-9s %6d calls %9s records/s  p50 %7s ms  p99 %7s ms\n' "$r" "$m" "$calls" "$rs" "$a" "$b"
		rate[$m]+="$rs " p50[$m]+="$a " p99[$m]+="$b "
	done
done
printf '\nmedians of %d rounds, %d record(s) a call:\n' "$RUNS" "$RECORDS"
printf '%-9s %10s %9s %9s %12s %12s %12s\n' order records/s p50_ms p99_ms "rate/one" "p50/one" "p99/one"
for m in "${modes[@]}"; do
	R="$(median "${rate[$m]}")" A="$(median "${p50[$m]}")" B="$(median "${p99[$m]}")"
	printf '%-9s %10s %9s %9s %12s %12s %12s\n' "$m" "$R" "$A" "$B" \
		"$(mq_ratio "$R" "$(median "${rate[one]}")")" "$(mq_ratio "$A" "$(median "${p50[one]}")")" \
		"$(mq_ratio "$B" "$(median "${p99[one]}")")"
done
printf 'pipelined / serial: records/s %s, p50 %s\n' \
	"$(mq_ratio "$(median "${rate[pipelined]}")" "$(median "${rate[serial]}")")" \
	"$(mq_ratio "$(median "${p50[pipelined]}")" "$(median "${p50[serial]}")")"
