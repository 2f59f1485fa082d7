#!/usr/bin/env bash
# Core benchmark of the mq extension against raw PostgreSQL doing the same
# work on a plain table, measured in ONE run on ONE throwaway cluster.
#
# Figures (each a median of --runs runs; mq and baseline runs alternate):
#   A  batch produce, 1,000 x 100 B records per transaction (1 client):
#      mq.send_batch vs COPY FROM a file of the same rows, and vs
#      INSERT ... SELECT unnest(array); records/s, target mq/baseline >= 0.9
#   B  single-record produce, one per transaction: mq.send vs INSERT with a
#      sequence for the offset; 1 client, 4 clients on a 1-partition topic
#      and 4 clients on a 4-partition topic (partition = client_id % 4);
#      records/s, target >= 0.9
#   C  sequential fetch of a 1,000,000-record partition in 1,000-record pages:
#      mq.fetch vs an offset-range index scan on the plain table, as count(*)
#      in the server and as rows returned to the client; records/s,
#      target >= 0.8 (warm caches, both tables VACUUM ANALYZEd).  The
#      count(*) baseline is planned as an Index Only Scan; C1h adds a
#      baseline that reads the rows (count(value)).  C1f and C2f are C1h
#      and C2 with mq.enable_fetch_scan = off: mq.fetch as the function
#      scan that materializes its records (the path before the streaming
#      scan), for comparison in the same run; they have no target.
#   D  fetch of the last 1,000 records (and at the exact end) of a 10M-record
#      partition vs a 10k-record one; us per fetch, target 10M/10k <= 1.5
# Also printed: each run in order with side-by-side ratios (the machine is
# noisy), and WAL bytes per record for A and B (deterministic: shows whether
# mq writes more than the baseline).
#
# The server: PostgreSQL 15 as the postgres user, temp dir, free port on
# 127.0.0.1, shared_preload_libraries = 'mq', fsync = on,
# synchronous_commit = on, shared_buffers raised; always stopped and removed
# at exit (scripts/lib.sh trap).  It uses the INSTALLED extension: build and
# install it first (this script never runs make).
#
# Usage: test/bench/core.sh [--quick] [--tiny] [--scale F] [--duration S]
#                           [--runs N] [--out FILE]
#   --quick       D uses 1,000,000 records instead of 10,000,000
#   --tiny        smoke test of the script itself: small sizes, 2 s runs
#   --scale F     multiply record counts of C and D by F (e.g. 0.1)
#   --duration S  seconds per pgbench measurement (default 10)
#   --runs N      runs per figure and side (default 3; the median is kept)
#   --out FILE    also write the results as a markdown table to FILE
# Environment overrides: BENCH_C_RECORDS, BENCH_D_BIG, BENCH_D_SMALL,
#   BENCH_D_FETCHES (pgbench -t for D), BENCH_DURATION, BENCH_RUNS,
#   BENCH_SHARED_BUFFERS (default 2GB), BENCH_VALUE_BYTES (default 100).
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"
[[ -x "$PGBENCH" ]] || mq_die "pgbench not found in $PG_BINDIR"

# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------
ARGS="$*"
QUICK="" TINY="" SCALE=1 OUT=""
DURATION="${BENCH_DURATION:-}"
RUNS="${BENCH_RUNS:-3}"
while (($#)); do
	case "$1" in
	--quick) QUICK=1 ;;
	--tiny) TINY=1 ;;
	--scale) SCALE="${2:?--scale F}"; shift ;;
	--duration) DURATION="${2:?--duration SECONDS}"; shift ;;
	--runs) RUNS="${2:?--runs N}"; shift ;;
	--out) OUT="${2:?--out FILE}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
if [[ -n "$OUT" ]]; then
	OUT="$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")"
fi

scaled() { # scaled BASE MIN: BASE * SCALE, at least MIN, whole
	awk -v b="$1" -v s="$SCALE" -v m="$2" 'BEGIN { v = int(b * s + 0.5); if (v < m) v = m; print v }'
}
C_RECORDS_DEF=1000000 D_BIG_DEF=10000000
[[ -n "$QUICK" ]] && D_BIG_DEF=1000000
if [[ -n "$TINY" ]]; then
	C_RECORDS_DEF=50000 D_BIG_DEF=200000
	DURATION="${DURATION:-2}"
