#!/usr/bin/env bash
# How produce cost grows with the work (issue 15, "Scale"), each curve in
# ONE run on ONE throwaway cluster, every mq point beside plain PostgreSQL
# doing the same work in the same run (a table with the log's columns, a
# sequence for the offset and a unique index on it, one INSERT per record;
# pgbench in simple mode, so that the table name can be a variable):
#
#   P  throughput against partitions: 4 clients sending single records,
#      each to a random partition of a topic with 1, 4, 16, 64, 256
#      partitions (the baseline: one table per partition, the same spread)
#   C  throughput against producers: 1, 2, 4, 8, 16 clients, each sending
#      single records to its own partition of a 16-partition topic (the
#      baseline: 16 tables)
#   S  cost against record size: 1 client sending single records of 10 B,
#      100 B, 1 KiB, 10 KiB, 100 KiB and 1 MiB
#
# With --replicated (issue 25, item 5) the same curves with replication:
# three data nodes, a coordinator and three mq-broker processes
# (test/bench/peers/servers.sh, start_mq_rf3), topics of
# replication.factor 3 and min.insync.replicas 2, every record a
# CALL mq.produce(..., acks => 'all'); each point beside the same CALL to
# an unreplicated topic of the same partitions on the leaders' node (one
# node, no replication), in the same run: the ratio is replicated / one
# node.  Every partition's leader is broker 1 (its preferred replica,
# placed first at creation), so that one pgbench drives them all, as on
# one node; the followers fetch from it.
#
# Records/s per point (median of --runs alternating runs of --duration s),
# and the ratio.  Timing on a shared machine is noisy: compare ratios, each
# from one run.  Not a test: it prints figures (with --out FILE also a
# markdown table, which test/bench/plot.sh draws) and never fails on them.
# With --replicated and MQ_BENCH_FUNCTIONS=N (a count; 1 means 8), each
# point's first replicated run also prints the N costliest functions of
# node rf1 (every partition's leader) and rf2 (a follower), calls and ms
# per second (track_functions = all; pg_stat_user_functions).
# MQ_SCALE_SHORT=1 makes it two points per curve, one run of 1 s, so that
# test/unit/bench_scale.sh can check in seconds that it works.  Uses the
# INSTALLED extension (and, replicated, the built broker).
#
# Usage: test/bench/scale.sh [--replicated] [--partitions "1 4 ..."] [--clients "1 2 ..."]
#                            [--duration S] [--runs N] [--curves "P C S"] [--out FILE]
# (--partitions: the points of P; --clients: the points of C; --curves:
# which curves to run)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

DURATION=5 RUNS=3 OUT="" REPL="" CURVES="P C S"
P_POINTS="1 4 16 64 256" C_POINTS="1 2 4 8 16" S_POINTS="10 100 1024 10240 102400 1048576"
if [[ -n "${MQ_SCALE_SHORT:-}" ]]; then
	DURATION=1 RUNS=1 P_POINTS="1 4" C_POINTS="1 2" S_POINTS="10 1024"
fi
while (($#)); do
	case "$1" in
	--replicated) REPL=1 ;;
	--partitions) P_POINTS="${2:?}"; shift ;;
	--clients) C_POINTS="${2:?}"; shift ;;
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--curves) CURVES="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	*) mq_die "unknown option $1 (usage: $0 [--replicated] [--partitions LIST] [--clients LIST] [--duration S] [--runs N] [--curves LIST] [--out FILE])" ;;
	esac
	shift
done

mq_bench_work scale

