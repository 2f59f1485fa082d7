#!/usr/bin/env bash
# Reads from anywhere in the log, and single sends (issue 25, item 6),
# side by side with a plain table in ONE run on ONE throwaway cluster:
#
#   R   1,000 records from a random offset of a partition of --records
#       (3.6M) records, counted in the server:
#         mq      SELECT count(*) FROM mq.fetch(topic, 0, :off, 1000)
#         rows    plain table with a primary key, reading each row:
#                 SELECT count(value) FROM (SELECT * ... WHERE msg_offset >= :off
#                                           ORDER BY msg_offset LIMIT 1000) s
#         ios     the same with count(*), which PostgreSQL plans as an
#                 Index Only Scan of the vacuumed table: the heap is never
#                 read (mq.fetch must read it); shown, no target
#   S   single-record sends, one per transaction, 1 client: mq.send
#       against INSERT with a sequence for the offset (as core.sh's B1)
# Both sides VACUUM ANALYZEd first, and before each run both tables and
# their indexes loaded into shared buffers (pg_prewarm; 3 GB hold both):
# 1,000 records from random offsets touch pages all over the partition,
# and with tables larger than shared buffers together (some 700 MB each
# at 3.6M records of 100 B) whichever side ran last had its pages cached,
# so the ratio followed the order of the runs (at 256 MB: mq 1,430 reads/s
# against the plain table's 152, read() of its pages most of the
# baseline's profile).  Rounds rotate the order of the sides
# (each round a different one goes first), every run starts from a
# checkpoint.  Prints each round's ratios (mq / baseline), their medians
# and the load average.  Not a test: never fails on figures.  Uses the
# INSTALLED extension.
#
# Usage: test/bench/random_read.sh [--records N] [--rounds N] [--duration S]
#                                  [--out FILE]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

RECORDS=3600000 ROUNDS=5 DURATION=10 OUT=""
while (($#)); do
	case "$1" in
	--records) RECORDS="${2:?}"; shift ;;
	--rounds) ROUNDS="${2:?}"; shift ;;
	--duration) DURATION="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done
LOAD=10000
((RECORDS % LOAD == 0)) || mq_die "--records must be a multiple of $LOAD"

mq_bench_work random
mq_phase "a throwaway cluster (fsync on)"
cluster_start rr "fsync = on" "synchronous_commit = on" "shared_buffers = 3GB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 1h" "log_min_messages = warning"
sql() { cluster_psql rr -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }
CONN="$(cluster_conninfo rr)"

mq_phase "loading $RECORDS records into a topic and a plain table"
VAL_HEX="$(printf 'v%.0s' $(seq 1 100) | od -v -An -tx1 | tr -d ' \n')"
cluster_psql rr -X -q -v ON_ERROR_STOP=1 >/dev/null <<EOF
CREATE EXTENSION mq;
CREATE EXTENSION pg_prewarm;
CREATE TABLE input (v bytea[]);
INSERT INTO input SELECT array_agg(substr(sha256(('a' || i)::bytea) || sha256(('b' || i)::bytea)
                                          || sha256(('c' || i)::bytea) || sha256(('d' || i)::bytea), 1, 100) ORDER BY i)
  FROM generate_series(1, $LOAD) i;
SELECT mq.create_topic('r', 1);
SELECT mq.create_topic('s', 1);
SELECT format('SELECT count(*) FROM mq.send_batch(''r'', NULL, (SELECT v FROM input), partition => 0)')
  FROM generate_series(1, $((RECORDS / LOAD))) \gexec
CREATE TABLE plain_r (partition int NOT NULL, msg_offset bigint PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                      key bytea, value bytea, headers jsonb, producer_id bigint, producer_epoch int, sequence int);
INSERT INTO plain_r (partition, msg_offset, value)
SELECT 0, g, u.val FROM generate_series(0, $((RECORDS - 1))) g
  JOIN (SELECT x.val, x.o FROM input, unnest(input.v) WITH ORDINALITY AS x(val, o)) u ON u.o = g % $LOAD + 1;
CREATE SEQUENCE plain_s_seq MINVALUE 0 START 0;
CREATE TABLE plain_s (partition int NOT NULL, msg_offset bigint PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                      key bytea, value bytea, headers jsonb, producer_id bigint, producer_epoch int, sequence int);
VACUUM ANALYZE;
CHECKPOINT;
EOF
[[ "$(sql "SELECT log_end_offset FROM mq.partitions WHERE topic = 'r'")" == "$RECORDS" ]] || mq_die "topic not loaded"
mq_log "segments of the topic: $(sql "SELECT count(*) FROM mq.segments WHERE topic = 'r'"), sizes: mq $(sql "SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) FROM mq.segments WHERE topic = 'r'"), plain $(sql "SELECT pg_size_pretty(pg_total_relation_size('plain_r'))")"