fi
DURATION="${DURATION:-10}"
C_RECORDS="${BENCH_C_RECORDS:-$(scaled "$C_RECORDS_DEF" 10000)}"
D_BIG="${BENCH_D_BIG:-$(scaled "$D_BIG_DEF" 20000)}"
D_SMALL="${BENCH_D_SMALL:-10000}"
D_FETCHES="${BENCH_D_FETCHES:-2000}"
[[ -n "$TINY" ]] && D_FETCHES="${BENCH_D_FETCHES:-300}"
VALUE_BYTES="${BENCH_VALUE_BYTES:-100}"
SHARED_BUFFERS="${BENCH_SHARED_BUFFERS:-2GB}"
BATCH=1000      # records per produce transaction (A) and per fetch page (C, D)
LOAD_BATCH=10000 # records per send_batch call when loading (C, D)

for v in C_RECORDS D_BIG D_SMALL D_FETCHES RUNS DURATION VALUE_BYTES; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || mq_die "$v must be a positive integer (got '${!v}')"
done
((C_RECORDS % LOAD_BATCH == 0)) || mq_die "C records ($C_RECORDS) must be a multiple of $LOAD_BATCH"
((D_BIG % LOAD_BATCH == 0 && D_SMALL % LOAD_BATCH == 0)) ||
	mq_die "D sizes ($D_BIG, $D_SMALL) must be multiples of $LOAD_BATCH"
((D_SMALL >= BATCH && D_BIG > D_SMALL)) || mq_die "need $BATCH <= D small < D big"

T0=$SECONDS
SO="${MQ_PG_ROOT:-}$("$PG_CONFIG" --pkglibdir)/mq.so" # the copy the server loads
[[ -f "$SO" ]] || mq_die "$SO not installed: build and install the extension first"
so_info() { echo "$(date -u -r "$SO" '+%Y-%m-%d %H:%M:%S UTC'), md5 $(md5sum "$SO" | cut -c1-12)"; }
SO_INFO="$(so_info)" # the build the server loads at start
say() { printf '[%4ds] %s\n' "$((SECONDS - T0))" "$*"; }

# ---------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------
say "starting a throwaway cluster (shared_buffers=$SHARED_BUFFERS, fsync=on, synchronous_commit=on)"
bench_node bench \
	"shared_buffers = '$SHARED_BUFFERS'" \
	"fsync = on" \
	"synchronous_commit = on" \
	"full_page_writes = on" \
	"max_wal_size = '16GB'" \
	"min_wal_size = '1GB'" \
	"checkpoint_timeout = '1h'" \
	"wal_buffers = '64MB'" \
	"max_connections = 50" \
	"log_min_messages = warning" \
	"log_checkpoints = off"
sql() { psqlq -c "$1"; }

sql "CREATE EXTENSION mq" >/dev/null
PG_VERSION_STR="$(sql "SHOW server_version")"
[[ "$(sql "SHOW shared_preload_libraries")" == *mq* ]] || mq_die "mq is not preloaded"

# ---------------------------------------------------------------------------
# Helpers: pgbench runs, medians
# ---------------------------------------------------------------------------
declare -A RES_RUNS=() # key -> space separated values of each run
declare -A WAL_RUNS=() # key -> WAL bytes per record of each run (A, B)
LAST_TPS="" LAST_TX="" LAST_WAL=""

# bench KEY SCRIPT CLIENTS MODE N [pgbench options...]: MODE is T (seconds)
# or t (transactions per client).  Sets LAST_TPS, LAST_TX; appends to RES_RUNS.
bench_run() {
	local key="$1" script="$2" clients="$3" mode="$4" n="$5"
	shift 5
	local jobs=$((clients > 1 ? 2 : 1)) out rc=0 lsn0
	lsn0="$(sql "SELECT pg_current_wal_insert_lsn()")"
	out="$("$PGBENCH" -n -M prepared -c "$clients" -j "$jobs" "-$mode" "$n" -f "$script" "$@" 2>&1)" || rc=$?
	if ((rc != 0)) || grep -q 'aborted\|ERROR' <<<"$out"; then
		printf '%s\n' "$out" >&2
		mq_die "pgbench failed for $key ($script)"
	fi
	LAST_TPS="$(sed -nE 's/^tps = ([0-9.]+) \(without initial connection time\)/\1/p' <<<"$out")"
	LAST_TX="$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' <<<"$out")"
	[[ -n "$LAST_TPS" && -n "$LAST_TX" ]] || {
		printf '%s\n' "$out" >&2
		mq_die "could not parse pgbench output for $key"
	}
	local failed
	failed="$(sed -nE 's/^number of failed transactions: ([0-9]+).*/\1/p' <<<"$out")"
	[[ -z "$failed" || "$failed" == 0 ]] || mq_die "pgbench: $failed failed transactions for $key"
	# WAL written by the whole cluster during the run
	LAST_WAL="$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0')::bigint")"
}

record() { RES_RUNS[$1]="${RES_RUNS[$1]:-}${RES_RUNS[$1]:+ }$2"; }
runs_of() { # the runs of KEY, rounded
	local v out=""
	for v in ${RES_RUNS[$1]}; do out="$out${out:+ }$(fmt_num "$v")"; done
	echo "$out"
}