if [[ -n "$REPL" ]]; then
	[[ -x "$REPO/broker/mq-broker/mq-broker" ]] || command -v mq-broker >/dev/null ||
		mq_die "mq-broker is not built: run make first"
	mq_phase "3 data nodes, a coordinator, 3 brokers (fsync on)"
	# shellcheck disable=SC2034 # servers.sh's bookkeeping
	declare -A PID=() TARGET=()
	# shellcheck source=test/bench/peers/servers.sh
	source "$HERE/peers/servers.sh"
	# preferred leaders (broker 1, see topic below) take leadership at once
	RF_BROKER_CONF=("[replication]" "auto.leader.rebalance.delay.ms = 0")
	# a follower's broker fetches over one connection per leader's node
	# (fetch_session.c); builds before it held one per partition, 512 for
	# 256 partitions, which an older build still needs
	RF_CONF+=("max_connections = 600")
	[[ -z "${MQ_BENCH_FUNCTIONS:-}" ]] || RF_CONF+=("track_functions = all")
	TOP_FUNCTIONS=8
	if [[ "${MQ_BENCH_FUNCTIONS:-1}" =~ ^[0-9]+$ && "${MQ_BENCH_FUNCTIONS:-1}" -gt 1 ]]; then
		TOP_FUNCTIONS="$MQ_BENCH_FUNCTIONS"
	fi
	start_mq_rf3
	NODE=rf1
	A=rf3 B=single
else
	mq_phase "a throwaway cluster (fsync on)"
	cluster_start scale "fsync = on" "synchronous_commit = on" "shared_buffers = 256MB" \
		"max_wal_size = 4GB" "log_min_messages = warning" "max_connections = 64"
	NODE=scale
	A=mq B=plain
fi
sql() { cluster_psql "$NODE" -q -A -t -c "$1" >/dev/null; }
[[ -n "$REPL" ]] || sql "CREATE EXTENSION mq"
# the baseline: a plain table per partition with the log's columns
[[ -n "$REPL" ]] || sql "CREATE FUNCTION plain_table(t text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('CREATE TABLE %I (msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
                                     key bytea, value bytea, headers jsonb)', t);
    EXECUTE format('CREATE SEQUENCE %I', t || '_seq');
    EXECUTE format('CREATE UNIQUE INDEX ON %I (msg_offset)', t);
END \$\$"
# run FILE CLIENTS [TOPIC]: records/s of one pgbench run
# (replicated: a run a client aborted, say on a leader that moved under
# load, is retried twice once the topic's leaders are back, and said so)
run() {
	local out tps try
	for try in 1 2 3; do
		if out="$("$PGBENCH" -n -M simple -c "$2" -j "$2" -T "$DURATION" -f "$1" \
			-d "$(cluster_conninfo "$NODE")" 2>&1)"; then
			break
		fi
		[[ -n "$REPL" && "$try" -lt 3 ]] || mq_die "pgbench failed: $1: $(grep -m 3 -i 'error' <<<"$out")"
		echo "a run of $1 failed ($(grep -m 1 -i 'error' <<<"$out")); again once its leaders are back" >&2
		rf3_ready "$3"
	done
	tps="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")"
	[[ -n "$tps" ]] || mq_die "pgbench failed: $1: $(grep -m 3 -i 'error' <<<"$out")"
	printf '%.0f' "$tps"
}
# functions NODE: name, calls, total and self ms of each tracked function
functions() {
	cluster_psql "$1" -A -t -F ' ' -c "SELECT schemaname || '.' || funcname, sum(calls), sum(total_time),
		sum(self_time) FROM pg_stat_user_functions GROUP BY 1"
}
# profile NAME NODE BEFORE_FILE: the functions NODE ran most since
# BEFORE_FILE's snapshot, per second of a run (MQ_BENCH_FUNCTIONS)
profile() {
	functions "$2" | awk -v name="$1" -v node="$2" -v s="$DURATION" -v before="$3" '
		BEGIN { while ((getline l < before) > 0) { split(l, f, " "); c[f[1]] = f[2]; t[f[1]] = f[3]; x[f[1]] = f[4] } }
		{ dc = ($2 - c[$1]) / s; if (dc > 0) printf "%.1f %s %s: %.1f calls/s, %.1f ms/s (self %.1f)\n",
			($3 - t[$1]) / s, name, node " " $1, dc, ($3 - t[$1]) / s, ($4 - x[$1]) / s }' |
		sort -rn | head -n "$TOP_FUNCTIONS" | cut -d' ' -f2-
}
# point NAME CLIENTS A_FILE B_FILE TOPIC: median records/s of each side (A:
# mq or replicated; B: plain or one node), and the ratio A/B
declare -A R=()
point() {
	local name="$1" c="$2" r
	for ((r = 1; r <= RUNS; r++)); do
		[[ -z "$REPL" ]] || rf3_ready "$5"
		if [[ -n "$REPL" && -n "${MQ_BENCH_FUNCTIONS:-}" && "$r" == 1 ]]; then
			functions rf1 >"$WORK/f1"
			functions rf2 >"$WORK/f2"
			run "$3" "$c" "${5:-}" >>"$WORK/$name.a"
			sleep 1     # the long-lived sessions report their calls once idle a second
			profile "$name" rf1 "$WORK/f1"
			profile "$name" rf2 "$WORK/f2"
		else
			run "$3" "$c" "${5:-}" >>"$WORK/$name.a"
		fi
		echo >>"$WORK/$name.a"
		run "$4" "$c" "${5:-}" >>"$WORK/$name.b"; echo >>"$WORK/$name.b"
	done
	R[$name,a]="$(mq_median <"$WORK/$name.a")"
	R[$name,b]="$(mq_median <"$WORK/$name.b")"
	R[$name,ratio]="$(mq_ratio "${R[$name,a]}" "${R[$name,b]}")"
	echo "$name: $A ${R[$name,a]} records/s, $B ${R[$name,b]}, ratio ${R[$name,ratio]}"
}

