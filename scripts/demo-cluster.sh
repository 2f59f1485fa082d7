#!/usr/bin/env bash
# Demo of replication (docs/replication.md) on this machine: three data
# nodes, a highly available coordinator (pg_auto_failover: a primary and a
# synchronous standby, scripts/coord-ha.sh) and three mq-broker processes
# on loopback, all throwaway (stopped and removed at exit, also on failure
# or ^C).
#
#   1. a topic with replication.factor 3 and min.insync.replicas 2
#   2. an idempotent producer writes batches with acks=all to the leader
#   3. the leader's node is killed (kill -9); a new leader is elected and
#      the producer carries on (retrying a batch with the same sequence
#      never writes it twice)
#   4. the coordinator's primary is killed (kill -9 of pg_autoctl and
#      PostgreSQL): the leader keeps acknowledging, the standby is promoted
#      and the brokers find it (multi-host conninfo, read-write)
#   5. everything is read back from the new leader and counted; the killed
#      node restarts, truncates by leader epoch, catches up and rejoins
#
# Usage: scripts/demo-cluster.sh   (builds and installs mq first, unless
# MQ_DEMO_SKIP_BUILD=1, which scripts/demo.sh sets after building)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

BATCHES=${MQ_DEMO_BATCHES:-10}		# per phase, before and after the kill
PER_BATCH=10

if [[ -z "${MQ_DEMO_SKIP_BUILD:-}" ]]; then
	mq_phase "dependencies (scripts/install-deps.sh run build)"
	bash scripts/install-deps.sh run build
	mq_pg_paths || mq_die "pg_config not found after installing the dependencies"
	mq_phase "build + install"
	mq_build_install || mq_die "build/install failed"
fi

mq_phase "3 data nodes and a highly available coordinator (throwaway PostgreSQL clusters on 127.0.0.1)"
for n in node1 node2 node3; do
	cluster_start "$n" "log_min_messages = warning"
	cluster_psql "$n" -c "CREATE EXTENSION mq"
done
coord_ha_start coord

# each broker connects as the login role mq_broker, no superuser: broker_start
# creates it and grants it what a broker needs (mq.grant_broker on the node,
# mq_coord.grant_broker on the coordinator; docs/replication.md)
mq_phase "3 brokers, one per data node, as the non-superuser role $MQ_BROKER_ROLE"
for i in 1 2 3; do
	broker_start "$i" "node$i" coord
	echo "mq-broker $i: node$i, log ${MQ_CLUSTER_DIR[node$i]}/broker.log"
done
coord() { cluster_psql coord -A -t -c "$1"; }
for ((i = 0; i < 100; i++)); do
	[[ "$(coord 'SELECT count(*) FROM mq_coord.broker')" == 3 ]] && break
	sleep 0.1
done

mq_phase "a replicated topic: orders, 1 partition, replication.factor 3, min.insync.replicas 2"
coord "SELECT mq_coord.create_topic('orders', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')" >/dev/null
leader() { coord "SELECT coalesce(leader, -1) FROM mq_coord.partition WHERE topic = 'orders' AND partition = 0"; }
for ((i = 0; i < 100; i++)); do
	[[ "$(leader)" -gt 0 ]] && break
	sleep 0.1
done
metadata() {
	cluster_psql coord -c "SELECT topic, partition, leader, leader_node, leader_epoch, isr, replicas
	                         FROM mq_coord.metadata"
}
metadata

L="$(leader)"
PRODUCER_ID="$(cluster_psql "node$L" -A -t -c "SELECT producer_id FROM mq.init_producer()")"
KNOWN="$L"
ACKED=0
# produce_batch SEQ: send records r<SEQ>..r<SEQ+9> with acks=all to whoever
# leads, retrying with the same sequence until acknowledged
produce_batch() {
	local seq="$1" vals="" l out tries=0
	for ((k = 0; k < PER_BATCH; k++)); do
		vals+="${vals:+,}'r$((seq + k))'"
	done
	while :; do
		# the last leader named while no coordinator answers: it serves on
		l="$(leader 2>/dev/null)" && KNOWN="$l" || l="$KNOWN"
		if [[ "$l" -gt 0 ]] && out="$(cluster_psql "node$l" -A -t -c \
			"CALL mq.produce('orders', NULL, ARRAY[$vals]::bytea[], 0, 'all', $PRODUCER_ID, 0, $seq, 5000)" 2>&1)"; then
			printf 'batch at sequence %3d: acknowledged by broker %d at offset %s%s\n' \
				"$seq" "$l" "${out%%|*}" "$( ((tries)) && echo " (after $tries failed attempts)")"
			ACKED=$((ACKED + PER_BATCH))
			return
		fi
		tries=$((tries + 1))
		if ((tries == 1)); then
			echo "batch at sequence $seq: leader $l refused or is gone ($(echo "${out:-no leader yet}" | head -n 1)); retrying"
		fi
		sleep 0.1
	done
}