median() { # median of the values in RES_RUNS[KEY] (or of the words of $2)
	local vals="${2-${RES_RUNS[$1]}}"
	tr ' ' '\n' <<<"$vals" | awk 'NF' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

fmt_num() { awk -v x="$1" 'BEGIN { if (x >= 100) printf "%.0f", x; else if (x >= 10) printf "%.1f", x; else printf "%.2f", x }'; }
mul() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a * b }'; }

checkpoint() { sql "CHECKPOINT" >/dev/null; }

# Write a pgbench script file; prints its path.
script() { # script NAME TEXT
	printf '%s\n' "$2" >"$W/$1.sql"
	printf '%s\n' "$W/$1.sql"
}

# Load N records into mq topic T partition 0 with send_batch of LOAD_BATCH
# records from bench_input10k, printing progress every ~1M records.
mq_load() {
	local topic="$1" n="$2" done=0 chunk t1 calls
	t1=$SECONDS
	while ((done < n)); do
		chunk=$((n - done < 1000000 ? n - done : 1000000))
		calls=$((chunk / LOAD_BATCH))
		psqlq >/dev/null <<-EOF
			SELECT format('SELECT count(*) FROM mq.send_batch(%L, NULL, (SELECT v FROM bench_input10k), partition => 0)', '$topic')
			  FROM generate_series(1, $calls) \gexec
		EOF
		done=$((done + chunk))
		if ((n >= 1000000)); then
			say "  loaded $done / $n records into '$topic' ($((SECONDS - t1)) s)"
		fi
	done
	local end
	end="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = '$topic' AND partition = 0")"
	[[ "$end" == "$n" ]] || mq_die "topic $topic: log end offset $end after loading $n records"
}

# ---------------------------------------------------------------------------
# Schema: inputs, plain tables, topics
# ---------------------------------------------------------------------------
say "preparing inputs ($BATCH and $LOAD_BATCH random ${VALUE_BYTES}-byte values)"
COLS="partition int NOT NULL, msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
      key bytea, value bytea, headers jsonb, producer_id bigint, producer_epoch int, sequence int"
psqlq >/dev/null <<EOF
-- $VALUE_BYTES pseudo-random bytes per value (incompressible, like real payloads)
CREATE FUNCTION bench_value(i int) RETURNS bytea LANGUAGE sql IMMUTABLE AS
  \$\$ SELECT substr(sha256(('a' || i)::bytea) || sha256(('b' || i)::bytea) || sha256(('c' || i)::bytea)
                   || sha256(('d' || i)::bytea), 1, $VALUE_BYTES) \$\$;
CREATE TABLE bench_input (v bytea[]);
INSERT INTO bench_input SELECT array_agg(bench_value(i) ORDER BY i) FROM generate_series(1, $BATCH) i;
CREATE TABLE bench_input10k (v bytea[]);
INSERT INTO bench_input10k SELECT array_agg(bench_value(i) ORDER BY i) FROM generate_series(1, $LOAD_BATCH) i;

-- A: the same $BATCH rows as a COPY file (columns without the defaults)
COPY (SELECT 0, NULL::bytea, u.val, NULL::jsonb, NULL::bigint, NULL::int, NULL::int
        FROM unnest((SELECT v FROM bench_input)) WITH ORDINALITY u(val, o) ORDER BY o)
  TO '$W/batch.copy';

CREATE SEQUENCE plain_a_seq MINVALUE 0 START 0;
CREATE TABLE plain_a ($COLS);
ALTER TABLE plain_a ALTER msg_offset SET DEFAULT nextval('plain_a_seq');
ALTER SEQUENCE plain_a_seq OWNED BY plain_a.msg_offset;
CREATE UNIQUE INDEX ON plain_a (msg_offset);

CREATE SEQUENCE plain_b_seq MINVALUE 0 START 0;
CREATE TABLE plain_b ($COLS);
ALTER SEQUENCE plain_b_seq OWNED BY plain_b.msg_offset;
CREATE UNIQUE INDEX ON plain_b (msg_offset);

CREATE TABLE plain_c ($COLS);
CREATE UNIQUE INDEX ON plain_c (msg_offset);

SELECT mq.create_topic('b1', 1);
SELECT mq.create_topic('b4', 4);
SELECT mq.create_topic('seq', 1);
SELECT mq.create_topic('tail_big', 1);
SELECT mq.create_topic('tail_small', 1);
EOF

# Sanity checks of the calls measured below (correct results, same work).
sql "SELECT mq.create_topic('check', 1)" >/dev/null
[[ "$(sql "SELECT count(*) FROM mq.send_batch('check', NULL, (SELECT v FROM bench_input), partition => 0)")" == "$BATCH" ]] ||
	mq_die "send_batch did not return $BATCH rows"
