#!/usr/bin/env bash
# Replication benchmark (docs/replication.md): what acks=all costs against
# acks=1 with replication.factor 3, and how long a failover takes, on three
# data nodes, a coordinator and three mq-broker processes on this machine,
# in ONE run.  Not a test: prints figures (and with --out FILE writes a
# markdown table); nothing here passes or fails on timing.
#
# Figures:
#   T  produce throughput, batches of 1,000 x 100 B records (one
#      CALL mq.produce per batch, pgbench), acks=1 vs acks=all, to a
#      1-partition topic with replication.factor 3 and min.insync.replicas
#      2; for each client count in --clients.  Runs alternate (acks=1,
#      acks=all, acks=1, ...); each figure is the median of --runs runs; the
#      followers replicate during both (acks=1 does not wait for them).
#      Printed: records/s of each and the ratio all/1 (goal >= 0.8).
#      acks=all is measured three ways (docs/replication.md, "The
#      acknowledgement path"): "all" is CALL mq.produce (the leader
#      commits without its own flush, flushes while the followers fetch);
#      "all-split" is the same contract as separate statements
#      (mq.produce_records, COMMIT, mq.produce_await), as mq-kafka runs it;
#      "all-serial" is all-split with SET LOCAL synchronous_commit = local
#      before the COMMIT: the path before this change (the leader flushes
#      at commit, and only then can the followers fetch).  all-split
#      against all-serial is the overlap's gain; ratios are against acks=1
#      of the same run.  WAL bytes per record: pg_current_wal_lsn() deltas
#      summed over the three nodes during each run, over its records.
#   L  single-record produce latency: one CALL mq.produce of one record per
#      transaction from 1 client, acks=1 vs acks=all (and all-split,
#      all-serial as above), --runs runs of --duration s each
#      alternating; p50 and p99 over all of them, beside Kafka's published
#      end-to-end 2 ms / 3 ms (same machine, fsync on).
#   P  (with --acks-only) where a single-record acks=all write spends
#      its time: one more run of L's acks=all, with the servers' function
#      statistics (calls and ms per call, track_functions) and the CPU per
#      record of each kind of process (/proc/PID/stat of every child of
#      the three postmasters, what each postmaster reaped of the children
#      that ended, and the brokers): on each node the brokers' sessions
#      (the leader's: the followers' fetches; a follower's: its appends),
#      the sessions that ended during the run (on the leader: the
#      producer's) and the rest (PostgreSQL's own processes, mq's
#      workers); and the brokers themselves. The same CPU figure for a
#      run of acks=1 before it (the followers replicating behind it) is
#      the baseline: printed with the ratio all/1.
#   E  the exactly-once pipeline: --eos-records records (100 B, null keys)
#      of a 2-partition topic copied to a 3-partition topic with an
#      application row per record, in steps of 100 records: in the cluster
#      by `mqctl pipeline` (both topics replication.factor 3, min ISR 2;
#      two-phase commit across the leaders, docs/delivery.md), and the same
#      steps on one node (node1's own unreplicated topics: one local
#      transaction per step, a procedure that commits after each).  A new
#      group per run reads the whole input again; runs alternate; records/s
#      of each (median of --runs) and the ratio cluster/one node.
#   F  failover: a client (test/bench/failover.c) writes small acks=all
#      batches to whoever the coordinator names leader; the leader's node is
#      killed (kill -9 of its postmaster); the figure is the time from the
#      kill to the first write acknowledged by the new leader.  --failovers
#      times (the killed node is restarted and rejoins the ISR in between).
#      Also printed: when the coordinator recorded the election.
#   A  availability per fault kind (test/bench/availability.pl, with the
#      test helpers of test/t): the leader's node killed, the leader's broker
#      killed, the leader paused, the highly available coordinator's primary
#      killed, the leader cut from the coordinator; for each, the failover
#      time (fault -> first acknowledgement by a new leader; for the
#      coordinator: -> the promoted standby takes writes) and the longest
#      time between two acknowledgements around it.  --availability N
#      rounds per fault (0: skip A); --availability-only runs A alone.
#      Then pairs of overlapping faults (the coordinator's primary killed
#      while the leader is cut from it; a follower's broker paused while
#      the leader's node is killed), with "after heal": the longest time
#      without an acknowledgement after the pair's last fault healed (goal
#      <= 2 x session.timeout.ms).  Then the loaded run: the cut and the
#      pairs again while --availability-load more producers keep both
#      cores busy (default 4).  --availability-parts picks among main,
#      cut, pairs, cut-loaded, pairs-loaded (default all).
#   R  reassignment throughput (docs/replication.md, "Placement and
#      reassignment"): a fourth node and broker join; a topic of two
#      partitions at replication.factor 2 gets --reassign-mb MB in each
#      (1,000-record batches of 1,000 B, acks=1); then one partition moves a
#      replica onto broker 4 without a throttle and the other with
#      --reassign-throttle bytes/s.  The figure is the partition's size on
#      disk divided by the time from reassignment_started to
#      reassignment_completed on the coordinator.  Then the leader's side
#      of the throttle: two partitions of another topic, both led by
#      broker 1 and each holding --reassign-mb MB, move at once (one
#      statement) with the same throttle, each copy to another broker (3
#      and 4, so that each receiving broker has one copy and only the
#      leader's budget is shared): the leader's total outbound rate, both
#      partitions' bytes over the time from the start to the last
#      completion, printed against the throttle, with each copy's rate and
#      the shares the receiving brokers logged.
#
# Servers: PostgreSQL 15 as the postgres user in temp dirs on 127.0.0.1,
# shared_preload_libraries = 'mq', fsync = on, synchronous_commit = on;
# brokers with default settings; MQ_BENCH_CONF adds postgresql.conf lines
# to every server (test/bench/setup.bash).  Everything is stopped and removed at
# exit (scripts/lib.sh).  It uses the INSTALLED extension and the built
# broker: run `make && make install` first (this script never runs make).
#
# Usage: test/bench/replication.sh [--duration S] [--runs N] [--clients "1 4"]
#                                  [--failovers N] [--eos-records N] [--out FILE]
#                                  [--reassign-mb MB] [--reassign-throttle B]
#                                  [--availability N] [--availability-only] [--eos-only]
#                                  [--availability-parts "..."] [--availability-load N]
#                                  [--acks-only]
#   --duration S   seconds per pgbench run (default 10)
#   --runs N       runs per figure and side (default 3; the median is kept)
#   --clients L    client counts for T (default "1 4")
#   --failovers N  failovers measured in F (default 3)
#   --eos-records N  input records of E (default 10000)
#   --out FILE     also write the results as a markdown table to FILE
#   --reassign-mb MB        data per partition moved in R (default 20)
#   --reassign-throttle B   the throttled move's bytes/s in R (default 2000000)
#   --eos-only     run E alone (no A, T, L, F, R); MQ_BENCH_MQCTL names another
#                  mqctl to run the pipeline with (an older build, to compare)
#   --acks-only    run T and L alone (no A, E, F, R)
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

