#!/usr/bin/env bash
# What the produce contract (src/sql/31_produce_acks.sql) costs on the
# write path, against the bare append in the same run: pgbench, one
# client, -M prepared, batches of B records of 100 bytes to one partition.
#
#   send      SELECT count(*) FROM mq.send_batch(...)            (baseline)
#   acks1     SELECT count(*) FROM mq.produce_records(..., acks => '1')
#   acksall   SELECT count(*) FROM mq.produce_records(..., acks => 'all'):
#             the same plus the ISR read of acks=all (the partition is not
#             replicated, so no wait is owed; the wait itself is
#             commit_wait.c's, unchanged, and on one node without a broker
#             a leader-alone ISR's high watermark does not move)
#
# Rounds rotate the order; the median tx/s of each and its ratio to
# `send` are printed.  Uses the INSTALLED extension (build and install it
# first); a throwaway cluster (scripts/lib.sh), stopped at exit.
#
#   bash test/bench/produce_contract.sh [--duration S] [--rounds N] [--batch B]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
DURATION=5
ROUNDS=3
BATCH=100
while [[ $# -gt 0 ]]; do
	case "$1" in
	--duration) DURATION="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	--batch) BATCH="$2"; shift 2 ;;
	*) mq_die "usage: $0 [--duration S] [--rounds N] [--batch B]" ;;
	esac
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-contract.XXXXXX")"
chmod 755 "$WORK"
mq_on_exit "rm -rf $WORK"

cluster_start contract >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE EXTENSION mq;
SELECT mq.create_topic('plain', 1);
CREATE FUNCTION bench_vals() RETURNS bytea[] LANGUAGE sql IMMUTABLE
    AS \$\$ SELECT array_agg(convert_to(repeat('x', 100), 'UTF8')) FROM generate_series(1, $BATCH) \$\$;
SQL

echo "SELECT count(*) FROM mq.send_batch('plain', NULL, bench_vals(), partition => 0);" >"$WORK/send.sql"
echo "SELECT count(*) FROM mq.produce_records('plain', NULL, bench_vals(), partition => 0, acks => '1');" >"$WORK/acks1.sql"
echo "SELECT count(*) FROM mq.produce_records('plain', NULL, bench_vals(), partition => 0, acks => 'all');" >"$WORK/acksall.sql"

declare -A TPS=()
variants=(send acks1 acksall)
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#variants[@]}; k++)); do
		v="${variants[$(((k + r) % ${#variants[@]}))]}"
		tps="$(pgbench -n -M prepared -c 1 -T "$DURATION" -f "$WORK/$v.sql" 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
		TPS[$v]+="$tps "
	done
done

echo "batches of $BATCH records, $ROUNDS rounds of ${DURATION}s, one client"
printf '%-8s %12s %14s\n' variant 'tx/s median' 'ratio to send'
for v in "${variants[@]}"; do
	med="$(tr ' ' '\n' <<<"${TPS[$v]}" | grep . | mq_median)"
	base="$(tr ' ' '\n' <<<"${TPS[send]}" | grep . | mq_median)"
	printf '%-8s %12.1f %14.2f\n' "$v" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN {print a / b}')"
done