[[ "$(sql "SELECT count(*) FROM mq.fetch('check', 0, 0, $BATCH) f JOIN unnest((SELECT v FROM bench_input)) WITH ORDINALITY u(val, o)
            ON f.msg_offset = u.o - 1 AND f.value = u.val AND f.key IS NULL AND f.partition = 0")" == "$BATCH" ]] ||
	mq_die "fetch does not return what send_batch wrote"
[[ "$(sql "SELECT msg_offset FROM mq.send('check', NULL::bytea, '\\x00'::bytea, partition => 0)")" == "$BATCH" ]] ||
	mq_die "send did not return offset $BATCH"
sql "COPY plain_a (partition, key, value, headers, producer_id, producer_epoch, sequence) FROM '$W/batch.copy'" >/dev/null
[[ "$(sql "SELECT count(*) FROM plain_a a JOIN mq.fetch('check', 0, 0, $BATCH) f USING (msg_offset, value)")" == "$BATCH" ]] ||
	mq_die "COPY file does not hold the same rows as the send_batch input"
sql "SELECT mq.drop_topic('check'); TRUNCATE plain_a RESTART IDENTITY" >/dev/null

VAL_HEX="$(sql "SELECT encode(bench_value(0), 'hex')")"

# ---------------------------------------------------------------------------
# A. Batch produce
# ---------------------------------------------------------------------------
say "A. batch produce: $BATCH records x ${VALUE_BYTES} B per transaction, 1 client, ${DURATION} s x $RUNS runs per side"
SA_MQ="$(script a_mq "SELECT count(*) FROM mq.send_batch('bench', NULL, (SELECT v FROM bench_input), partition => 0);")"
SA_COPY="$(script a_copy "COPY plain_a (partition, key, value, headers, producer_id, producer_epoch, sequence) FROM '$W/batch.copy';")"
SA_INS="$(script a_ins "INSERT INTO plain_a (partition, key, value, headers, producer_id, producer_epoch, sequence)
  SELECT 0, NULL, u.val, NULL, NULL, NULL, NULL FROM unnest((SELECT v FROM bench_input)) u(val);")"

# Each run starts from an empty log / table and a checkpoint.
a_run() { # a_run VARIANT
	local v="$1" n
	case "$v" in
	mq)
		sql "SELECT mq.drop_topic('bench')" >/dev/null 2>&1 || true
		sql "SELECT mq.create_topic('bench', 1)" >/dev/null
		checkpoint
		bench_run a_mq "$SA_MQ" 1 T "$DURATION"
		n="$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'bench'")"
		;;
	copy | ins)
		sql "TRUNCATE plain_a RESTART IDENTITY" >/dev/null
		checkpoint
		if [[ "$v" == copy ]]; then bench_run a_copy "$SA_COPY" 1 T "$DURATION"; else bench_run a_ins "$SA_INS" 1 T "$DURATION"; fi
		n="$(sql "SELECT count(*) FROM plain_a")"
		;;
	esac
	((n == LAST_TX * BATCH)) || mq_die "A $v: $n rows written for $LAST_TX transactions"
	record "a_$v" "$(mul "$LAST_TPS" "$BATCH")"
	WAL_RUNS[a_$v]="${WAL_RUNS[a_$v]:-} $(awk -v w="$LAST_WAL" -v n="$n" 'BEGIN { printf "%.1f", w / n }')"
	say "  A $v run: $(fmt_num "$(mul "$LAST_TPS" "$BATCH")") records/s ($LAST_TX tx)"
}
for ((r = 1; r <= RUNS; r++)); do
	if ((r % 2)); then order="mq copy ins"; else order="ins copy mq"; fi
	for v in $order; do a_run "$v"; done
done
sql "SELECT mq.drop_topic('bench'); TRUNCATE plain_a" >/dev/null
checkpoint

# ---------------------------------------------------------------------------
# B. Single-record produce
# ---------------------------------------------------------------------------
say "B. single-record produce, one per transaction, ${DURATION} s x $RUNS runs per side"
SB_MQ1="$(script b_mq1 "SELECT * FROM mq.send('b1', NULL::bytea, '\\x$VAL_HEX'::bytea, partition => 0);")"
SB_MQ4="$(script b_mq4 "\\set p :client_id % 4
SELECT * FROM mq.send('b4', NULL::bytea, '\\x$VAL_HEX'::bytea, partition => :p);")"
SB_PL="$(script b_plain "\\set p :client_id % 4
INSERT INTO plain_b (partition, msg_offset, created_at, key, value, headers, producer_id, producer_epoch, sequence)
  VALUES (:p, nextval('plain_b_seq'), now(), NULL, '\\x$VAL_HEX'::bytea, NULL, NULL, NULL, NULL)
  RETURNING partition, msg_offset;")"