DURATION=10 RUNS=3 CLIENTS="1 4" FAILOVERS=3 EOS_RECORDS=10000 OUT="" AROUNDS=1 AONLY="" EONLY="" KONLY="" REASSIGN_MB=20 REASSIGN_THROTTLE=2000000
APARTS="main cut pairs cut-loaded pairs-loaded" ALOAD=4
while (($#)); do
	case "$1" in
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--clients) CLIENTS="${2:?}"; shift ;;
	--failovers) FAILOVERS="${2:?}"; shift ;;
	--eos-records) EOS_RECORDS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--availability) AROUNDS="${2:?}"; shift ;;
	--availability-only) AONLY=1 ;;
	--availability-parts) APARTS="${2:?}"; shift ;;
	--availability-load) ALOAD="${2:?}"; shift ;;
	--eos-only) EONLY=1 AROUNDS=0 ;;
	--acks-only) KONLY=1 AROUNDS=0 ;;
	--reassign-mb) REASSIGN_MB="${2:?}"; shift ;;
	--reassign-throttle) REASSIGN_THROTTLE="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
[[ -x "$REPO/broker/mq-broker/mq-broker" ]] || command -v mq-broker >/dev/null ||
	mq_die "mq-broker is not built: run make first"

mq_bench_work repl
gcc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir)" -o "$WORK/failover" \
	"$HERE/failover.c" -L"$("$PG_CONFIG" --libdir)" -lpq

now_us() { date +%s%6N; }

# ---------------------------------------------------------------------------
ATABLE=""
if ((AROUNDS > 0)); then
	mq_phase "A: availability per fault kind, $AROUNDS round(s) each (test/bench/availability.pl)"
	ADIR="$WORK/availability"
	for part in $APARTS; do
		load=0
		[[ "$part" == *-loaded ]] && load="$ALOAD"
		mkdir -p "$ADIR/$part/tmp"
		if mq_is_root; then chown -R postgres:postgres "$ADIR"; fi
		mq_postgres_repo	# postgres reads the repo, or a copy of it
		if ! as_postgres env TESTDIR="$ADIR/$part" PG_REGRESS="$PG_REGRESS" TMPDIR="$ADIR/$part/tmp" \
			PERL5LIB="$PG_TAP_PERL:$MQ_PG_REPO/test/t" MQ_REPO_ROOT="$MQ_PG_REPO" MQ_BENCH_OUT="$ADIR/$part.tsv" \
			MQ_BENCH_ROUNDS="$AROUNDS" MQ_BENCH_PART="${part%-loaded}" MQ_BENCH_LOAD="$load" perl "$MQ_PG_REPO/test/bench/availability.pl" \
			>"$WORK/availability.log" 2>&1; then
			tail -n 40 "$WORK/availability.log"
			mq_die "the availability run failed"
		fi
		# each round's figures and the load average (the test's notes)
		grep -h 'round' "$ADIR/$part/tmp_check/log/regress_log_availability" || true
	done
	for part in $APARTS; do cat "$ADIR/$part.tsv"; done >"$ADIR/out.tsv"
	ATABLE="| fault | new leader named, ms (each) | failover, ms (each) | longest acknowledgement gap, ms (each) | worst gap, ms | after the last heal, ms (each; goal <= 6000) |
|---|---|---|---|---|---|"
	while IFS= read -r fault; do
		nm="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $4; sep = ", " }' "$ADIR/out.tsv")"
		fo="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $2; sep = ", " }' "$ADIR/out.tsv")"
		gap="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $3; sep = ", " }' "$ADIR/out.tsv")"
		worst="$(awk -F'\t' -v f="$fault" '$1 == f && $3 > m { m = $3 } END { print m + 0 }' "$ADIR/out.tsv")"
		ah="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $5; sep = ", " }' "$ADIR/out.tsv")"
		ATABLE+="
| $fault | $nm | $fo | $gap | $worst | $ah |"
	done < <(cut -f1 "$ADIR/out.tsv" | awk '!seen[$0]++')
	echo "$ATABLE"
fi
if [[ -n "$AONLY" ]]; then
	[[ -n "$OUT" ]] && printf '%s\n' "$ATABLE" >"$OUT"
	exit 0
fi

