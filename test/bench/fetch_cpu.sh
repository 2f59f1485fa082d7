#!/usr/bin/env bash
# Server CPU per record of sequential reads: mq.fetch and mq.poll as the
# streaming custom scan, as the function scan (mq.enable_fetch_scan = off)
# and the plain indexed range SELECT of core.sh's figure C, on one
# throwaway cluster in one run.
#
# Wall-clock figures on a shared machine move with the other processes'
# load; the CPU time the server's backends spend does much less.  Each run
# is one pgbench client reading a 1,000,000-record partition in pages of
# 1,000 (-M prepared); its backend's CPU time is read from the postmaster's
# reaped-children times (/proc/PID/stat cutime + cstime) once the backend
# has exited.  Printed: records per server CPU-second (median of --runs
# alternating runs), the ratio to the plain SELECT that reads the same
# rows, and the wall-clock rate beside it.
#
#   cnt   SELECT count(*) over the page (the plain one: count(value), an
#         index scan that reads the rows)
#   rows  the page's columns to the client
#   poll  mq.poll(group, topic, 1000, auto_commit => true): each call
#         commits the previous one's position (no plain equivalent; shown
#         against the plain rows read)
#   pollr mq.poll(group, topic, 1000) without a commit: every call reads
#         the group's first 1,000 records again (the read, the claim and
#         the position lookup, without the offset write)
#
# Usage: test/bench/fetch_cpu.sh [--records N] [--runs N]
# It uses the INSTALLED extension (MQ_PG_ROOT honoured, as core.sh).
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

RECORDS=1000000 RUNS=3
while (($#)); do
	case "$1" in
	--records) RECORDS="${2:?--records N}"; shift ;;
	--runs) RUNS="${2:?--runs N}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) mq_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
PAGE=1000 LOAD=10000
((RECORDS % LOAD == 0)) || mq_die "--records must be a multiple of $LOAD"
PAGES=$((RECORDS / PAGE))
TICK="$(getconf CLK_TCK)"
T0=$SECONDS
say() { printf '[%4ds] %s\n' "$((SECONDS - T0))" "$*"; }

bench_node fetchcpu "shared_buffers = '1GB'" "autovacuum = off" "max_wal_size = '8GB'" \
	"checkpoint_timeout = '1h'" "log_min_messages = warning"
PM="$(head -n 1 "$MQ_PGDATA/postmaster.pid")"

say "loading $RECORDS records into mq topic 'seq' and the plain table"
psqlq >/dev/null <<EOF
CREATE EXTENSION mq;
CREATE TABLE input10k AS SELECT array_agg(substr(sha256(('a' || i)::bytea) || sha256(('b' || i)::bytea)
    || sha256(('c' || i)::bytea) || sha256(('d' || i)::bytea), 1, 100) ORDER BY i) AS v
  FROM generate_series(1, $LOAD) i;
CREATE TABLE plain_c (partition int NOT NULL, msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
    key bytea, value bytea, headers jsonb, producer_id bigint, producer_epoch int, sequence int);
CREATE UNIQUE INDEX ON plain_c (msg_offset);
SELECT mq.create_topic('seq', 1);
SELECT format('SELECT count(*) FROM mq.send_batch(''seq'', NULL, (SELECT v FROM input10k), partition => 0)')
  FROM generate_series(1, $((RECORDS / LOAD))) \gexec
INSERT INTO plain_c SELECT 0, b * $LOAD + u.o - 1, now(), NULL, u.val
  FROM generate_series(0, $((RECORDS / LOAD - 1))) b, unnest((SELECT v FROM input10k)) WITH ORDINALITY u(val, o)
  ORDER BY b, u.o;
VACUUM ANALYZE;
CHECKPOINT;
EOF
# the plain table in offset order, as the log is (core.sh loads it so too)
[[ "$(psqlq -c "SELECT count(*) FROM (SELECT msg_offset < lag(msg_offset) OVER (ORDER BY ctid) AS back FROM plain_c) s
                 WHERE back")" == 0 ]] || mq_die "plain_c is not in offset order"

COLS="partition, msg_offset, created_at, key, value, headers"
NEXT="\\set off (:off + $PAGE) % $RECORDS"
printf '%s\n' "SELECT count(*) FROM mq.fetch('seq', 0, :off, $PAGE);" "$NEXT" >"$W/cnt_mq.sql"
printf '%s\n' "SELECT count(value) FROM (SELECT * FROM plain_c WHERE msg_offset >= :off ORDER BY msg_offset LIMIT $PAGE) s;" \
	"$NEXT" >"$W/cnt_plain.sql"