# B1 uses client 0 only, so the baseline's partition is 0 there too.
# Every run starts from a checkpoint, and the three 4-client variants take
# turns in each position (the baseline used to run second every time).
b_run() { # b_run KEY SCRIPT CLIENTS
	checkpoint
	bench_run "$1" "$2" "$3" T "$DURATION"
	record "$1" "$LAST_TPS"
	WAL_RUNS[$1]="${WAL_RUNS[$1]:-} $(awk -v w="$LAST_WAL" -v n="$LAST_TX" 'BEGIN { printf "%.1f", w / n }')"
	say "  B $1 run: $(fmt_num "$LAST_TPS") records/s"
}
for ((r = 1; r <= RUNS; r++)); do
	if ((r % 2)); then
		b_run b1_mq "$SB_MQ1" 1; b_run b1_plain "$SB_PL" 1
	else
		b_run b1_plain "$SB_PL" 1; b_run b1_mq "$SB_MQ1" 1
	fi
done
B4_ORDERS=("b4x1_mq b4_plain b4x4_mq" "b4_plain b4x4_mq b4x1_mq" "b4x4_mq b4x1_mq b4_plain")
for ((r = 1; r <= RUNS; r++)); do
	for k in ${B4_ORDERS[$(((r - 1) % 3))]}; do
		case "$k" in
		b4x1_mq) b_run b4x1_mq "$SB_MQ1" 4 ;;
		b4x4_mq) b_run b4x4_mq "$SB_MQ4" 4 ;;
		b4_plain) b_run b4_plain "$SB_PL" 4 ;;
		esac
	done
done
n_mq="$(sql "SELECT sum(log_end_offset) FROM mq.partitions WHERE topic IN ('b1', 'b4')")"
n_pl="$(sql "SELECT count(*) FROM plain_b")"
say "  B: $n_mq records in mq, $n_pl rows in plain_b"
per_p="$(sql "SELECT string_agg(log_end_offset::text, ' ' ORDER BY partition) FROM mq.partitions WHERE topic = 'b4'")"
say "  B: b4 partition sizes: $per_p"

# ---------------------------------------------------------------------------
# C. Sequential fetch
# ---------------------------------------------------------------------------
say "C. sequential fetch: loading $C_RECORDS records into one partition (send_batch of $LOAD_BATCH) and the plain table"
mq_load seq "$C_RECORDS"
psqlq >/dev/null <<EOF
SELECT format('INSERT INTO plain_c SELECT 0, %s + u.o - 1, now(), NULL, u.val, NULL, NULL, NULL, NULL
                 FROM unnest((SELECT v FROM bench_input10k)) WITH ORDINALITY u(val, o) ORDER BY u.o', b * $LOAD_BATCH)
  FROM generate_series(0, $((C_RECORDS / LOAD_BATCH - 1))) b \gexec
EOF
[[ "$(sql "SELECT count(*) FROM plain_c")" == "$C_RECORDS" ]] || mq_die "plain_c not loaded"
say "  VACUUM ANALYZE; sizes: mq $(sql "SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) FROM mq.segments WHERE topic = 'seq'"), plain $(sql "SELECT pg_size_pretty(pg_total_relation_size('plain_c'))")"
sql "VACUUM ANALYZE" >/dev/null
checkpoint
PAGES=$((C_RECORDS / BATCH))
COLS_OUT="partition, msg_offset, created_at, key, value, headers"
SC_MQ_CNT="$(script c_mq_cnt "SELECT count(*) FROM mq.fetch('seq', 0, :off, $BATCH);
\\set off (:off + $BATCH) % $C_RECORDS")"
SC_PL_CNT="$(script c_plain_cnt "SELECT count(*) FROM (SELECT * FROM plain_c WHERE msg_offset >= :off ORDER BY msg_offset LIMIT $BATCH) s;
\\set off (:off + $BATCH) % $C_RECORDS")"
# The query above is planned as an Index Only Scan (the heap is never read);
# this one reads each row like mq.fetch must.
SC_PL_CNTH="$(script c_plain_cnth "SELECT count(value) FROM (SELECT * FROM plain_c WHERE msg_offset >= :off ORDER BY msg_offset LIMIT $BATCH) s;
\\set off (:off + $BATCH) % $C_RECORDS")"
SC_MQ_ROWS="$(script c_mq_rows "SELECT topic, $COLS_OUT FROM mq.fetch('seq', 0, :off, $BATCH);
\\set off (:off + $BATCH) % $C_RECORDS")"
SC_PL_ROWS="$(script c_plain_rows "SELECT 'seq'::text AS topic, $COLS_OUT FROM plain_c WHERE msg_offset >= :off ORDER BY msg_offset LIMIT $BATCH;
\\set off (:off + $BATCH) % $C_RECORDS")"
# Pages are read in order 0, $BATCH, ... and wrap around after the last one.
c_run() { # c_run KEY SCRIPT
	bench_run "$1" "$2" 1 T "$DURATION" -D off=0
	local rps
	rps="$(mul "$LAST_TPS" "$BATCH")"
	record "$1" "$rps"
	say "  C $1 run: $(fmt_num "$rps") records/s ($(awk -v t="$LAST_TX" -v p="$PAGES" 'BEGIN { printf "%.1f", t / p }') passes)"
}
# the same scripts with mq.fetch planned as a function scan (C1f, C2f)
c_run_fs() { PGOPTIONS="${PGOPTIONS:-} -c mq.enable_fetch_scan=off" c_run "$@"; }
say "  warm-up: one full pass of each"
for s in "$SC_MQ_CNT" "$SC_PL_CNT" "$SC_PL_CNTH" "$SC_MQ_ROWS" "$SC_PL_ROWS"; do
	bench_run warmup "$s" 1 t "$PAGES" -D off=0