if [[ -n "$REPL" ]]; then
	# topic NAME PARTITIONS [CONFIG]: replicated NAME (RF 3, min ISR 2, broker
	# 1 the preferred leader of every partition) and NAME_1 on node rf1 alone
	topic() {
		local cfg='{}'
		[[ -z "${3:-}" ]] || cfg="$3"
		rf_coord "BEGIN;
			SELECT mq_coord.create_topic('$1', $2, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}'::jsonb || '$cfg');
			UPDATE mq_coord.partition SET replicas = 1 || array_remove(replicas, 1), isr = 1 || array_remove(isr, 1)
			 WHERE topic = '$1';
			COMMIT;" >/dev/null
		sql "SELECT mq.create_topic('${1}_1', $2, '$cfg')"
	}
	# rf3_ready TOPIC: every partition of TOPIC led by broker 1 with its full
	# ISR (a run may shrink it; hundreds of partitions take minutes to elect
	# on a loaded machine)
	rf3_led() {
		[[ "$(rf_coord "SELECT count(*) FILTER (WHERE leader IS DISTINCT FROM 1 OR cardinality(isr) < 3)
			FROM mq_coord.partition WHERE topic = '$1'")" == 0 ]]
	}
	rf3_ready() { wait_for 900 rf3_led "$1" || mq_die "the partitions of $1 were not all led by broker 1 with a full ISR"; }
	# send TOPIC PARTITION_EXPR VALUE_EXPR: one record, acks=all (send_b:
	# to the topic on one node)
	send() { echo "CALL mq.produce('$1', NULL, ARRAY[$3], $2, 'all')"; }
	send_b() { echo "CALL mq.produce('${1}_1', NULL, ARRAY[$3], $2, 'all')"; }
else
	topic() {
		local cfg='{}'
		[[ -z "${3:-}" ]] || cfg="$3"
		sql "SELECT mq.create_topic('$1', $2, '$cfg')"
		sql "SELECT plain_table('${1}_' || i) FROM generate_series(0, $2 - 1) i"
	}
	send() { echo "SELECT mq.send('$1', NULL::bytea, $3, partition => $2)"; }
