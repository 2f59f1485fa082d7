#!/usr/bin/env bash
# Cost of authorization on the produce path, in ONE run: the same pgbench
# workloads against a build without the checks (BASE_REV, default the last
# commit before them) and against the work tree, on two throwaway clusters
# with the same settings, runs alternating; a non-superuser role with
# grants produces, so the checks run (from their cache) on every call.
#
#   A  single-record produce, one mq.send per transaction, 1 client
#   B  batch produce, mq.send_batch of 1,000 x 100 B records per transaction
#
# Prints records/s per run, the medians and new/base (goal >= 0.97).
# Timing on a shared 2-core machine is noisy, so it also counts CPU
# instructions (valgrind --tool=callgrind, repeatable whatever else runs)
# of a single-user backend that sends N records one call at a time as the
# same role, on each build: the difference per call is what the checks
# cost.
#
# Usage: test/bench/acl.sh [--duration S] [--runs N] [--calls N]
# Environment: BASE_REV (default 1837dfc), BENCH_DURATION (10), BENCH_RUNS (3).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"
mq_pg_paths || mq_die "PostgreSQL 15 (pg_config) not found"

DURATION="${BENCH_DURATION:-10}"
RUNS="${BENCH_RUNS:-3}"
BASE_REV="${BASE_REV:-1837dfc}"
CALLS="${BENCH_CALLS:-2000}"
while (($#)); do
	case "$1" in
	--duration) DURATION="$2"; shift 2 ;;
	--runs) RUNS="$2"; shift 2 ;;
	--calls) CALLS="$2"; shift 2 ;;
	*) mq_die "unknown option $1" ;;
	esac
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-acl.XXXXXX")"
chmod 755 "$WORK"
mq_on_exit "git -C '$REPO' worktree remove --force '$WORK/base-src' 2>/dev/null; rm -rf '$WORK'"

# build ROOT SRC: a private PostgreSQL under ROOT with SRC's mq installed
build() {
	bash "$REPO/scripts/pg-private.sh" "$1" >/dev/null
	make -s -C "$2" PG_CONFIG="$PG_CONFIG" >/dev/null
	make -s -C "$2" install PG_CONFIG="$PG_CONFIG" DESTDIR="$1" >/dev/null
}
mq_phase "build base ($BASE_REV) and work tree into private installations"
git -C "$REPO" worktree add --detach "$WORK/base-src" "$BASE_REV" >/dev/null 2>&1
build "$WORK/base" "$WORK/base-src"
build "$WORK/new" "$REPO"

# start SIDE: a cluster from that installation, topic t, role bench
start() {
	local side="$1" saved="$PATH"
	PATH="$WORK/$side$("$PG_CONFIG" --bindir):$saved"
	cluster_start "$side" "fsync = on" "synchronous_commit = on" "shared_buffers = 512MB" >/dev/null 2>&1
	PATH="$saved"
	cluster_psql "$side" -c "CREATE EXTENSION mq" \
		-c "SELECT mq.create_topic('t', 1)" \
		-c "CREATE ROLE bench LOGIN" \
		-c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mq TO bench"
	if [[ "$side" == new ]]; then
		cluster_psql "$side" -c "SELECT mq.grant('write', 'topic', 't', 'bench')" >/dev/null
	fi
}
mq_phase "two clusters"
start base
start new

printf "SELECT * FROM mq.send('t', NULL::bytea, convert_to(repeat('x', 100), 'UTF8'), partition => 0);\n" >"$WORK/send.sql"
printf "SELECT count(*) FROM mq.send_batch('t', NULL::bytea[], (SELECT array_agg(convert_to(repeat('x', 100), 'UTF8')) FROM generate_series(1, 1000)), partition => 0);\n" >"$WORK/batch.sql"

# rate SIDE SCRIPT RECORDS_PER_TXN: records/s of one pgbench run as bench
rate() {
	local tps
	tps="$(pgbench -n -T "$DURATION" -c 1 -f "$2" -U bench -h "${MQ_CLUSTER_DIR[$1]}" \
		-p "${MQ_CLUSTER_PORT[$1]}" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
	awk -v t="$tps" -v n="$3" 'BEGIN { printf "%.0f\n", t * n }'
}
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for w in "send 1 A_single_send" "batch 1000 B_batch_1000"; do
	read -r script per name <<<"$w"
	base=() new=()
	for ((i = 1; i <= RUNS; i++)); do
		base+=("$(rate base "$WORK/$script.sql" "$per")")
		new+=("$(rate new "$WORK/$script.sql" "$per")")
		printf '%s run %d: base %s records/s, with checks %s records/s\n' "$name" "$i" "${base[-1]}" "${new[-1]}"
	done
	mb="$(median "${base[@]}")" mn="$(median "${new[@]}")"
	printf '%s median: base %s, with checks %s, ratio %s\n' "$name" "$mb" "$mn" \
		"$(awk -v a="$mn" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')"
done

# instructions SIDE: callgrind's instruction count of a single-user backend
# of that build sending $CALLS records (the cluster is stopped for it)
instructions() {
	local side="$1" data="${MQ_CLUSTER_DIR[$1]}/data" out="${MQ_CLUSTER_DIR[$1]}/callgrind.out"
	as_postgres pg_ctl -D "$data" -m fast -w stop >/dev/null
	{
		echo "SET ROLE bench;"
		for ((i = 0; i < CALLS; i++)); do
			echo "SELECT * FROM mq.send('t', NULL::bytea, '\\x00'::bytea, partition => 0);"
		done
	} >"$WORK/calls.sql"
	chmod 644 "$WORK/calls.sql"
	as_postgres valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$WORK/$side$("$PG_CONFIG" --bindir)/postgres" --single -D "$data" \
		-c synchronous_commit=off postgres <"$WORK/calls.sql" >"$WORK/single.$side.log" 2>&1 ||
		mq_die "single-user run of $side failed: $(tail -5 "$WORK/single.$side.log")"
	sed -n 's/^summary: //p' "$out"
}
if command -v valgrind >/dev/null; then
	mq_phase "instructions per mq.send (callgrind, $CALLS calls)"
	ib="$(instructions base)" in="$(instructions new)"
	printf 'instructions: base %s, with checks %s, per call %+.0f (%+.2f%%)\n' "$ib" "$in" \
		"$(awk -v a="$in" -v b="$ib" -v n="$CALLS" 'BEGIN { print (a - b) / n }')" \
		"$(awk -v a="$in" -v b="$ib" 'BEGIN { print (a - b) * 100 / b }')"
fi
