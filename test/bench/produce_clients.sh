#!/usr/bin/env bash
# Single-record produce with several clients (issue 15, gap 2), measured
# in ONE run on ONE throwaway cluster against plain PostgreSQL doing the
# same work: core.sh's figures B1-B3 with more runs and with what explains
# them on a machine where raw throughput is noisy.
#
# Variants (one record per transaction, 100-byte value, pgbench -M prepared):
#   plain1  1 client  of INSERT into a plain table, offset from a sequence
#   mq1     1 client  of mq.send to a 1-partition topic
#   plain4  4 clients of the INSERT (partition = client_id % 4)
#   mq4x1   4 clients of mq.send to one partition
#   mq4x4   4 clients of mq.send, client i to partition i % 4 of a 4-partition topic
# Each round runs every variant once, in an order that rotates between
# rounds; the figures are medians over the rounds, and the ratio of each
# round's side-by-side runs is printed too.  Per variant also:
#   tx/sync   transactions per WAL fsync (pg_stat_wal): how well commits
#             share a flush (group commit); load-independent in shape
#   WAL/tx    WAL bytes per transaction (whole cluster)
#   waits     where the clients' backends were, sampled from
#             pg_stat_activity every 5 ms during the run (CPU = no wait event)
#
# With --side-by-side, two identical clusters run at the same time instead:
# for each round, the plain baseline on one and an mq variant on the other,
# swapping clusters every round, so that both sides see the same disk and
# CPU at the same moment; the ratio of each round's pair is printed and its
# median kept.  This is the figure to read on a machine shared with others.
#
# The server: PostgreSQL 15 as the postgres user, temp dir, free port,
# shared_preload_libraries = 'mq', fsync = on, synchronous_commit = on;
# stopped and removed at exit.  Uses the INSTALLED extension (build and
# install it first; this script never runs make).
#
# Usage: test/bench/produce_clients.sh [--duration S] [--rounds N] [--clients N]
#                                      [--wal-in-memory] [--side-by-side]
#   --duration S     seconds per pgbench run (default 5)
#   --rounds N       rounds (default 5; the median is kept)
#   --clients N      clients of the multi-client variants (default 4)
#   --wal-in-memory  put pg_wal on /dev/shm (initdb --waldir): fsync costs
#                    nothing, so what is left is CPU and locks, the regime
#                    of a fast disk; for profiling, never for durability
#   --side-by-side   the paired mode above (4-client variants only)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR/../..
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
PGBENCH="$PG_BINDIR/pgbench"

DURATION=5 ROUNDS=5 CLIENTS=4 WAL_MEM="" SIDE=""
while (($#)); do
	case "$1" in
	--duration) DURATION="${2:?--duration S}"; shift ;;
	--rounds) ROUNDS="${2:?--rounds N}"; shift ;;
	--clients) CLIENTS="${2:?--clients N}"; shift ;;
	--wal-in-memory) WAL_MEM=1 ;;
	--side-by-side) SIDE=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
for v in DURATION ROUNDS CLIENTS; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || mq_die "$v must be a positive integer (got '${!v}')"
done

if [[ -n "$WAL_MEM" ]]; then
	WALDIR="$(mktemp -d /dev/shm/mq-bench-wal.XXXXXX)"
	mq_on_exit "rm -rf '$WALDIR'"
	chown postgres:postgres "$WALDIR" 2>/dev/null || true
fi
BASE_INITDB_OPTS="${MQ_INITDB_OPTS:-}"
CONF=("shared_buffers = '1GB'" "fsync = on" "synchronous_commit = on"
	"full_page_writes = on" "max_wal_size = '16GB'" "checkpoint_timeout = '1h'"
	"wal_buffers = '64MB'" "max_connections = 50" "log_min_messages = warning")
sql() { psql -X -q -v ON_ERROR_STOP=1 -At -c "$1"; }