done
# correctness of the page walk: each page returns $BATCH rows
[[ "$(sql "SELECT count(*) FROM mq.fetch('seq', 0, $((C_RECORDS - BATCH)), $BATCH)")" == "$BATCH" ]] || mq_die "last page of seq is short"
say "  mq.fetch is planned as: $(sql "EXPLAIN SELECT count(*) FROM mq.fetch('seq', 0, 0, $BATCH)" | sed -n 2p | sed -E 's/^ *-> *//; s/ +\(cost.*//')"
for ((r = 1; r <= RUNS; r++)); do
	if ((r % 2)); then
		c_run c_cnt_mq "$SC_MQ_CNT"; c_run c_cnt_plain "$SC_PL_CNT"; c_run c_cnth_plain "$SC_PL_CNTH"
		c_run_fs c_cntf_mq "$SC_MQ_CNT"
		c_run c_rows_mq "$SC_MQ_ROWS"; c_run c_rows_plain "$SC_PL_ROWS"; c_run_fs c_rowsf_mq "$SC_MQ_ROWS"
	else
		c_run_fs c_cntf_mq "$SC_MQ_CNT"
		c_run c_cnth_plain "$SC_PL_CNTH"; c_run c_cnt_plain "$SC_PL_CNT"; c_run c_cnt_mq "$SC_MQ_CNT"
		c_run_fs c_rowsf_mq "$SC_MQ_ROWS"; c_run c_rows_plain "$SC_PL_ROWS"; c_run c_rows_mq "$SC_MQ_ROWS"
	fi
done

# ---------------------------------------------------------------------------
# D. Fetch at the tail: big vs small partition
# ---------------------------------------------------------------------------
say "D. tail fetch: loading $D_BIG records into 'tail_big' and $D_SMALL into 'tail_small'"
mq_load tail_small "$D_SMALL"
mq_load tail_big "$D_BIG"
say "  tail_big: $(sql "SELECT count(*) || ' segments, ' || pg_size_pretty(sum(pg_total_relation_size(relid))) FROM mq.segments WHERE topic = 'tail_big'")"
checkpoint
SD_BIG_LAST="$(script d_big_last "SELECT count(*) FROM mq.fetch('tail_big', 0, $((D_BIG - BATCH)), $BATCH);")"
SD_SMALL_LAST="$(script d_small_last "SELECT count(*) FROM mq.fetch('tail_small', 0, $((D_SMALL - BATCH)), $BATCH);")"
SD_BIG_END="$(script d_big_end "SELECT count(*) FROM mq.fetch('tail_big', 0, $D_BIG, $BATCH);")"
SD_SMALL_END="$(script d_small_end "SELECT count(*) FROM mq.fetch('tail_small', 0, $D_SMALL, $BATCH);")"
[[ "$(sql "SELECT count(*) FROM mq.fetch('tail_big', 0, $((D_BIG - BATCH)), $BATCH)")" == "$BATCH" ]] || mq_die "tail_big: short last page"
[[ "$(sql "SELECT count(*) FROM mq.fetch('tail_big', 0, $D_BIG, $BATCH)")" == 0 ]] || mq_die "tail_big: rows at the end"
d_run() { # d_run KEY SCRIPT
	bench_run "$1" "$2" 1 t "$D_FETCHES"
	local us
	us="$(awk -v t="$LAST_TPS" 'BEGIN { printf "%.2f", 1e6 / t }')"
	record "$1" "$us"
	say "  D $1 run: $us us per fetch"
}
say "  warm-up, then $D_FETCHES fetches per run"
for s in "$SD_BIG_LAST" "$SD_SMALL_LAST" "$SD_BIG_END" "$SD_SMALL_END"; do
	bench_run warmup "$s" 1 t "$D_FETCHES"