last=$((RECORDS - 1000))
printf '\\set off random(0, %d)\nSELECT count(*) FROM mq.fetch(%s, 0, :off, 1000);\n' "$last" "'r'" >"$WORK/r_mq.sql"
printf '\\set off random(0, %d)\nSELECT count(value) FROM (SELECT * FROM plain_r WHERE msg_offset >= :off ORDER BY msg_offset LIMIT 1000) s;\n' "$last" >"$WORK/r_rows.sql"
printf '\\set off random(0, %d)\nSELECT count(*) FROM (SELECT * FROM plain_r WHERE msg_offset >= :off ORDER BY msg_offset LIMIT 1000) s;\n' "$last" >"$WORK/r_ios.sql"
printf "SELECT * FROM mq.send('s', NULL::bytea, '\\\\x%s'::bytea, partition => 0);\n" "$VAL_HEX" >"$WORK/s_mq.sql"
printf "INSERT INTO plain_s (partition, msg_offset, created_at, key, value, headers, producer_id, producer_epoch, sequence)\n  VALUES (0, nextval('plain_s_seq'), now(), NULL, '\\\\x%s'::bytea, NULL, NULL, NULL, NULL) RETURNING partition, msg_offset;\n" "$VAL_HEX" >"$WORK/s_plain.sql"
chmod 644 "$WORK"/*.sql

# tps NAME: transactions per second of one pgbench run (1 client), from a
# checkpoint, with both sides' tables and indexes in shared buffers
tps() {
	sql "CHECKPOINT" >/dev/null
	sql "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c
	      WHERE c.oid IN (SELECT relid FROM mq.segments WHERE topic = 'r')
	         OR c.oid IN (SELECT i.indexrelid FROM pg_index i JOIN mq.segments s ON i.indrelid = s.relid WHERE s.topic = 'r')
	         OR c.relname IN ('plain_r', 'plain_r_pkey')" >/dev/null
	local out
	out="$("$PGBENCH" -n -M prepared -c 1 -T "$DURATION" -f "$WORK/$1.sql" -d "$CONN" 2>&1)" ||
		mq_die "pgbench failed: $1: $out"
	sed -nE 's/^tps = ([0-9.]+) \(without initial connection time\)/\1/p' <<<"$out"
}
declare -A RUNS=()
SIDES=(r_mq r_rows r_ios s_mq s_plain)
for ((round = 0; round < ROUNDS; round++)); do
	mq_phase "round $((round + 1)) of $ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
	n=${#SIDES[@]} line=""
	for ((i = 0; i < n; i++)); do
		side="${SIDES[(i + round) % n]}"
		RUNS[$side]+="$(tps "$side") "
	done
	for side in "${SIDES[@]}"; do line+="$side $(awk '{print $NF}' <<<"${RUNS[$side]}") "; done
	echo "$line" | awk '{ printf "  tps: %s; ratios: read %.2f (rows), %.2f (ios); send %.2f\n", $0, $2 / $4, $2 / $6, $8 / $10 }'
done

mq_phase "results"
med() { tr ' ' '\n' <<<"$1" | awk 'NF' | mq_median; }
ratios() { # ratios A B: each round's A/B
	paste -d' ' <(tr ' ' '\n' <<<"${RUNS[$1]}" | awk 'NF') <(tr ' ' '\n' <<<"${RUNS[$2]}" | awk 'NF') |
		awk '{ printf "%.2f ", $1 / $2 }'
}
row() { # row LABEL A B
	local r
	r="$(ratios "$2" "$3")"
	printf '| %s | %.0f | %.0f | %.2f | %s|\n' "$1" "$(med "${RUNS[$2]}")" "$(med "${RUNS[$3]}")" "$(med "$r")" "$r"
}
table="| $RECORDS-record partition, 1 client | mq, per s | baseline, per s | ratio (median of rounds) | each round |
|---|---:|---:|---:|---|
$(row "1,000 records from a random offset (fetches), baseline reads the rows" r_mq r_rows)
$(row "the same, baseline an Index Only Scan (count(*))" r_mq r_ios)
$(row "single sends, baseline INSERT with a sequence" s_mq s_plain)

$ROUNDS rounds of $DURATION s per side, order rotated; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