setup_cluster() { # setup_cluster NAME: start it, create the topics and tables
	MQ_INITDB_OPTS="$BASE_INITDB_OPTS${WAL_MEM:+ --waldir=$WALDIR/$1}"
	cluster_start "$1" "${CONF[@]}"
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'EOF'
CREATE EXTENSION mq;
SELECT mq.create_topic('b1', 1);
SELECT mq.create_topic('b4', 4);
CREATE SEQUENCE plain_seq MINVALUE 0 START 0;
CREATE TABLE plain (partition int NOT NULL, msg_offset bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(), key bytea, value bytea, headers jsonb,
  producer_id bigint, producer_epoch int, sequence int);
CREATE UNIQUE INDEX ON plain (msg_offset);
CREATE TABLE waits (variant text, what text);
CREATE PROCEDURE sample_waits(v text, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    INSERT INTO waits
      SELECT v, coalesce(wait_event_type || ':' || wait_event, 'CPU')
        FROM pg_stat_activity
       WHERE application_name = 'pgbench' AND state = 'active';
    PERFORM pg_stat_clear_snapshot();
    PERFORM pg_sleep(0.005);
  END LOOP;
END $$;
EOF
}
if [[ -n "$SIDE" ]]; then
	setup_cluster sbs_b
	setup_cluster sbs_a
else
	setup_cluster clients
fi
W="$MQ_CLUSTER/work" # the last cluster started is current
mkdir -p "$W"
chmod 755 "$W"
VAL="$(sql "SELECT encode(substr(sha256('a') || sha256('b') || sha256('c') || sha256('d'), 1, 100), 'hex')")"
printf '%s\n' "SELECT * FROM mq.send('b1', NULL::bytea, '\\x$VAL'::bytea, partition => 0);" >"$W/mq1.sql"
printf '%s\n' '\set p :client_id % 4' \
	"SELECT * FROM mq.send('b4', NULL::bytea, '\\x$VAL'::bytea, partition => :p);" >"$W/mq4.sql"
printf '%s\n' '\set p :client_id % 4' \
	"INSERT INTO plain (partition, msg_offset, created_at, key, value, headers, producer_id, producer_epoch, sequence)
  VALUES (:p, nextval('plain_seq'), now(), NULL, '\\x$VAL'::bytea, NULL, NULL, NULL, NULL)
  RETURNING partition, msg_offset;" >"$W/plain.sql"
chmod a+r "$W"/*.sql

declare -A TPS=() SYNC=() WALB=()
VARIANTS=(plain1 mq1 plain4 mq4x1 mq4x4)
script_of() { case "$1" in plain*) echo plain ;; mq1 | mq4x1) echo mq1 ;; mq4x4) echo mq4 ;; esac; }
clients_of() { case "$1" in plain1 | mq1) echo 1 ;; *) echo "$CLIENTS" ;; esac; }

run_variant() { # run_variant VARIANT
	local v="$1" c s0 s1 l0 out tps tx syncs wal jobs
	c="$(clients_of "$v")"
	jobs=$((c > 1 ? 2 : 1))
	sql "CHECKPOINT"
	s0="$(sql "SELECT wal_sync FROM pg_stat_wal")"
	l0="$(sql "SELECT pg_current_wal_insert_lsn()")"
	psql -X -q -c "CALL sample_waits('$v', $((DURATION * 150)))" >/dev/null 2>&1 &
	out="$("$PGBENCH" -n -M prepared -c "$c" -j "$jobs" -T "$DURATION" -f "$W/$(script_of "$v").sql" 2>&1)" ||
		{ printf '%s\n' "$out" >&2; mq_die "pgbench failed for $v"; }
	wait
	tps="$(sed -nE 's/^tps = ([0-9.]+) \(without.*/\1/p' <<<"$out")"
	tx="$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' <<<"$out")"
	[[ -n "$tps" && -n "$tx" ]] || { printf '%s\n' "$out" >&2; mq_die "no result for $v"; }
	s1="$(sql "SELECT wal_sync FROM pg_stat_wal")"
	wal="$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$l0')::bigint")"
	syncs=$((s1 - s0))
	TPS[$v]="${TPS[$v]:-} $tps"
	SYNC[$v]="${SYNC[$v]:-} $(awk -v t="$tx" -v s="$syncs" 'BEGIN { printf "%.2f", s ? t / s : 0 }')"
	WALB[$v]="${WALB[$v]:-} $(awk -v w="$wal" -v t="$tx" 'BEGIN { printf "%.0f", w / t }')"
	printf '  %-7s %9.0f tx/s  %5s tx/sync\n' "$v" "$tps" "${SYNC[$v]##* }"
}

median() { tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
paired() { # paired A B: ratio of A's and B's runs of each round
	paste -d' ' <(tr ' ' '\n' <<<"${TPS[$1]}" | awk 'NF') <(tr ' ' '\n' <<<"${TPS[$2]}" | awk 'NF') |
		awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 }'
}

# One pgbench run of VARIANT on cluster NAME; prints its tx/s.
tps_on() { # tps_on NAME VARIANT
	cluster_env "$1"
	"$PGBENCH" -n -M prepared -c "$CLIENTS" -j 2 -T "$DURATION" -f "$W/$(script_of "$2").sql" 2>&1 |
		sed -nE 's/^tps = ([0-9.]+) \(without.*/\1/p'
}

side_by_side() {
	local v r c x y a b per
	echo "single-record produce side by side on two clusters, $CLIENTS clients, ${DURATION} s per run, $ROUNDS rounds${WAL_MEM:+, WAL in memory}"
	for v in mq4x1 mq4x4 plain4; do
		per=""
		for ((r = 0; r < ROUNDS; r++)); do
			if ((r % 2)); then x=sbs_b y=sbs_a; else x=sbs_a y=sbs_b; fi
			for c in sbs_a sbs_b; do cluster_env "$c" && sql "CHECKPOINT"; done
			tps_on "$x" plain4 >"$W/a.tps" &
			tps_on "$y" "$v" >"$W/b.tps" &
			wait
			a="$(cat "$W/a.tps")" b="$(cat "$W/b.tps")"
			[[ -n "$a" && -n "$b" ]] || mq_die "pgbench failed in round $((r + 1)) of $v"
			per="$per $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
			printf '  %-6s %6.0f tx/s  against plain4 %6.0f tx/s: %s\n' "$v" "$b" "$a" "${per##* }"
		done
		echo "$v / plain4 side by side: median $(median "$per") (rounds:$per)"
	done
}

if [[ -n "$SIDE" ]]; then
	side_by_side
	exit 0
fi
echo "single-record produce, $CLIENTS clients, ${DURATION} s per run, $ROUNDS rounds${WAL_MEM:+, WAL in memory}"
for ((r = 0; r < ROUNDS; r++)); do
	echo "round $((r + 1))"
	n=${#VARIANTS[@]}
	for ((i = 0; i < n; i++)); do run_variant "${VARIANTS[$(((i + r) % n))]}"; done
done

echo
echo "medians over $ROUNDS rounds (ratio: median of the rounds' side-by-side ratios):"
printf '%-7s %10s %8s %8s  %s\n' variant tx/s tx/sync WAL/tx "ratio to plain (per round)"
for v in "${VARIANTS[@]}"; do
	base=plain4
	[[ "$(clients_of "$v")" == 1 ]] && base=plain1
	ratio="" per=""
	if [[ "$v" == mq* ]]; then
		per="$(paired "$v" "$base")"
		ratio="$(median "$per") ($per)"
	fi
	printf '%-7s %10.0f %8s %8s  %s\n' "$v" "$(median "${TPS[$v]}")" "$(median "${SYNC[$v]}")" \
		"$(median "${WALB[$v]}")" "$ratio"
done

echo
echo "where the clients' backends were (share of samples while active):"
psql -X -q -v ON_ERROR_STOP=1 -c "
  SELECT variant, what, pct FROM (
    SELECT variant, what, round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY variant), 1) AS pct
      FROM waits GROUP BY variant, what) s
   WHERE pct >= 0.5 ORDER BY variant, pct DESC"
cluster_stop clients