done
for ((r = 1; r <= RUNS; r++)); do
	if ((r % 2)); then
		d_run d_last_big "$SD_BIG_LAST"; d_run d_last_small "$SD_SMALL_LAST"
		d_run d_end_big "$SD_BIG_END"; d_run d_end_small "$SD_SMALL_END"
	else
		d_run d_last_small "$SD_SMALL_LAST"; d_run d_last_big "$SD_BIG_LAST"
		d_run d_end_small "$SD_SMALL_END"; d_run d_end_big "$SD_BIG_END"
	fi
done

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------
human() { # human COUNT: 10000000 -> 10M
	awk -v n="$1" 'BEGIN { if (n >= 1e6 && n % 1e6 == 0) printf "%dM", n / 1e6; else if (n >= 1e3 && n % 1e3 == 0) printf "%dk", n / 1e3; else printf "%d", n }'
}
ROWS=() # "figure|unit|mq key|baseline key|baseline label|cmp|target"
ROWS+=("A1 batch produce ${BATCH}x${VALUE_BYTES}B vs COPY|records/s|a_mq|a_copy|COPY|ge|0.9")
ROWS+=("A2 batch produce ${BATCH}x${VALUE_BYTES}B vs INSERT..SELECT|records/s|a_mq|a_ins|INSERT..SELECT|ge|0.9")
ROWS+=("B1 send, 1 client|records/s|b1_mq|b1_plain|INSERT|ge|0.9")
ROWS+=("B2 send, 4 clients, 1 partition|records/s|b4x1_mq|b4_plain|INSERT|ge|0.9")
ROWS+=("B3 send, 4 clients, 4 partitions|records/s|b4x4_mq|b4_plain|INSERT|ge|0.9")
ROWS+=("C1 sequential fetch $(human "$C_RECORDS"), count(*)|records/s|c_cnt_mq|c_cnt_plain|index-only scan|ge|0.8")
ROWS+=("C1h sequential fetch $(human "$C_RECORDS"), count, baseline reads rows|records/s|c_cnt_mq|c_cnth_plain|index scan, count(value)|ge|0.8")
ROWS+=("C2 sequential fetch $(human "$C_RECORDS"), rows to client|records/s|c_rows_mq|c_rows_plain|index scan|ge|0.8")
ROWS+=("C1f as C1h, mq.fetch as a function scan|records/s|c_cntf_mq|c_cnth_plain|index scan, count(value)|info|-")
ROWS+=("C2f as C2, mq.fetch as a function scan|records/s|c_rowsf_mq|c_rows_plain|index scan|info|-")
ROWS+=("D1 last $BATCH of $(human "$D_BIG") vs of $(human "$D_SMALL")|us/fetch|d_last_big|d_last_small|mq $(human "$D_SMALL")|le|1.5")
ROWS+=("D2 fetch at end of $(human "$D_BIG") vs of $(human "$D_SMALL")|us/fetch|d_end_big|d_end_small|mq $(human "$D_SMALL")|le|1.5")

GIT_REV="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [[ -n "$(git -C "$REPO" status --porcelain -- src 2>/dev/null)" ]]; then GIT_REV="$GIT_REV (src/ modified)"; fi
SO_NOTE=""
if [[ "$(so_info)" != "$SO_INFO" ]]; then
	SO_NOTE="mq.so was reinstalled during the run ($(so_info)); the results are for the build loaded at start"
	mq_log "warning: $SO_NOTE"
fi
CPU="$(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n 1)"
MACHINE="$(nproc) CPUs ($CPU), $(awk '/MemTotal/ { printf "%.0f GB RAM", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
DATE="$(date -u '+%Y-%m-%d %H:%M UTC')"
PARAMS="${VALUE_BYTES}-byte values; pgbench -M prepared, ${DURATION} s per run (D: $D_FETCHES fetches per run), median of $RUNS runs per side, alternating; shared_buffers=$SHARED_BUFFERS, fsync=on, synchronous_commit=on"

