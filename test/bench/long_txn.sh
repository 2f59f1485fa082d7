#!/usr/bin/env bash
# How a long producing transaction affects others (issue: exactly-once,
# item 5).  For 4 s, each of three pgbench clients works on its own: one
# produces to partition 0, one to partition 1, one fetches partition 0.
# The run is done twice in one cluster: alone, and while another session
# holds a transaction open that produced to partition 0 and sleeps 3 s.
# Prints each client's transactions per second and the ratio.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

mq_phase "build"
mq_build_install || mq_die "build/install failed"
cluster_start longtxn
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION mq" -c "SELECT mq.create_topic('lt', 2)" >/dev/null
work=$(mktemp -d)
chmod 755 "$work"
mq_on_exit "rm -rf '$work'"
echo "SELECT * FROM mq.send('lt', NULL::bytea, '\x01'::bytea, partition => 0);" > "$work/p0.sql"
echo "SELECT * FROM mq.send('lt', NULL::bytea, '\x01'::bytea, partition => 1);" > "$work/p1.sql"
echo "SELECT count(*) FROM mq.fetch('lt', 0, 0, 100);" > "$work/fetch.sql"

measure() {
	local tag="$1"
	for s in p0 p1 fetch; do
		pgbench -n -T 4 -c 1 -f "$work/$s.sql" > "$work/$tag.$s.out" 2>&1 &
	done
	wait
	for s in p0 p1 fetch; do
		printf '%s ' "$(grep -oP 'tps = \K[0-9.]+' "$work/$tag.$s.out")"
	done
}

alone=$(measure alone)
psql -X -q -c "BEGIN" -c "SELECT * FROM mq.send('lt', NULL::bytea, '\x02'::bytea, partition => 0)" \
	-c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
sleep 0.2
held=$(measure held)
wait
cluster_stop

read -r a0 a1 af <<<"$alone"
read -r h0 h1 hf <<<"$held"
echo
echo "| client (4 s) | tps alone | tps with a 3 s producing transaction on partition 0 | ratio |"
echo "|---|---|---|---|"
echo "| producer, partition 0 | $a0 | $h0 | $(mq_ratio "$h0" "$a0") |"
echo "| producer, partition 1 | $a1 | $h1 | $(mq_ratio "$h1" "$a1") |"
echo "| consumer, partition 0 | $af | $hf | $(mq_ratio "$hf" "$af") |"