mq_phase "produce $BATCHES batches of $PER_BATCH records with acks=all (idempotent producer $PRODUCER_ID)"
for ((b = 0; b < BATCHES; b++)); do
	produce_batch $((b * PER_BATCH))
done

L="$(leader)"
mq_phase "kill -9 the leader's node (node$L)"
cluster_kill9 "node$L"
echo "node$L is gone"

mq_phase "keep producing: the brokers elect a new leader from the in-sync replicas"
for ((b = BATCHES; b < 2 * BATCHES; b++)); do
	produce_batch $((b * PER_BATCH))
done
metadata

P="$(coord_ha coord primary)"
mq_phase "kill -9 the coordinator's primary (node $P of 2: pg_autoctl and PostgreSQL)"
coord_ha coord kill9 "$P"
START=$SECONDS
for ((b = 2 * BATCHES; b < 3 * BATCHES; b++)); do
	produce_batch $((b * PER_BATCH))
done
echo "$BATCHES batches acknowledged in $((SECONDS - START)) s meanwhile; waiting for the standby to take writes"
until coord "SELECT mq_coord.broker_alive(leader, 3000) FROM mq_coord.partition WHERE topic = 'orders'" 2>/dev/null | grep -qx t; do
	((SECONDS - START < 120)) || mq_die "the coordinator did not fail over"
	sleep 0.2
done
echo "the standby is the coordinator's primary now ($((SECONDS - START)) s after the kill); the leader is back on it"
coord_ha coord restart "$P"
coord_ha coord wait
echo "the old primary rejoined as the standby"

NEW="$(leader)"
mq_phase "consume everything from the new leader (node$NEW) with mq.fetch"
read -r CONSUMED DISTINCT FIRST LAST MISSING < <(cluster_psql "node$NEW" -A -t -F ' ' -c "
	SELECT count(*), count(DISTINCT value), min(msg_offset), max(msg_offset),
	       (SELECT count(*) FROM generate_series(0, $ACKED - 1) g
	         WHERE convert_to('r' || g, 'UTF8') NOT IN (SELECT value FROM mq.fetch('orders', 0, 0, 100000)))
	  FROM mq.fetch('orders', 0, 0, 100000)")
echo "acknowledged: $ACKED records"
echo "consumed:     $CONSUMED records (offsets $FIRST..$LAST), $DISTINCT distinct"
echo "missing:      $MISSING acknowledged records; duplicated: $((CONSUMED - DISTINCT))"

mq_phase "restart node$L: it truncates by leader epoch, catches up and rejoins the ISR"
cluster_restart "node$L"
for ((i = 0; i < 300; i++)); do
	[[ "$(coord "SELECT cardinality(isr) FROM mq_coord.partition WHERE topic = 'orders'")" == 3 ]] && break
	sleep 0.1
done
metadata
for i in 1 2 3; do
	printf 'node%d: ' "$i"
	cluster_psql "node$i" -A -t -c "SELECT role || ', log end ' || log_end_offset || ', high watermark '
		|| high_watermark FROM mq.replica_status WHERE topic = 'orders'"
done

mq_phase "stop brokers and clusters"
for i in 1 2 3; do broker_stop "$i"; done
if [[ "$MISSING" != 0 || "$CONSUMED" != "$DISTINCT" || "$CONSUMED" != "$ACKED" ]]; then
	mq_die "replication demo: $MISSING lost, $((CONSUMED - DISTINCT)) duplicated"
fi
echo "replication demo done: $ACKED acknowledged, $CONSUMED consumed, none lost, none duplicated"