table_lines=()
NMISS=0 NINFO=0
for row in "${ROWS[@]}"; do
	IFS='|' read -r fig unit kmq kbase blabel cmp target <<<"$row"
	m="$(median "$kmq")" b="$(median "$kbase")"
	ratio="$(awk -v m="$m" -v b="$b" 'BEGIN { printf "%.2f", m / b }')"
	if [[ "$cmp" == info ]]; then
		ok="-" tgt="-"
		NINFO=$((NINFO + 1))
	elif [[ "$cmp" == ge ]]; then
		ok="$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r >= t) ? "PASS" : "MISS" }')"
		tgt=">= $target"
	else
		ok="$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r <= t) ? "PASS" : "MISS" }')"
		tgt="<= $target"
	fi
	[[ "$ok" == PASS || "$ok" == - ]] || NMISS=$((NMISS + 1))
	paired="$(paste -d' ' <(tr ' ' '\n' <<<"${RES_RUNS[$kmq]}") <(tr ' ' '\n' <<<"${RES_RUNS[$kbase]}") |
		awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 }')"
	table_lines+=("$fig|$(fmt_num "$m") $unit|$(fmt_num "$b") $unit ($blabel)|$ratio|$tgt|$ok|$(runs_of "$kmq")|$(runs_of "$kbase")|$paired|${kmq}|${kbase}")
done

echo
echo "mq core benchmark — $DATE"
echo "machine: $MACHINE; PostgreSQL $PG_VERSION_STR"
echo "mq: git $GIT_REV, installed mq.so $SO_INFO"
echo "settings: $PARAMS"
[[ -z "$SO_NOTE" ]] || echo "NOTE: $SO_NOTE"
echo
{
	printf 'figure|mq|baseline|ratio|target|result\n'
	for l in "${table_lines[@]}"; do
		IFS='|' read -r a b c d e f _ <<<"$l"
		printf '%s|%s|%s|%s|%s|%s\n' "$a" "$b" "$c" "$d" "$e" "$f"
	done
} | column -t -s '|'
echo
echo "runs in order (mq ; baseline ; ratio of the runs made side by side):"
for l in "${table_lines[@]}"; do
	IFS='|' read -r a _ _ _ _ _ g h i _ _ <<<"$l"
	printf '  %-4s %s ; %s ; %s\n' "${a%% *}" "$g" "$h" "$i"
done
echo
echo "WAL per record (whole cluster during the runs; median, bytes):"
WAL_LINES=()
for row in "${ROWS[@]}"; do
	IFS='|' read -r fig _ kmq kbase blabel _ _ <<<"$row"
	[[ -n "${WAL_RUNS[$kmq]:-}" ]] || continue
	wm="$(median x "${WAL_RUNS[$kmq]}")" wb="$(median x "${WAL_RUNS[$kbase]}")"
	WAL_LINES+=("${fig%% *}|$(fmt_num "$wm")|$(fmt_num "$wb") ($blabel)|$(awk -v m="$wm" -v b="$wb" 'BEGIN { printf "%.2f", m / b }')")
done
{
	printf 'figure|mq|baseline|ratio\n'
	printf '%s\n' "${WAL_LINES[@]}"
} | column -t -s '|' | sed 's/^/  /'
echo
echo "$(( ${#ROWS[@]} - NINFO - NMISS )) of $(( ${#ROWS[@]} - NINFO )) figures meet their target; total time $((SECONDS - T0)) s"

if [[ -n "$OUT" ]]; then
	{
		echo "### mq core benchmark, $DATE"
		echo
		echo "- Machine: $MACHINE"
		echo "- PostgreSQL $PG_VERSION_STR; mq git $GIT_REV, mq.so $SO_INFO"
		echo "- $PARAMS"
		[[ -z "$SO_NOTE" ]] || echo "- NOTE: $SO_NOTE"
		echo "- Command: \`test/bench/core.sh${ARGS:+ $ARGS}\`"
		echo
		echo "| Figure | mq | Baseline | Ratio | Target | Result |"
		echo "|---|---:|---:|---:|---|---|"
		for l in "${table_lines[@]}"; do
			IFS='|' read -r a b c d e f _ <<<"$l"
			printf '| %s | %s | %s | %s | %s | %s |\n' "$a" "$b" "$c" "$d" "$e" "$f"
		done
		echo
		echo "Runs in order (mq ; baseline ; ratio of the runs made side by side):"
		echo
		for l in "${table_lines[@]}"; do
			IFS='|' read -r a _ _ _ _ _ g h i _ _ <<<"$l"
			printf -- '- %s: %s ; %s ; %s\n' "${a%% *}" "$g" "$h" "$i"
		done
		echo
		echo "WAL bytes per record (whole cluster during the runs, median):"
		echo
		echo "| Figure | mq | Baseline | Ratio |"
		echo "|---|---:|---:|---:|"
		for l in "${WAL_LINES[@]}"; do
			IFS='|' read -r a b c d <<<"$l"
			printf '| %s | %s | %s | %s |\n' "$a" "$b" "$c" "$d"
		done
	} >"$OUT"
	echo "markdown written to $OUT"
fi
say "stopping the cluster"
cluster_stop bench