printf '%s\n' "SELECT topic, $COLS FROM mq.fetch('seq', 0, :off, $PAGE);" "$NEXT" >"$W/rows_mq.sql"
printf '%s\n' "SELECT 'seq'::text AS topic, $COLS FROM plain_c WHERE msg_offset >= :off ORDER BY msg_offset LIMIT $PAGE;" \
	"$NEXT" >"$W/rows_plain.sql"
printf '%s\n' "SELECT topic, $COLS FROM mq.poll('cpu' || :run, 'seq', $PAGE, true);" >"$W/poll_mq.sql"
printf '%s\n' "SELECT topic, $COLS FROM mq.poll('cpu' || :run, 'seq', $PAGE);" >"$W/pollr_mq.sql"
chmod a+r "$W"/*.sql

children() { pgrep -c -P "$PM" || true; }

declare -A CPU=() WALL=()
RUN=0
# one KEY SCRIPT [on|off]: one run of $PAGES calls; records per CPU-second
one() {
	local key="$1" script="$2" scan="${3:-on}" kids c0 c1 out tps
	RUN=$((RUN + 1))
	kids="$(children)"
	c0="$(mq_reaped_ticks "$PM")"
	out="$(PGOPTIONS="-c mq.enable_fetch_scan=$scan" "$PGBENCH" -n -M prepared -t "$PAGES" \
		-D off=0 -D run="$RUN" -f "$script" 2>&1)" || { printf '%s\n' "$out" >&2; mq_die "pgbench failed: $key"; }
	local i=0
	while ((i++ < 500)) && (($(children) > kids)); do sleep 0.01; done
	c1="$(mq_reaped_ticks "$PM")"
	tps="$(sed -nE 's/^tps = ([0-9.]+) \(without.*/\1/p' <<<"$out")"
	CPU[$key]="${CPU[$key]:-} $(awk -v r="$RECORDS" -v d="$((c1 - c0))" -v t="$TICK" 'BEGIN { printf "%.0f", r / (d / t) }')"
	WALL[$key]="${WALL[$key]:-} $(awk -v p="$tps" -v n="$PAGE" 'BEGIN { printf "%.0f", p * n }')"
	say "  $key: $((c1 - c0)) ticks of server CPU, $tps calls/s"
}

say "warm-up: one pass of each"
for s in cnt_mq cnt_plain rows_mq rows_plain; do one warmup "$W/$s.sql"; done
[[ "$(psqlq -c "EXPLAIN SELECT * FROM mq.fetch('seq', 0, 0)" | head -n 1)" == *MqFetch* ]] ||
	mq_die "mq.fetch is not planned as the streaming scan: is this build installed?"
ORDER=(cnt_plain cnt_stream cnt_fscan rows_plain rows_stream rows_fscan poll_stream poll_fscan pollr_stream pollr_fscan)
for ((r = 1; r <= RUNS; r++)); do
	say "round $r"
	keys=("${ORDER[@]}")
	((r % 2)) || keys=(pollr_fscan pollr_stream poll_fscan poll_stream rows_fscan rows_stream rows_plain
		cnt_fscan cnt_stream cnt_plain)
	for k in "${keys[@]}"; do
		case "$k" in
		cnt_plain) one "$k" "$W/cnt_plain.sql" ;;
		cnt_stream) one "$k" "$W/cnt_mq.sql" on ;;
		cnt_fscan) one "$k" "$W/cnt_mq.sql" off ;;
		rows_plain) one "$k" "$W/rows_plain.sql" ;;
		rows_stream) one "$k" "$W/rows_mq.sql" on ;;
		rows_fscan) one "$k" "$W/rows_mq.sql" off ;;
		poll_stream) one "$k" "$W/poll_mq.sql" on ;;
		poll_fscan) one "$k" "$W/poll_mq.sql" off ;;
		pollr_stream) one "$k" "$W/pollr_mq.sql" on ;;
		pollr_fscan) one "$k" "$W/pollr_mq.sql" off ;;
		esac
	done
done

echo
echo "server CPU per record, $RECORDS records in pages of $PAGE, median of $RUNS runs ($(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg))"
{
	printf 'read|records per CPU-second|vs plain|runs|wall-clock records/s\n'
	for k in "${ORDER[@]}"; do
		base=cnt_plain
		[[ "$k" == cnt_* ]] || base=rows_plain
		m="$(median "${CPU[$k]}")" b="$(median "${CPU[$base]}")"
		printf '%s|%s|%s|%s|%s\n' "$k" "$m" "$(awk -v m="$m" -v b="$b" 'BEGIN { printf "%.2f", m / b }')" \
			"$(echo ${CPU[$k]})" "$(median "${WALL[$k]}")"
	done
} | column -t -s '|'
