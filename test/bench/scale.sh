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
# Records/s per point (median of --runs alternating runs of --duration s),
# and mq/plain.  Timing on a shared machine is noisy: compare ratios, each
# from one run.  Not a test: it prints figures (with --out FILE also a
# markdown table) and never fails on them.  Uses the INSTALLED extension.
#
# Usage: test/bench/scale.sh [--duration S] [--runs N] [--out FILE]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

DURATION=5 RUNS=3 OUT=""
while (($#)); do
	case "$1" in
	--duration) DURATION="${2:?}"; shift ;;
	--runs) RUNS="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	*) mq_die "unknown option $1 (usage: $0 [--duration S] [--runs N] [--out FILE])" ;;
	esac
	shift
done

mq_bench_work scale

mq_phase "a throwaway cluster (fsync on)"
cluster_start scale "fsync = on" "synchronous_commit = on" "shared_buffers = 256MB" \
	"max_wal_size = 4GB" "log_min_messages = warning" "max_connections = 64"
sql() { cluster_psql scale -q -A -t -c "$1" >/dev/null; }
sql "CREATE EXTENSION mq"
# the baseline: a plain table per partition with the log's columns
sql "CREATE FUNCTION plain_table(t text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('CREATE TABLE %I (msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
                                     key bytea, value bytea, headers jsonb)', t);
    EXECUTE format('CREATE SEQUENCE %I', t || '_seq');
    EXECUTE format('CREATE UNIQUE INDEX ON %I (msg_offset)', t);
END \$\$"
# run FILE CLIENTS: records/s of one pgbench run
run() {
	local tps
	tps="$("$PGBENCH" -n -M simple -c "$2" -j "$2" -T "$DURATION" -f "$1" \
		-d "$(cluster_conninfo scale)" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')"
	[[ -n "$tps" ]] || mq_die "pgbench failed: $1"
	printf '%.0f' "$tps"
}
# point NAME CLIENTS MQ_FILE PLAIN_FILE: median records/s of each, and the ratio
declare -A R=()
point() {
	local name="$1" c="$2" r
	for ((r = 1; r <= RUNS; r++)); do
		run "$3" "$c" >>"$WORK/$name.mq"; echo >>"$WORK/$name.mq"
		run "$4" "$c" >>"$WORK/$name.plain"; echo >>"$WORK/$name.plain"
	done
	R[$name,mq]="$(mq_median <"$WORK/$name.mq")"
	R[$name,plain]="$(mq_median <"$WORK/$name.plain")"
	R[$name,ratio]="$(awk -v a="${R[$name,mq]}" -v b="${R[$name,plain]}" 'BEGIN { printf "%.2f", a / b }')"
	echo "$name: mq ${R[$name,mq]} records/s, plain ${R[$name,plain]}, ratio ${R[$name,ratio]}"
}

mq_phase "P: 4 clients, single records to a random partition of N"
for n in 1 4 16 64 256; do
	sql "SELECT mq.create_topic('p$n', $n)"
	sql "SELECT plain_table('p${n}_' || i) FROM generate_series(0, $n - 1) i"
	printf '\\set p random(0, %d)\nSELECT mq.send(%s, NULL::bytea, %s::bytea, partition => :p);\n' \
		$((n - 1)) "'p$n'" "'x'" >"$WORK/p$n.mq.sql"
	printf "\\set p random(0, %d)\nINSERT INTO p%d_:p (msg_offset, value) VALUES (nextval('p%d_' || :p || '_seq'), 'x');\n" \
		$((n - 1)) "$n" "$n" >"$WORK/p$n.plain.sql"
	point "P$n" 4 "$WORK/p$n.mq.sql" "$WORK/p$n.plain.sql"
done

mq_phase "C: N clients, each to its own partition of 16"
sql "SELECT mq.create_topic('c16', 16)"
sql "SELECT plain_table('c16_' || i) FROM generate_series(0, 15) i"
printf "SELECT mq.send('c16', NULL::bytea, 'x'::bytea, partition => :client_id %% 16);\n" >"$WORK/c.mq.sql"
printf "\\set p :client_id %% 16\nINSERT INTO c16_:p (msg_offset, value) VALUES (nextval('c16_' || :p || '_seq'), 'x');\n" >"$WORK/c.plain.sql"
for c in 1 2 4 8 16; do
	point "C$c" "$c" "$WORK/c.mq.sql" "$WORK/c.plain.sql"
done

mq_phase "S: 1 client, single records of growing size"
sql "SELECT mq.create_topic('s', 1, '{\"max.message.bytes\": 2000000}')"
sql "SELECT plain_table('s0')"
sql "CREATE TABLE payload (size int PRIMARY KEY, v bytea)"
for size in 10 100 1024 10240 102400 1048576; do
	# random bytes: a repeated character would compress to nothing in TOAST
	sql "INSERT INTO payload SELECT $size, substr(decode(string_agg(md5(random()::text), ''), 'hex'), 1, $size)
	       FROM generate_series(1, ($size + 15) / 16)"
	printf "SELECT mq.send('s', NULL::bytea, v) FROM payload WHERE size = %d;\n" "$size" >"$WORK/s$size.mq.sql"
	printf "INSERT INTO s0 (msg_offset, value) SELECT nextval('s0_seq'), v FROM payload WHERE size = %d;\n" "$size" >"$WORK/s$size.plain.sql"
	point "S$size" 1 "$WORK/s$size.mq.sql" "$WORK/s$size.plain.sql"
done

mq_phase "results"
table="| curve | point | mq records/s | plain records/s | mq/plain |
|---|---|---|---|---|"
for n in 1 4 16 64 256; do table+="
| P: 4 clients, random partition | $n partitions | ${R[P$n,mq]} | ${R[P$n,plain]} | ${R[P$n,ratio]} |"; done
for c in 1 2 4 8 16; do table+="
| C: own partition of 16 | $c clients | ${R[C$c,mq]} | ${R[C$c,plain]} | ${R[C$c,ratio]} |"; done
for size in 10 100 1024 10240 102400 1048576; do table+="
| S: 1 client | $size B records | ${R[S$size,mq]} | ${R[S$size,plain]} | ${R[S$size,ratio]} |"; done
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
