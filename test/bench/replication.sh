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
#      Printed: records/s of each and the ratio all/1 (goal >= 0.6).
#   L  single-record produce latency: one CALL mq.produce of one record per
#      transaction from 1 client, acks=1 vs acks=all, --runs runs of
#      --duration s each alternating; p50 and p99 over all of them, beside
#      Kafka's published end-to-end 2 ms / 3 ms (same machine, fsync on).
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
#
# Servers: PostgreSQL 15 as the postgres user in temp dirs on 127.0.0.1,
# shared_preload_libraries = 'mq', fsync = on, synchronous_commit = on;
# brokers with default settings.  Everything is stopped and removed at
# exit (scripts/lib.sh).  It uses the INSTALLED extension and the built
# broker: run `make && make install` first (this script never runs make).
#
# Usage: test/bench/replication.sh [--duration S] [--runs N] [--clients "1 4"]
#                                  [--failovers N] [--out FILE]
#                                  [--availability N] [--availability-only]
#   --duration S   seconds per pgbench run (default 10)
#   --runs N       runs per figure and side (default 3; the median is kept)
#   --clients L    client counts for T (default "1 4")
#   --failovers N  failovers measured in F (default 3)
#   --out FILE     also write the results as a markdown table to FILE
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

DURATION=10 RUNS=3 CLIENTS="1 4" FAILOVERS=3 OUT="" AROUNDS=1 AONLY=""
while (($#)); do
	case "$1" in
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--clients) CLIENTS="${2:?}"; shift ;;
	--failovers) FAILOVERS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--availability) AROUNDS="${2:?}"; shift ;;
	--availability-only) AONLY=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
[[ -x "$REPO/broker/mq-broker/mq-broker" ]] || command -v mq-broker >/dev/null ||
	mq_die "mq-broker is not built: run make first"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-repl.XXXXXX")"
chmod 755 "$WORK"
mq_on_exit "rm -rf '$WORK'"
gcc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir)" -o "$WORK/failover" \
	"$HERE/failover.c" -L"$("$PG_CONFIG" --libdir)" -lpq

now_us() { date +%s%6N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ---------------------------------------------------------------------------
ATABLE=""
if ((AROUNDS > 0)); then
	mq_phase "A: availability per fault kind, $AROUNDS round(s) each (test/bench/availability.pl)"
	ADIR="$WORK/availability"
	for part in main cut; do
		mkdir -p "$ADIR/$part/tmp"
		if mq_is_root; then chown -R postgres:postgres "$ADIR"; fi
		if ! as_postgres env TESTDIR="$ADIR/$part" PG_REGRESS="$PG_REGRESS" TMPDIR="$ADIR/$part/tmp" \
			PERL5LIB="$PG_TAP_PERL:$REPO/test/t" MQ_REPO_ROOT="$REPO" MQ_BENCH_OUT="$ADIR/$part.tsv" \
			MQ_BENCH_ROUNDS="$AROUNDS" MQ_BENCH_PART="$part" perl "$HERE/availability.pl" \
			>"$WORK/availability.log" 2>&1; then
			tail -n 40 "$WORK/availability.log"
			mq_die "the availability run failed"
		fi
		grep -h '^\[' "$WORK/availability.log" | grep 'round' || true
	done
	cat "$ADIR/main.tsv" "$ADIR/cut.tsv" >"$ADIR/out.tsv"
	ATABLE="| fault | failover, ms (each) | longest acknowledgement gap, ms (each) | worst gap, ms |
|---|---|---|---|"
	while IFS= read -r fault; do
		fo="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $2; sep = ", " }' "$ADIR/out.tsv")"
		gap="$(awk -F'\t' -v f="$fault" '$1 == f { printf "%s%s", sep, $3; sep = ", " }' "$ADIR/out.tsv")"
		worst="$(awk -F'\t' -v f="$fault" '$1 == f && $3 > m { m = $3 } END { print m + 0 }' "$ADIR/out.tsv")"
		ATABLE+="
| $fault | $fo | $gap | $worst |"
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
	"log_min_messages = warning")
for n in node1 node2 node3 coord; do
	cluster_start "$n" "${CONF[@]}"
	cluster_psql "$n" -c "CREATE EXTENSION mq"
done
for i in 1 2 3; do
	broker_start "$i" "node$i" coord
done
coord_sql() { cluster_psql coord -A -t -c "$1"; }
for ((i = 0; i < 300; i++)); do
	[[ "$(coord_sql 'SELECT count(*) FROM mq_coord.broker')" == 3 ]] && break
	sleep 0.1