# ---------------------------------------------------------------------------
mq_phase "3 data nodes, a coordinator, 3 brokers"
CONF=("fsync = on" "synchronous_commit = on" "shared_buffers = 256MB" "max_wal_size = 4GB"
	"log_min_messages = warning" "max_prepared_transactions = 10" "track_functions = all")
bench_replicated "${CONF[@]}"
coord_sql "SELECT mq_coord.create_topic('bench', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null

leader() { coord_sql "SELECT coalesce(leader, -1) FROM mq_coord.partition WHERE topic = 'bench' AND partition = 0"; }
isr_size() { coord_sql "SELECT cardinality(isr) FROM mq_coord.partition WHERE topic = 'bench' AND partition = 0"; }
# wait_until CMD EXPECTED [SECONDS]
wait_until() {
	local i
	for ((i = 0; i < ${3:-60} * 10; i++)); do
		[[ "$($1 2>/dev/null || true)" == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}
# P's CPU figure.  sessions_ended: no client sessions on the nodes but
# the brokers' (their ended ones' CPU is in what the postmaster reaped);
# cpu_ticks: "GROUP PID TICKS" for every child of the three postmasters
# (GROUP node1..3), "nodeN reaped PM TICKS" for what each reaped, and the
# brokers' (GROUP brokers), from /proc/PID/stat
sessions_ended() {
	local i n=0
	for i in 1 2 3; do
		n=$((n + $(cluster_psql "node$i" -A -t -c "SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND application_name NOT LIKE 'mq-broker%'
			AND pid <> pg_backend_pid()")))
	done
	((n == 0)) && echo 1
}
# up to 10 s for the client sessions to end; one still there is said (its
# CPU would count in the next reading's "ended", not in this run's)
settle_sessions() {
	wait_until sessions_ended 1 10 || echo "note: client sessions still open after 10 s; the CPU figure may be off"
}
cpu_ticks() {
	local i pm c t
	for i in 1 2 3; do
		pm="$(head -1 "${MQ_CLUSTER_DIR[node$i]}/data/postmaster.pid")"
		t="$(mq_reaped_ticks "$pm")" || mq_die "node$i's postmaster is gone"
		echo "node$i reaped $t"
		for c in $(pgrep -P "$pm"); do
			t="$(mq_proc_ticks "$c")" && echo "node$i $c $t"	# one that ended meanwhile is reaped's
		done
	done
	for c in "${MQ_BROKER_PID[@]}"; do
		t="$(mq_proc_ticks "$c")" || mq_die "broker $c is gone"
		echo "brokers $c $t"
	done
}
# cpu_per_record RECORDS: ms of CPU per record between $WORK/cpu0 and
# $WORK/cpu1, per node and kind of process (the brokers' sessions by
# application_name, read after the run; the ended ones; the rest)
cpu_per_record() {
	local i
	for i in 1 2 3; do
		cluster_psql "node$i" -A -t -F ' ' -c "SELECT 'node$i', pid FROM pg_stat_activity
			WHERE application_name LIKE 'mq-broker%'"
	done >"$WORK/cpu.brokers"
	awk -v n="$1" -v hz="$(getconf CLK_TCK)" -v leader="node$L" '
		FILENAME ~ /cpu.brokers$/ { broker[$1 " " $2] = 1; next }
		FILENAME ~ /cpu0$/ { t0[$1 " " $2] = $3; next }
		{
			k = $1 " " $2
			d = $3 - t0[k]
			if ($1 == "brokers") kind = "brokers"
			else if ($2 == "reaped") kind = $1 " ended"
			else if (k in broker) kind = $1 " broker sessions"
			else kind = $1 " rest"
			cpu[kind] += d
		}
		END {
			if (n <= 0) { print "-"; exit }
			for (i = 1; i <= 3; i++) {
				g = "node" i
				printf "%s%s%s: broker sessions %.2f, ended %.2f, rest %.2f", sep, g, (g == leader ? " (leader)" : ""),
					cpu[g " broker sessions"] * 1000 / hz / n, cpu[g " ended"] * 1000 / hz / n, cpu[g " rest"] * 1000 / hz / n
				sep = "; "
			}
			for (k in cpu) all += cpu[k]
			printf "; brokers %.2f; all %.2f\n", cpu["brokers"] * 1000 / hz / n, all * 1000 / hz / n
		}' "$WORK/cpu.brokers" "$WORK/cpu0" "$WORK/cpu1"
}
# every node's log end and high watermark equal (replication caught up)
converged() {
	local i out=()
	for i in 1 2 3; do
		out+=("$(cluster_psql "node$i" -A -t -c "SELECT log_end_offset || '/' || high_watermark \
			FROM mq.replica_status WHERE topic = 'bench' AND partition = 0" 2>/dev/null || echo x)")
	done
	if [[ "${out[0]}" == "${out[1]}" && "${out[0]}" == "${out[2]}" && "${out[0]}" =~ ^([0-9]+)/([0-9]+)$ &&
		"${BASH_REMATCH[1]}" == "${BASH_REMATCH[2]}" ]]; then
		echo yes
	fi
}
wait_until isr_size 3 || mq_die "the ISR never reached 3"
led() { [[ "$(leader)" -gt 0 ]] && echo yes; }
wait_until led yes || mq_die "no leader was elected"
L="$(leader)"
echo "leader of bench/0: broker $L (node$L)"

# ---------------------------------------------------------------------------
if [[ -z "$EONLY" ]]; then
mq_phase "T: throughput, acks=1 vs acks=all (batches of 1,000 x 100 B)"
cluster_psql "node$L" <<'SQL'
CREATE TABLE bench_payload AS
SELECT array_agg(convert_to(lpad(i::text, 100, 'x'), 'UTF8')) AS vals FROM generate_series(1, 1000) i;
CREATE FUNCTION bench_vals() RETURNS bytea[] LANGUAGE sql STABLE AS 'SELECT vals FROM bench_payload';
SQL
VARIANTS="1 all all-split all-serial"
# acks_scripts PREFIX VALS: the acks variants' pgbench scripts (see T above)
acks_scripts() {
	local pre="$1" vals="$2" acks
	for acks in 1 all; do
		echo "CALL mq.produce('bench', NULL, $vals, 0, '$acks');" >"$WORK/${pre}_$acks.sql"
	done
	for acks in all-split all-serial; do
		{
			echo "BEGIN;"
			echo "SELECT max(msg_offset) AS last, max(await_epoch) AS e, max(await_min_isr) AS m FROM mq.produce_records('bench', NULL, $vals, partition => 0, acks => 'all') \\gset"
			[[ "$acks" == all-serial ]] && echo "SET LOCAL synchronous_commit = local;"
			echo "COMMIT;"
			echo "SELECT mq.produce_await('bench', 0, :last, :e, :m);"
		} >"$WORK/${pre}_$acks.sql"
	done
}
acks_scripts acks "bench_vals()"
# wal_total: WAL written so far, summed over the three nodes, in bytes
wal_total() {
	local i t=0
	for i in 1 2 3; do
		t=$((t + $(cluster_psql "node$i" -A -t -c "SELECT pg_current_wal_lsn() - '0/0'")))
	done
	echo "$t"
}
declare -A RES=()
for c in $CLIENTS; do
	for ((r = 1; r <= RUNS; r++)); do
		line="clients $c, run $r:"
		for acks in $VARIANTS; do
			wait_until converged yes 120 || mq_die "replicas did not converge"
			w0="$(wal_total)"
			out="$("$PGBENCH" -n -M simple -c "$c" -j "$c" -T "$DURATION" -f "$WORK/acks_$acks.sql" \
				-d "$(cluster_conninfo "node$L")" 2>&1)"
			tps="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")"
			n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")"
			[[ -n "$tps" && -n "$n" && "$n" -gt 0 ]] || mq_die "pgbench failed (acks=$acks, $c clients): $out"
			wait_until converged yes 120 || mq_die "replicas did not converge"
			w1="$(wal_total)"
			rps="$(awk -v t="$tps" 'BEGIN { printf "%.0f", t * 1000 }')"
			echo "$rps" >>"$WORK/t.$c.$acks"
			awk -v a="$w0" -v b="$w1" -v n="$n" 'BEGIN { printf "%.0f\n", (b - a) / (n * 1000) }' >>"$WORK/w.$c.$acks"
			line+=" acks=$acks $rps records/s $(tail -1 "$WORK/w.$c.$acks") WAL B/record;"
		done
		echo "$line"
	done
	for acks in $VARIANTS; do
		RES[$c,$acks]="$(mq_median <"$WORK/t.$c.$acks")"
		RES[$c,$acks,wal]="$(mq_median <"$WORK/w.$c.$acks")"
		RES[$c,$acks,ratio]="$(mq_ratio "${RES[$c,$acks]}" "${RES[$c,1]}")"
	done
	RES[$c,ratio]="${RES[$c,all,ratio]}"
	echo "clients $c: median acks=1 ${RES[$c,1]} records/s, acks=all ${RES[$c,all]} records/s, ratio all/1 ${RES[$c,ratio]} (goal >= 0.8);" \
		"all-split ${RES[$c,all-split,ratio]}, all-serial (the old path) ${RES[$c,all-serial,ratio]};" \
		"WAL B/record: 1 ${RES[$c,1,wal]}, all ${RES[$c,all,wal]}, all-split ${RES[$c,all-split,wal]}, all-serial ${RES[$c,all-serial,wal]}"
done

# ---------------------------------------------------------------------------
mq_phase "L: single-record produce latency, acks=1 vs acks=all (1 client, one CALL per record)"
declare -A LAT=()
acks_scripts one "ARRAY['x']::bytea[]"
for ((r = 1; r <= RUNS; r++)); do
	for acks in $VARIANTS; do
		wait_until converged yes 120 || mq_die "replicas did not converge"
		(cd "$WORK" && "$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$WORK/one_$acks.sql" \
			--log --log-prefix="lat_${acks}_$r" -d "$(cluster_conninfo "node$L")" >/dev/null 2>&1) ||
			mq_die "pgbench failed (latency, acks=$acks)"
	done
done
# pgbench's per-transaction log: the third field is the latency in us
pct() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; printf "%.2f", a[i]/1000}'; }
for acks in $VARIANTS; do
	cat "$WORK"/lat_"${acks}"_* | awk '{print $3}' >"$WORK/lat.$acks"
	LAT[$acks,n]="$(wc -l <"$WORK/lat.$acks")"
	LAT[$acks,50]="$(pct 50 <"$WORK/lat.$acks")"
	LAT[$acks,99]="$(pct 99 <"$WORK/lat.$acks")"
	echo "acks=$acks: ${LAT[$acks,n]} records, latency p50 ${LAT[$acks,50]} ms, p99 ${LAT[$acks,99]} ms"
done
for acks in $VARIANTS; do
	LAT[$acks,r50]="$(mq_ratio "${LAT[$acks,50]}" "${LAT[1,50]}")"
	LAT[$acks,r99]="$(mq_ratio "${LAT[$acks,99]}" "${LAT[1,99]}")"
done
echo "latency against acks=1: all p50 ${LAT[all,r50]}x p99 ${LAT[all,r99]}x (goal <= 2x, <= 3x);" \
	"all-split ${LAT[all-split,r50]}x ${LAT[all-split,r99]}x; all-serial ${LAT[all-serial,r50]}x ${LAT[all-serial,r99]}x"
if [[ -n "$KONLY" ]]; then
	# P: where a single-record acks=all write spends its time in the servers
	# (pg_stat_user_functions over one more run: calls, mean ms per call
	# with and without the functions it calls)
	mq_phase "P: single-record acks=all, time per call in the servers"
	declare -A PCPU=()
	for acks in 1 all; do
		# the function statistics are acks=all's alone
		if [[ "$acks" == all ]]; then
			for i in 1 2 3; do cluster_psql "node$i" -A -t -c "SELECT pg_stat_reset()" >/dev/null; done
		fi
		settle_sessions
		cpu_ticks >"$WORK/cpu0"
		"$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$WORK/one_$acks.sql" -d "$(cluster_conninfo "node$L")" >"$WORK/p.out" 2>&1
		settle_sessions
		cpu_ticks >"$WORK/cpu1"
		echo "acks=$acks: $(grep -E '^(number of transactions actually|latency average)' "$WORK/p.out" | tr '\n' ' ')"
		PCPU[$acks]="$(cpu_per_record "$(awk '/^number of transactions actually processed/ { print $NF }' "$WORK/p.out")")"
		echo "server CPU per acks=$acks record, ms: ${PCPU[$acks]}"
	done
	PCPU[ratio]="$(mq_ratio "${PCPU[all]##*all }" "${PCPU[1]##*all }")"
	echo "server CPU per record, acks=all against acks=1 (its followers replicating behind it): ${PCPU[ratio]}x"
	for i in 1 2 3; do
		cluster_psql "node$i" -A -F ' ' -c "SELECT 'node$i', funcname, calls,
			round((total_time / calls)::numeric, 2) AS total_ms, round((self_time / calls)::numeric, 2) AS self_ms
			FROM pg_stat_user_functions WHERE schemaname = 'mq' AND calls > 0
			AND funcname IN ('produce', 'produce_records', 'produce_await', 'replica_fetch', 'replica_append',
			                 '_replica_advance_hwm', '_replica_durable_log_end', '_replica_wait_records')
			ORDER BY total_time DESC" | sed '$d'
	done
	ktable="| acks=all, replication.factor 3, min ISR 2, 1 partition; $RUNS x ${DURATION} s per figure | acks=1 | all | all-split | all-serial (old path) |
|---|---|---|---|---|"
	for c in $CLIENTS; do
		ktable+="
| 1,000 x 100 B batches, $c client(s), records/s | ${RES[$c,1]} | ${RES[$c,all]} (${RES[$c,all,ratio]}) | ${RES[$c,all-split]} (${RES[$c,all-split,ratio]}) | ${RES[$c,all-serial]} (${RES[$c,all-serial,ratio]}) |
| WAL bytes per record (3 nodes), $c client(s) | ${RES[$c,1,wal]} | ${RES[$c,all,wal]} | ${RES[$c,all-split,wal]} | ${RES[$c,all-serial,wal]} |"
	done
	ktable+="
| single record, p50 ms | ${LAT[1,50]} | ${LAT[all,50]} (${LAT[all,r50]}x) | ${LAT[all-split,50]} (${LAT[all-split,r50]}x) | ${LAT[all-serial,50]} (${LAT[all-serial,r50]}x) |
| single record, p99 ms | ${LAT[1,99]} | ${LAT[all,99]} (${LAT[all,r99]}x) | ${LAT[all-split,99]} (${LAT[all-split,r99]}x) | ${LAT[all-serial,99]} (${LAT[all-serial,r99]}x) |
| server CPU per record, ms (P; acks=1: the followers replicating behind it) | ${PCPU[1]} | ${PCPU[all]} (${PCPU[ratio]}x) | | |"
	echo "$ktable"
	[[ -n "$OUT" ]] && printf '%s\n' "$ktable" >"$OUT"
	exit 0
fi

fi # not --eos-only

# ---------------------------------------------------------------------------
mq_phase "E: exactly-once pipeline, 3-node cluster (mqctl pipeline) vs one node ($EOS_RECORDS records)"
RF3='{"replication.factor": 3, "min.insync.replicas": 2}'
coord_sql "SELECT mq_coord.create_topic('eos_in', 2, '$RF3')" >/dev/null
coord_sql "SELECT mq_coord.create_topic('eos_out', 3, '$RF3')" >/dev/null
eos_led() { coord_sql "SELECT count(*) FROM mq_coord.partition WHERE topic LIKE 'eos%' AND leader IS NOT NULL"; }
wait_until eos_led 5 || mq_die "no leaders for the eos topics"
PAYLOAD="(SELECT array_agg(convert_to(lpad(i::text, 100, 'x'), 'UTF8')) FROM generate_series(1, $((EOS_RECORDS / 2))) i)"
for i in 1 2 3; do
	cluster_psql "node$i" -q -c "CREATE TABLE eos_app (v bytea, part int, off bigint)"
done
for p in 0 1; do
	l="$(coord_sql "SELECT leader FROM mq_coord.partition WHERE topic = 'eos_in' AND partition = $p")"
	cluster_psql "node$l" -q -c "SELECT count(*) FROM mq.send_batch('eos_in', NULL, $PAYLOAD, partition => $p)"
done
# the pipeline reads below the high watermark: wait until it covers the input
eos_hwm() {
	local p l sum=0
	for p in 0 1; do
		l="$(coord_sql "SELECT leader FROM mq_coord.partition WHERE topic = 'eos_in' AND partition = $p")"
		sum=$((sum + $(cluster_psql "node$l" -A -t -c "SELECT high_watermark FROM mq.replica_status \
			WHERE topic = 'eos_in' AND partition = $p")))
	done
	echo "$sum"
}
wait_until eos_hwm "$EOS_RECORDS" 120 || mq_die "the eos input was not replicated"
cluster_psql node1 -q <<SQL
SELECT mq.create_topic('eos1_in', 2);
SELECT mq.create_topic('eos1_out', 3);
SELECT count(*) FROM mq.send_batch('eos1_in', NULL, $PAYLOAD, partition => 0);
SELECT count(*) FROM mq.send_batch('eos1_in', NULL, $PAYLOAD, partition => 1);
CREATE TABLE eos1_app (v bytea, part int, off bigint);
-- the pipeline's step as one local transaction: fetch from the committed
-- offset, application rows, send (null keys: partition p % 3), offset
CREATE PROCEDURE eos1_run(g text, batch int) LANGUAGE plpgsql AS \$\$
DECLARE
    ks bytea[]; vs bytea[]; offs bigint[]; busy boolean;
BEGIN
    LOOP
        busy := false;
        FOR p IN 0 .. 1 LOOP
            SELECT array_agg(key ORDER BY msg_offset), array_agg(value ORDER BY msg_offset),
                   array_agg(msg_offset ORDER BY msg_offset)
              INTO ks, vs, offs
              FROM mq.fetch('eos1_in', p, coalesce(mq.committed_offset(g, 'eos1_in', p), 0), batch);
            CONTINUE WHEN offs IS NULL;
            INSERT INTO eos1_app SELECT v, p, o FROM unnest(vs, offs) AS u(v, o);
            PERFORM mq.send_batch('eos1_out', ks, vs, NULL, p % 3);
            PERFORM mq.commit_offset(g, 'eos1_in', p, offs[cardinality(offs)] + 1);
            COMMIT;
            busy := true;
        END LOOP;
        EXIT WHEN NOT busy;
    END LOOP;
END \$\$;
SQL
MQCTL="${MQ_BENCH_MQCTL:-$REPO/broker/mqctl/mqctl}"
[[ -x "$MQCTL" ]] || MQCTL=mqctl
declare -A EOS=()
for ((r = 1; r <= RUNS; r++)); do
	wait_until isr_size 3 120 || mq_die "the ISR did not recover"
	t0="$(now_us)"
	"$MQCTL" -d "$(cluster_conninfo coord)" pipeline --input eos_in --output eos_out --group "g$r" \
		--batch-size 100 --no-follow --apply 'INSERT INTO eos_app VALUES ($2, $3, $4)' 2>"$WORK/eos.$r.log" ||
		mq_die "mqctl pipeline failed: $(tail -n 3 "$WORK/eos.$r.log")"
	t1="$(now_us)"
	cluster_psql node1 -q -c "CALL eos1_run('g$r', 100)"
	t2="$(now_us)"
	c_rps="$(awk -v n="$EOS_RECORDS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e6) }')"
	o_rps="$(awk -v n="$EOS_RECORDS" -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", n / ((b - a) / 1e6) }')"
	echo "$c_rps" >>"$WORK/e.cluster"
	echo "$o_rps" >>"$WORK/e.one"
	echo "run $r: cluster $c_rps records/s, one node $o_rps records/s"
done
EOS[cluster]="$(mq_median <"$WORK/e.cluster")"
EOS[one]="$(mq_median <"$WORK/e.one")"
EOS[ratio]="$(mq_ratio "${EOS[cluster]}" "${EOS[one]}")"
echo "exactly-once pipeline: cluster ${EOS[cluster]} records/s, one node ${EOS[one]} records/s, ratio ${EOS[ratio]}"
[[ -z "$EONLY" ]] || exit 0

# ---------------------------------------------------------------------------
mq_phase "F: failover, kill -9 of the leader's node -> first acks=all write acknowledged by the new leader"
FLOG="$WORK/failover.log"
"$WORK/failover" "$(cluster_conninfo coord)" bench 0 \
	1="$(cluster_conninfo node1)" 2="$(cluster_conninfo node2)" 3="$(cluster_conninfo node3)" \
	>"$FLOG" 2>&1 &
FPID=$!
MQ_CHILD_PIDS+=("$FPID")
acks_count() { grep -c '^ack' "$FLOG" || true; }
FO=()
for ((k = 1; k <= FAILOVERS; k++)); do
	wait_until isr_size 3 120 || mq_die "the ISR did not recover"
	before="$(acks_count)"
	sleep 2
	(($(acks_count) > before)) || mq_die "the failover client is not getting acknowledgements"
	L="$(leader)"
	data="${MQ_CLUSTER_DIR[node$L]}/data"
	pid="$(head -n 1 "$data/postmaster.pid")"
	t_kill="$(now_us)"
	kill -KILL "$pid"
	first=""
	for ((i = 0; i < 600; i++)); do
		first="$(awk -v t="$t_kill" -v old="$L" '$1 == "ack" && $2 > t && $3 != old { print $2, $3; exit }' "$FLOG")"
		[[ -n "$first" ]] && break
		sleep 0.05
	done
	[[ -n "$first" ]] || mq_die "no write acknowledged by a new leader within 30 s"
	ms="$(awk -v a="${first% *}" -v b="$t_kill" 'BEGIN { printf "%.0f", (a - b) / 1000 }')"
	elected="$(coord_sql "SELECT round(extract(epoch FROM at) * 1000 - $t_kill / 1000.0) FROM mq_coord.event \
		WHERE kind = 'leader_elected' AND topic = 'bench' ORDER BY event_id DESC LIMIT 1")"
	echo "failover $k: killed node$L; broker ${first#* } acknowledged the first write after $ms ms (elected after $elected ms)"
	FO+=("$ms")
	echo "$ms" >>"$WORK/f"
	cluster_kill9 "node$L"    # waits for the children to be gone
	cluster_restart "node$L"
done
kill "$FPID" 2>/dev/null || true
FO_MED="$(mq_median <"$WORK/f")"
echo "failover (ms): ${FO[*]}; median $FO_MED"

# ---------------------------------------------------------------------------
# R: reassignment throughput, without and with a throttle
bench_reassign() {
	local p ms
	cluster_start node4 "${CONF[@]}"
	cluster_psql node4 -c "CREATE EXTENSION mq"
	broker_start 4 node4 coord
	rb4() { coord_sql "SELECT count(*) FROM mq_coord.broker WHERE broker_id = 4"; }
	wait_until rb4 1 || mq_die "broker 4 did not register"
	# placement order 1,2,3,4: partition 0 on 1,2 and partition 1 on 2,3
	coord_sql "SELECT mq_coord.create_topic('rbench', 2, '{\"replication.factor\": 2}')" >/dev/null
	rled() { coord_sql "SELECT count(*) FROM mq_coord.partition WHERE topic = 'rbench' AND leader IS NOT NULL"; }
	wait_until rled 2 || mq_die "no leaders for rbench"
	for p in 0 1; do
		L="$(coord_sql "SELECT leader FROM mq_coord.partition WHERE topic = 'rbench' AND partition = $p")"
		cluster_psql "node$L" -q -c "DO \$\$ DECLARE v bytea[] := ARRAY(SELECT convert_to(lpad(i::text, 1000, 'x'), \
			'UTF8') FROM generate_series(1, 1000) i); o bigint; h bigint; BEGIN FOR k IN 1 .. $REASSIGN_MB LOOP \
			CALL mq.produce('rbench', NULL, v, $p, '1', base_offset => o, high_watermark => h); \
			END LOOP; END \$\$" >/dev/null
		RB_BYTES[$p]="$(cluster_psql "node$L" -A -t -c "SELECT sum(bytes) FROM mq.segments WHERE topic = 'rbench' AND partition = $p")"
	done
	# partition 0: replicas 1,2 -> 4,2 (its leader leaves); partition 1: 2,3 -> 2,4 throttled
	for p in 0 1; do
		if ((p == 0)); then
			coord_sql "SELECT mq_coord.reassign('rbench', 0, '{4,2}')" >/dev/null
		else
			coord_sql "SELECT mq_coord.reassign('rbench', 1, '{2,4}', $REASSIGN_THROTTLE)" >/dev/null
		fi
		rdone() { coord_sql "SELECT count(*) FROM mq_coord.event WHERE topic = 'rbench' AND partition = $p \
			AND kind = 'reassignment_completed'"; }
		wait_until rdone 1 600 || mq_die "the move of rbench/$p did not complete"
		ms="$(coord_sql "SELECT round(extract(epoch FROM max(at) FILTER (WHERE kind = 'reassignment_completed') \
			- max(at) FILTER (WHERE kind = 'reassignment_started')) * 1000) FROM mq_coord.event \
			WHERE topic = 'rbench' AND partition = $p")"
		RB_MS[$p]="$ms"
		RB_MBS[$p]="$(awk -v b="${RB_BYTES[$p]}" -v ms="$ms" 'BEGIN { printf "%.1f", b / 1e6 / (ms / 1000) }')"
		echo "rbench/$p: ${RB_BYTES[$p]} bytes moved in $ms ms: ${RB_MBS[$p]} MB/s"
	done
}
# R, the leader's side: two partitions led by broker 1 copied at once to
# brokers 3 and 4 under one throttle; their sum is the leader's outbound
bench_reassign_leader() {
	local p l n
	# placement order 1,2,3,4: partition 0 on 1,2 and partition 1 on 2,3
	coord_sql "SELECT mq_coord.create_topic('rlead', 2, '{\"replication.factor\": 2}')" >/dev/null
	lled() { coord_sql "SELECT count(*) FROM mq_coord.partition WHERE topic = 'rlead' AND leader IS NOT NULL"; }
	wait_until lled 2 || mq_die "no leaders for rlead"
	# partition 1, still empty, to 1,3: broker 1 (preferred) leads both
	coord_sql "SELECT mq_coord.reassign('rlead', 1, '{1,3}')" >/dev/null
	lone() { coord_sql "SELECT count(*) FROM mq_coord.partition WHERE topic = 'rlead' AND leader = 1 \
		AND target_replicas IS NULL AND cardinality(isr) = 2"; }
	wait_until lone 2 120 || mq_die "broker 1 does not lead both partitions of rlead"
	for p in 0 1; do
		cluster_psql node1 -q -c "DO \$\$ DECLARE v bytea[] := ARRAY(SELECT convert_to(lpad(i::text, 1000, 'x'), \
			'UTF8') FROM generate_series(1, 1000) i); o bigint; h bigint; BEGIN FOR k IN 1 .. $REASSIGN_MB LOOP \
			CALL mq.produce('rlead', NULL, v, $p, '1', base_offset => o, high_watermark => h); \
			END LOOP; END \$\$" >/dev/null
		RL_BYTES[$p]="$(cluster_psql node1 -A -t -c "SELECT sum(bytes) FROM mq.segments WHERE topic = 'rlead' AND partition = $p")"
	done
	# both at once: partition 0 1,2 -> 1,3 (copy to 3), partition 1 1,3 -> 1,4 (copy to 4)
	coord_sql "SELECT mq_coord.reassign('rlead', 0, '{1,3}', $REASSIGN_THROTTLE), \
		mq_coord.reassign('rlead', 1, '{1,4}', $REASSIGN_THROTTLE)" >/dev/null
	ldone() { coord_sql "SELECT count(*) FROM mq_coord.partition WHERE topic = 'rlead' AND target_replicas IS NULL \
		AND ((partition = 0 AND replicas = '{1,3}') OR (partition = 1 AND replicas = '{1,4}'))"; }
	wait_until ldone 2 900 || mq_die "the moves of rlead did not complete"
	# from the throttled start to each completion
	for p in 0 1; do
		RL_MS[$p]="$(coord_sql "SELECT round(extract(epoch FROM max(at) FILTER (WHERE kind = 'reassignment_completed') \
			- max(at) FILTER (WHERE kind = 'reassignment_started')) * 1000) FROM mq_coord.event \
			WHERE topic = 'rlead' AND partition = $p")"
		RL_RATE[$p]="$(awk -v b="${RL_BYTES[$p]}" -v ms="${RL_MS[$p]}" 'BEGIN { printf "%.0f", b / (ms / 1000) }')"
	done
	RL_MS[all]="$(coord_sql "SELECT round(extract(epoch FROM max(at) FILTER (WHERE kind = 'reassignment_completed') \
		- min(at) FILTER (WHERE kind = 'reassignment_started' AND detail->>'throttle_bytes' IS NOT NULL)) * 1000) \
		FROM mq_coord.event WHERE topic = 'rlead'")"
	RL_BYTES[all]=$((${RL_BYTES[0]} + ${RL_BYTES[1]}))
	RL_RATE[all]="$(awk -v b="${RL_BYTES[all]}" -v ms="${RL_MS[all]}" 'BEGIN { printf "%.0f", b / (ms / 1000) }')"
	RL_RATIO="$(awk -v r="${RL_RATE[all]}" -v t="$REASSIGN_THROTTLE" 'BEGIN { printf "%.2f", r / t }')"
	for p in 0 1; do
		echo "rlead/$p: ${RL_BYTES[$p]} bytes copied in ${RL_MS[$p]} ms: ${RL_RATE[$p]} bytes/s"
	done
	for n in 3 4; do
		l="$(grep -h 'rlead.*copying at most' "${MQ_CLUSTER_DIR[node$n]}/broker.log" | tail -n 1 || true)"
		echo "broker $n: ${l:-no share logged}"
	done
	echo "leader broker 1, two copies at once: ${RL_BYTES[all]} bytes in ${RL_MS[all]} ms: ${RL_RATE[all]} bytes/s" \
		"against the throttle of $REASSIGN_THROTTLE (${RL_RATIO}x)"
}
declare -A RB_BYTES RB_MS RB_MBS RL_BYTES RL_MS RL_RATE
RL_RATIO=""
mq_phase "R: reassignment throughput, unthrottled and throttled to $REASSIGN_THROTTLE bytes/s"
bench_reassign
mq_phase "R: the leader's side, two copies from one leader at once, throttled to $REASSIGN_THROTTLE bytes/s"
bench_reassign_leader

# ---------------------------------------------------------------------------
mq_phase "results"
table="| figure | acks=1 | acks=all | ratio all/1 | goal |
|---|---|---|---|---|"
for c in $CLIENTS; do
	table+="
| produce, 1,000 x 100 B batches, $c client(s), records/s (median of $RUNS x ${DURATION} s) | ${RES[$c,1]} | ${RES[$c,all]} | ${RES[$c,ratio]} | >= 0.8 |"
done
table+="

| single-record produce latency, 1 client (all runs pooled) | acks=1 | acks=all | Kafka's published end-to-end |
|---|---|---|---|
| p50, ms | ${LAT[1,50]} | ${LAT[all,50]} | 2 |
| p99, ms | ${LAT[1,99]} | ${LAT[all,99]} | 3 |"
table+="

| exactly-once pipeline, $EOS_RECORDS x 100 B records, steps of 100, records/s (median of $RUNS) | 3-node cluster (mqctl pipeline) | one node (one transaction per step) | ratio cluster/one |
|---|---|---|---|
| records/s | ${EOS[cluster]} | ${EOS[one]} | ${EOS[ratio]} |"
table+="

| failover: kill -9 of the leader's node -> first acks=all write acknowledged by the new leader | each | median |
|---|---|---|
| ms | ${FO[*]} | $FO_MED |"
table+="

| reassignment: one replica moved onto a new broker, ${REASSIGN_MB} MB of 1,000 B records | bytes | ms | MB/s |
|---|---|---|---|
| no throttle | ${RB_BYTES[0]} | ${RB_MS[0]} | ${RB_MBS[0]} |
| throttle $REASSIGN_THROTTLE bytes/s | ${RB_BYTES[1]} | ${RB_MS[1]} | ${RB_MBS[1]} |

| the leader's side: two partitions led by broker 1 copied at once, throttle $REASSIGN_THROTTLE bytes/s | bytes | ms | bytes/s | / throttle |
|---|---|---|---|---|
| partition 0, copy to broker 3 | ${RL_BYTES[0]} | ${RL_MS[0]} | ${RL_RATE[0]} | |
| partition 1, copy to broker 4 | ${RL_BYTES[1]} | ${RL_MS[1]} | ${RL_RATE[1]} | |
| leader broker 1's outbound, both | ${RL_BYTES[all]} | ${RL_MS[all]} | ${RL_RATE[all]} | $RL_RATIO |"
[[ -n "$ATABLE" ]] && table+="

$ATABLE"
echo "$table"
if [[ -n "$OUT" ]]; then
	printf '%s\n' "$table" >"$OUT"
	echo "written to $OUT"
fi
