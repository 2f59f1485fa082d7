# shellcheck shell=bash
# The setup the benchmarks share (test/bench/{ackpath,replication,core,
# fetch_cpu,fetch_wake,kafka_epochs,kafka_lookups,many_topics,idle_cpu}.sh
# source it right after `set -euo pipefail`): what each of them repeated.
# Sourcing it
#
#   sets HERE (test/bench) and REPO (the checkout), sources scripts/lib.sh,
#   finds PostgreSQL 15 (mq_pg_paths: it uses the INSTALLED extension,
#   MQ_PG_ROOT honoured) and sets PGBENCH, its pgbench.
#
# Then, once the script has read its options:
#
#   bench_node NAME [CONF...]
#       one throwaway cluster NAME (scripts/lib.sh's cluster_start with the
#       postgresql.conf lines CONF; stopped at exit), W its work directory
#       (the server reads and writes it), psqlq (psql on it, quiet,
#       unaligned, stopping at the first error)
#   bench_replicated [--brokers-from REPO] [CONF...]
#       three data nodes node1..node3 and a coordinator coord (each a
#       throwaway cluster with CONF and CREATE EXTENSION mq), their brokers
#       1..3 (the checkout's build, or REPO's), coord_sql (one statement on
#       the coordinator, its value), and waits until the three brokers
#       registered
#   median WORDS
#       the median of the numbers WORDS
#   base_kafka REV DIR
#       mq-kafka as of git revision REV, built in DIR (made); prints its
#       path (the "before" of an A/B against this tree's)
#
# MQ_BENCH_CONF (environment): more postgresql.conf lines, one a line, for
# every server bench_node and bench_replicated start, after the script's
# own: an A/B of a setting is the script run once with and once without,
# e.g. MQ_BENCH_CONF='mq.malloc_trim_threshold = 0' (docs/benchmarks.md,
# "Freed memory kept for the next batch").
# shellcheck source-path=SCRIPTDIR/../..
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"
# shellcheck disable=SC2034 # the benchmarks run it
PGBENCH="$PG_BINDIR/pgbench"

# the lines of MQ_BENCH_CONF, into the array BENCH_CONF
bench_conf() {
	BENCH_CONF=()
	[[ -z "${MQ_BENCH_CONF:-}" ]] || mapfile -t BENCH_CONF <<<"$MQ_BENCH_CONF"
}
bench_node() {
	bench_conf
	cluster_start "$@" "${BENCH_CONF[@]}"
	W="$MQ_CLUSTER/work"
	mkdir -p "$W"
	if mq_is_root; then chown postgres:postgres "$W"; fi
}
psqlq() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

coord_sql() { cluster_psql coord -A -t -c "$1"; }
bench_replicated() {
	local n i from="$MQ_REPO_ROOT"
	if [[ "${1:-}" == --brokers-from ]]; then
		from="${2:?--brokers-from REPO}"
		shift 2
	fi
	bench_conf
	for n in node1 node2 node3 coord; do
		cluster_start "$n" "$@" "${BENCH_CONF[@]}"
		cluster_psql "$n" -c "CREATE EXTENSION mq" >/dev/null
	done
	for i in 1 2 3; do
		MQ_REPO_ROOT="$from" broker_start "$i" "node$i" coord
	done
	for ((i = 0; i < 300; i++)); do
		[[ "$(coord_sql 'SELECT count(*) FROM mq_coord.broker')" == 3 ]] && return 0
		sleep 0.1
	done
	mq_die "the three brokers did not register"
}

median() { tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base_kafka() {
	mkdir -p "$2"
	git -C "$REPO" archive "$1" broker src/errcodes.txt scripts mq.control | tar -x -C "$2"
	make -s -C "$2/broker" mq-kafka/mq-kafka >/dev/null
	printf '%s\n' "$2/broker/mq-kafka/mq-kafka"
}
