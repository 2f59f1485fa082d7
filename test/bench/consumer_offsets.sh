#!/usr/bin/env bash
# What __consumer_offsets costs an offset commit (issue 23, item 3;
# docs/design.md, "__consumer_offsets").  mq.commit_offset calls by
# pgbench for SECONDS each (default 5), in one cluster, in rounds that
# alternate without the topic (commits update mq.consumer_offset only)
# and with it (each commit also appends its record under the topic
# partition's produce lock), three ways:
#   one:    1 client, one group
#   groups: 4 clients, a group each (groups spread over the partitions)
#   shared: 4 clients of one group, each committing its own partition
#           (all four append to the group's one topic partition)
# each with synchronous_commit on (a WAL flush per commit, which
# dominates) and off (the CPU and lock cost shows).  Prints commits/s per
# way (median of ROUNDS rounds, default 3) and the ratio with / without.
#   test/bench/consumer_offsets.sh [SECONDS [ROUNDS]]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

SECS="${1:-5}"
ROUNDS="${2:-3}"
mq_phase "build"
mq_build_install || mq_die "build/install failed"
cluster_start coffsets_bench
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION mq" -c "SELECT mq.create_topic('cb', 4)" \
	-c "SELECT count(*) FROM generate_series(0, 3) p, LATERAL mq.send_batch('cb', NULL,
	      (SELECT array_agg('x'::bytea) FROM generate_series(1, 1000)), partition => p)" >/dev/null
work=$(mktemp -d)
chmod 755 "$work"
mq_on_exit "rm -rf '$work'"
cat >"$work/one.sql" <<'EOF'
\set p random(0, 3)
\set o random(1, 1000)
SELECT mq.commit_offset('bench-one', 'cb', :p, :o);
EOF
cat >"$work/groups.sql" <<'EOF'
\set p random(0, 3)
\set o random(1, 1000)
SELECT mq.commit_offset('bench-g' || :client_id, 'cb', :p, :o);
EOF
cat >"$work/shared.sql" <<'EOF'
\set o random(1, 1000)
SELECT mq.commit_offset('bench-shared', 'cb', :client_id, :o);
EOF

tps() { # way clients [synchronous_commit]
	PGOPTIONS="-c synchronous_commit=${3:-on}" \
		pgbench -n -T "$SECS" -c "$2" -j "$2" -f "$work/$1.sql" 2>&1 | grep -oP 'tps = \K[0-9.]+'
}
declare -A RES
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in without with; do
		if [[ "$mode" == with ]]; then
			psql -X -q -c "SELECT mq.ensure_consumer_offsets()" >/dev/null
		else
			psql -X -q -c "SELECT mq.drop_topic(topic) FROM mq.topics WHERE topic = '__consumer_offsets'" >/dev/null
		fi
		for sc in on off; do
			RES[one.$sc.$mode]+="$(tps one 1 $sc) "
			RES[groups.$sc.$mode]+="$(tps groups 4 $sc) "
			RES[shared.$sc.$mode]+="$(tps shared 4 $sc) "
		done
	done
done
records="$(psql -X -At -c "SELECT sum(log_end_offset) FROM mq.partitions WHERE topic = '__consumer_offsets'")"
cluster_stop

median() { tr ' ' '\n' <<<"$1" | grep . | mq_median; }
echo
echo "| commits ($SECS s, median of $ROUNDS rounds) | synchronous_commit | commits/s without __consumer_offsets | with it | ratio |"
echo "|---|---|---:|---:|---:|"
for sc in on off; do
	for way in one groups shared; do
		a="$(median "${RES[$way.$sc.without]}")"
		b="$(median "${RES[$way.$sc.with]}")"
		case $way in
		one) label="1 client, one group" ;;
		groups) label="4 clients, a group each" ;;
		shared) label="4 clients of one group, a partition each" ;;
		esac
		printf '| %s | %s | %.0f | %.0f | %s |\n' "$label" "$sc" "$a" "$b" "$(mq_ratio "$b" "$a")"
	done
done
echo "(the last round appended $records records to __consumer_offsets)"