fi
# scripts NAME TOPIC PARTITION_EXPR VALUE_EXPR [PRELUDE]: NAME.a.sql and
# NAME.b.sql, one record per transaction (the plain side: an INSERT into
# the table of that partition; VALUE_EXPR v: payload's record of :size)
scripts() {
	local name="$1" t="$2" p="$3" v="$4" pre="${5:-}"
	{
		[[ -z "$pre" ]] || echo "$pre"
		if [[ "$v" == v ]]; then
			echo "$(send "$t" "$p" "payload_v(:size)");"
		else
			echo "$(send "$t" "$p" "$v");"
		fi
	} >"$WORK/$name.a.sql"
	{
		[[ -z "$pre" ]] || echo "$pre"
		if [[ -n "$REPL" ]]; then
			if [[ "$v" == v ]]; then
				echo "$(send_b "$t" "$p" "payload_v(:size)");"
			else
				echo "$(send_b "$t" "$p" "$v");"
			fi
		elif [[ "$v" == v ]]; then
			echo "INSERT INTO ${t}_0 (msg_offset, value) SELECT nextval('${t}_0_seq'), v FROM payload WHERE size = :size;"
		else
			echo "\\set pp $p"
			echo "INSERT INTO ${t}_:pp (msg_offset, value) VALUES (nextval('${t}_' || :pp || '_seq'), $v);"
		fi
	} >"$WORK/$name.b.sql"
}

# curves left out: no points
[[ " $CURVES " == *" P "* ]] || P_POINTS=""
[[ " $CURVES " == *" C "* ]] || C_POINTS=""
[[ " $CURVES " == *" S "* ]] || S_POINTS=""

mq_phase "P: 4 clients, single records to a random partition of N"
for n in $P_POINTS; do
	topic "p$n" "$n"
	scripts "p$n" "p$n" ":p" "'x'::bytea" "\\set p random(0, $((n - 1)))"
	point "P$n" 4 "$WORK/p$n.a.sql" "$WORK/p$n.b.sql" "p$n"
done

if [[ -n "$C_POINTS" ]]; then
	mq_phase "C: N clients, each to its own partition of 16"
	topic c16 16
	scripts c c16 ":client_id % 16" "'x'::bytea"
fi
for c in $C_POINTS; do
	point "C$c" "$c" "$WORK/c.a.sql" "$WORK/c.b.sql" c16
done

if [[ -n "$S_POINTS" ]]; then
	mq_phase "S: 1 client, single records of growing size"
	topic s 1 '{"max.message.bytes": 2000000}'
	sql "CREATE TABLE payload (size int PRIMARY KEY, v bytea)"
	# a function, not a subquery: CALL takes no subquery among its arguments
	sql "CREATE FUNCTION payload_v(int) RETURNS bytea LANGUAGE sql STABLE AS 'SELECT v FROM payload WHERE size = \$1'"
fi
for size in $S_POINTS; do
	# random bytes: a repeated character would compress to nothing in TOAST
	sql "INSERT INTO payload SELECT $size, substr(decode(string_agg(md5(random()::text), ''), 'hex'), 1, $size)
	       FROM generate_series(1, ($size + 15) / 16)"
	scripts "s$size" s 0 v "\\set size $size"
	point "S$size" 1 "$WORK/s$size.a.sql" "$WORK/s$size.b.sql" s
done

mq_phase "results"
if [[ -n "$REPL" ]]; then
	table="| curve | point | RF 3 acks=all records/s | one node records/s | RF 3 / one node |
|---|---|---|---|---|"
else
	table="| curve | point | mq records/s | plain records/s | mq/plain |
|---|---|---|---|---|"
fi
for n in $P_POINTS; do table+="
| P: 4 clients, random partition | $n partitions | ${R[P$n,a]} | ${R[P$n,b]} | ${R[P$n,ratio]} |"; done
for c in $C_POINTS; do table+="
| C: own partition of 16 | $c clients | ${R[C$c,a]} | ${R[C$c,b]} | ${R[C$c,ratio]} |"; done
for size in $S_POINTS; do table+="
| S: 1 client | $size B records | ${R[S$size,a]} | ${R[S$size,b]} | ${R[S$size,ratio]} |"; done
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
