#!/usr/bin/env bash
# Where one acks=all record's time goes (issue 25, item 1;
# docs/benchmarks.md, "Where an acks=all record's time goes").  Not a
# test: prints figures; nothing here passes or fails on timing.
#
# Three data nodes, a coordinator and three mq-broker processes on this
# machine (fsync on, as test/bench/replication.sh starts them), one
# 1-partition topic with replication.factor 3 and min.insync.replicas 2.
# One client sends single-record CALL mq.produce (pgbench --log: each
# record's start and end, in us); runs alternate acks=1 and acks=all.
# During the acks=all runs both followers' brokers are traced with strace
# (their sends and receives only, so the brokers, which make few system
# calls, are barely slowed; the servers are not traced at all).  Each
# broker's sends are decoded (PostgreSQL's protocol: the statement and,
# for a fetch, its offset), so every record's path is timed per follower:
#
#   1 commit+fetch   record start -> the follower's broker receives the
#                    fetch answer that carries the record (the producer's
#                    write and commit, the leader's long poll waking and
#                    reading it, the answer's way to the broker)
#   2 broker         -> the broker sends the append to its node
#   3 append+flush   -> the node answered (the append and its WAL flush)
#   4 broker         -> the broker sends the next fetch (the acknowledgement)
#   5 ack fetch      -> its answer (the leader records the follower's log
#                    end and moves the high watermark)
#   6 wake+return    the later follower's answer -> record end (the
#                    producer's wait wakes, returns, the client reads it)
#
# Printed: medians and means per step for the follower whose
# acknowledgement came last (it moved the high watermark), the total, and
# acks=1 beside it; with --out FILE also a markdown table.
#
# With --records N each CALL sends a batch of N records of 100 B (default
# one record of 1 B): the steps are then a batch's, timed by its first
# record's offset.
#
# Usage: test/bench/ackpath.sh [--duration S] [--runs N] [--records N] [--out FILE] [--save DIR]
# (--save: keep the raw logs and traces in DIR; perl test/bench/ackpath.pl
# DIR RUNS FOLLOWER... reads them again)
# Environment: MQ_PG_ROOT (the installed extension to use, as for every
# script), MQ_BENCH_BROKER_REPO (a checkout whose built broker to run, to
# compare an older build in the same conditions).
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"
command -v strace >/dev/null || bash "$REPO/scripts/install-deps.sh" bench

DURATION=5 RUNS=3 OUT="" SAVE="" RECORDS=1
while (($#)); do
	case "$1" in
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--save) SAVE="${2:?}"; shift ;;
	--records) RECORDS="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
BROKER_REPO="${MQ_BENCH_BROKER_REPO:-$MQ_REPO_ROOT}"
[[ -x "$BROKER_REPO/broker/mq-broker/mq-broker" ]] || mq_die "no built broker in $BROKER_REPO"

mq_bench_work ackpath

mq_phase "3 data nodes, a coordinator, 3 brokers ($BROKER_REPO)"
CONF=("fsync = on" "synchronous_commit = on" "shared_buffers = 256MB" "max_wal_size = 4GB"
	"log_min_messages = warning" "track_functions = all")
bench_replicated --brokers-from "$BROKER_REPO" "${CONF[@]}"
coord_sql "SELECT mq_coord.create_topic('bench', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null
state() { coord_sql "SELECT coalesce(leader, -1) || '/' || cardinality(isr) FROM mq_coord.partition WHERE topic = 'bench'"; }
for ((i = 0; i < 600; i++)); do
	[[ "$(state 2>/dev/null)" =~ ^([1-3])/3$ ]] && break
	sleep 0.1
done
[[ "$(state)" =~ ^([1-3])/3$ ]] || mq_die "no leader with all three replicas in sync: $(state)"
L="${BASH_REMATCH[1]}"
FOLLOWERS=()
for i in 1 2 3; do ((i == L)) || FOLLOWERS+=("$i"); done
echo "leader: broker $L; followers: brokers ${FOLLOWERS[*]}"
log_end() { cluster_psql "node$L" -A -t -c "SELECT log_end_offset FROM mq.replica_status WHERE topic = 'bench'"; }
caught_up() {
	local i v
	for i in 1 2 3; do
		v="$(cluster_psql "node$i" -A -t -c "SELECT log_end_offset || '/' || high_watermark \
			FROM mq.replica_status WHERE topic = 'bench'")"
		[[ "$v" == "$(log_end)/$(log_end)" ]] || return 1
	done
}
settle() {
	for ((i = 0; i < 600; i++)); do caught_up && return 0; sleep 0.1; done
	mq_die "the replicas did not catch up"
}

for acks in 1 all; do
	if ((RECORDS == 1)); then
		echo "CALL mq.produce('bench', NULL, ARRAY['x']::bytea[], 0, '$acks');"
	else
		echo "CALL mq.produce('bench', NULL, array_fill(convert_to(repeat('x', 100), 'UTF8')," \
			"ARRAY[$RECORDS]), 0, '$acks');"
	fi >"$WORK/one_$acks.sql"
done
for ((r = 1; r <= RUNS; r++)); do
	for acks in 1 all; do
		settle
		base="$(log_end)"
		pids=()
		if [[ "$acks" == all ]]; then
			for b in "${FOLLOWERS[@]}"; do
				strace -q -ttt -xx -s 1024 -e trace=sendto,recvfrom -o "$WORK/strace.$r.$b" \
					-p "${MQ_BROKER_PID[$b]}" &
				pids+=("$!")
			done
			sleep 0.5 # attached
		fi
		(cd "$WORK" && "$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$WORK/one_$acks.sql" \
			--log --log-prefix="lat_${acks}_$r" -d "$(cluster_conninfo "node$L")" >/dev/null 2>&1) ||
			mq_die "pgbench failed (acks=$acks)"
		for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
		for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
		echo "$base" >"$WORK/base.$acks.$r"
		echo "run $r acks=$acks: $(cat "$WORK"/lat_"${acks}_$r"* | wc -l) records from offset $base; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	done
done

mq_phase "the path of each acks=all record"
echo "$RECORDS" >"$WORK/records"
perl "$HERE/ackpath.pl" "$WORK" "$RUNS" "${FOLLOWERS[@]}" | tee "$WORK/table.md"
[[ -n "$OUT" ]] && cp "$WORK/table.md" "$OUT"
[[ -n "$SAVE" ]] && mkdir -p "$SAVE" && cp "$WORK"/{lat_,strace.,base.}* "$WORK/records" "$SAVE"/
exit 0