done
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
mq_phase "T: throughput, acks=1 vs acks=all (batches of 1,000 x 100 B)"
cluster_psql "node$L" <<'SQL'
CREATE TABLE bench_payload AS
SELECT array_agg(convert_to(lpad(i::text, 100, 'x'), 'UTF8')) AS vals FROM generate_series(1, 1000) i;
CREATE FUNCTION bench_vals() RETURNS bytea[] LANGUAGE sql STABLE AS 'SELECT vals FROM bench_payload';
SQL
for acks in 1 all; do
	echo "CALL mq.produce('bench', NULL, bench_vals(), 0, '$acks');" >"$WORK/acks_$acks.sql"
done
declare -A RES=()
for c in $CLIENTS; do
	for ((r = 1; r <= RUNS; r++)); do
		line="clients $c, run $r:"
		for acks in 1 all; do
			wait_until converged yes 120 || mq_die "replicas did not converge"
			tps="$("$PGBENCH" -n -M simple -c "$c" -j "$c" -T "$DURATION" -f "$WORK/acks_$acks.sql" \
				-d "$(cluster_conninfo "node$L")" 2>&1 |
				sed -n 's/^tps = \([0-9.]*\) .*/\1/p')"
			[[ -n "$tps" ]] || mq_die "pgbench failed (acks=$acks, $c clients)"
			rps="$(awk -v t="$tps" 'BEGIN { printf "%.0f", t * 1000 }')"
			echo "$rps" >>"$WORK/t.$c.$acks"
			line+=" acks=$acks $rps records/s;"
		done
		echo "$line"
	done
	for acks in 1 all; do
		RES[$c,$acks]="$(median <"$WORK/t.$c.$acks")"
	done
	RES[$c,ratio]="$(awk -v a="${RES[$c,all]}" -v b="${RES[$c,1]}" 'BEGIN { printf "%.2f", a / b }')"
	echo "clients $c: median acks=1 ${RES[$c,1]} records/s, acks=all ${RES[$c,all]} records/s, ratio all/1 ${RES[$c,ratio]} (goal >= 0.6)"
done

# ---------------------------------------------------------------------------
mq_phase "L: single-record produce latency, acks=1 vs acks=all (1 client, one CALL per record)"
declare -A LAT=()
for acks in 1 all; do
	echo "CALL mq.produce('bench', NULL, ARRAY['x']::bytea[], 0, '$acks');" >"$WORK/one_$acks.sql"
done
for ((r = 1; r <= RUNS; r++)); do
	for acks in 1 all; do
		wait_until converged yes 120 || mq_die "replicas did not converge"
		(cd "$WORK" && "$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$WORK/one_$acks.sql" \
			--log --log-prefix="lat_${acks}_$r" -d "$(cluster_conninfo "node$L")" >/dev/null 2>&1) ||
			mq_die "pgbench failed (latency, acks=$acks)"
	done
done
# pgbench's per-transaction log: the third field is the latency in us
pct() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; printf "%.2f", a[i]/1000}'; }
for acks in 1 all; do
	cat "$WORK"/lat_"${acks}"_* | awk '{print $3}' >"$WORK/lat.$acks"
	LAT[$acks,n]="$(wc -l <"$WORK/lat.$acks")"
	LAT[$acks,50]="$(pct 50 <"$WORK/lat.$acks")"
	LAT[$acks,99]="$(pct 99 <"$WORK/lat.$acks")"
	echo "acks=$acks: ${LAT[$acks,n]} records, latency p50 ${LAT[$acks,50]} ms, p99 ${LAT[$acks,99]} ms"
done

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
FO_MED="$(median <"$WORK/f")"
echo "failover (ms): ${FO[*]}; median $FO_MED"

# ---------------------------------------------------------------------------
mq_phase "results"
table="| figure | acks=1 | acks=all | ratio all/1 | goal |
|---|---|---|---|---|"
for c in $CLIENTS; do
	table+="
| produce, 1,000 x 100 B batches, $c client(s), records/s (median of $RUNS x ${DURATION} s) | ${RES[$c,1]} | ${RES[$c,all]} | ${RES[$c,ratio]} | >= 0.6 |"
done
table+="

| single-record produce latency, 1 client (all runs pooled) | acks=1 | acks=all | Kafka's published end-to-end |
|---|---|---|---|
| p50, ms | ${LAT[1,50]} | ${LAT[all,50]} | 2 |
| p99, ms | ${LAT[1,99]} | ${LAT[all,99]} | 3 |"
table+="

| failover: kill -9 of the leader's node -> first acks=all write acknowledged by the new leader | each | median |
|---|---|---|
| ms | ${FO[*]} | $FO_MED |"
[[ -n "$ATABLE" ]] && table+="

$ATABLE"
echo "$table"
if [[ -n "$OUT" ]]; then
	printf '%s\n' "$table" >"$OUT"
	echo "written to $OUT"
fi
