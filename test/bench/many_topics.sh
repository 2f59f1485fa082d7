#!/usr/bin/env bash
# Many topics (issue 15, "Scale"): 10,000 topics of 4 partitions, as one
# curve in ONE run on ONE throwaway cluster.  Topics are created in steps
# (to 10, 100, 1,000, 2,500, 5,000, 10,000 by default); after each step:
#
#   create      ms per topic of the step (mq.create_topic(name, 4)), beside
#               creating the same four tables with a unique index each,
#               plain, in a second database of the same cluster
#   produce     µs per single-record send (one per transaction, fsync on)
#               to a random partition of a random topic, pgbench, 2 clients
#   fetch       µs per mq.fetch of a random partition of a random topic
#   memory      a backend that sent one record to every partition of every
#               topic, one statement each: its pg_backend_memory_contexts
#               total, CacheMemoryContext (relcache, catcache) and mq's
#               topic cache, against a fresh backend
#   catalog     pg_class rows, the size of the system catalogs
#   maintenance ms per mq.run_maintenance() pass (median of 3)
#
# The background worker runs maintenance every second, as it would in
# production.  Not a test: prints figures (with --out FILE a markdown
# table, with --data FILE the plot's input) and never fails on them.
# Uses the INSTALLED extension.
#
# Usage: test/bench/many_topics.sh [--steps "10 100 ..."] [--duration S]
#                                  [--out FILE] [--data FILE]
set -euo pipefail

# shellcheck source=test/bench/setup.bash
source "$(dirname "${BASH_SOURCE[0]}")/setup.bash"

STEPS="10 100 1000 2500 5000 10000" DURATION=5 OUT="" DATA=""
while (($#)); do
	case "$1" in
	--steps) STEPS="${2:?}"; shift ;;
	--duration) DURATION="${2:?}"; shift ;;
	--out) OUT="${2:?}"; shift ;;
	--data) DATA="${2:?}"; shift ;;
	*) mq_die "unknown option $1" ;;
	esac
	shift
done

mq_bench_work topics

mq_phase "a throwaway cluster (fsync on)"
bench_node topics "fsync = on" "shared_buffers = 256MB" "max_wal_size = 4GB" \
	"log_min_messages = warning"
sql() { cluster_psql topics -A -t -c "$1"; }
sql "CREATE EXTENSION mq" >/dev/null
sql "CREATE DATABASE plain" >/dev/null
cluster_psql topics -d "$(cluster_conninfo topics | sed 's/dbname=postgres/dbname=plain/')" -q -c "
CREATE FUNCTION plain_topic(t text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    FOR p IN 0..3 LOOP
        EXECUTE format('CREATE TABLE %I (msg_offset bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
                                         key bytea, value bytea, headers jsonb)', t || '_' || p);
        EXECUTE format('CREATE UNIQUE INDEX ON %I (msg_offset)', t || '_' || p);
    END LOOP;
END \$\$"

# ms SQL [DB]: wall-clock milliseconds of one statement (in its own session)
ms() {
	local conn
	conn="$(cluster_conninfo topics)"
	[[ -n "${2:-}" ]] && conn="${conn/dbname=postgres/dbname=$2}"
	local out
	out="$(psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$conn" -c '\timing on' -c "$1" 2>&1)" ||
		mq_die "failed: $1: $out"
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1
}
# bench_us FILE CLIENTS: µs per transaction per client of one pgbench run
bench_us() {
	local tps
	tps="$("$PGBENCH" -n -M simple -c "$2" -j "$2" -T "$DURATION" -f "$1" \
		-d "$(cluster_conninfo topics)" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')"
	[[ -n "$tps" ]] || mq_die "pgbench failed: $1"
	awk -v t="$tps" -v c="$2" 'BEGIN { printf "%.0f", 1e6 * c / t }'
}
# memory N: one backend sends a record to each partition of topics 1..N,
# then reports its memory: total, CacheMemoryContext subtree, mq topic cache
memory() {
	cluster_psql topics -A -t -F ' ' <<-EOF
		SELECT format('SELECT count(*) FROM mq.send(%L, NULL::bytea, %L::bytea, partition => %s)', 't' || t, 'x', p)
		  FROM generate_series(1, $1) t, generate_series(0, 3) p \gexec
		SELECT (SELECT sum(total_bytes) FROM pg_backend_memory_contexts),
		       (SELECT total_bytes FROM pg_backend_memory_contexts WHERE name = 'CacheMemoryContext')
		       + (SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts WHERE parent = 'CacheMemoryContext'),
		       (SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts WHERE name = 'mq topic cache');
	EOF
}
# the last line of memory's output (the \gexec statements print theirs first)
memory_last() { memory "$1" | tail -1; }

fresh="$(cluster_psql topics -A -t -c "SELECT sum(total_bytes) FROM pg_backend_memory_contexts")"
rows=() have=0
for n in $STEPS; do
	mq_phase "$n topics"
	t1="$(date +%s%N)"
	sql "SELECT 'SELECT mq.create_topic(''t' || i || ''', 4);' FROM generate_series($((have + 1)), $n) i" |
		cluster_psql topics >/dev/null
	t2="$(date +%s%N)"
	sql "SELECT 'SELECT plain_topic(''t' || i || ''');' FROM generate_series($((have + 1)), $n) i" |
		cluster_psql topics -d "$(cluster_conninfo topics | sed 's/dbname=postgres/dbname=plain/')" >/dev/null
	t3="$(date +%s%N)"
	create="$(awk -v a="$t1" -v b="$t2" -v n=$((n - have)) 'BEGIN { printf "%.1f", (b - a) / 1e6 / n }')"
	pcreate="$(awk -v a="$t2" -v b="$t3" -v n=$((n - have)) 'BEGIN { printf "%.1f", (b - a) / 1e6 / n }')"
	have=$n
	printf '\\set t random(1, %d)\n\\set p random(0, 3)\nSELECT count(*) FROM mq.send(%s || :t, NULL::bytea, %s::bytea, partition => :p);\n' \
		"$n" "'t'" "'x'" >"$WORK/send.sql"
	printf '\\set t random(1, %d)\n\\set p random(0, 3)\nSELECT count(*) FROM mq.fetch(%s || :t, :p, 0, 10);\n' \
		"$n" "'t'" >"$WORK/fetch.sql"
	read -r mem cache topic_cache <<<"$(memory_last "$n")"
	send="$(bench_us "$WORK/send.sql" 2)"
	fetch="$(bench_us "$WORK/fetch.sql" 2)"
	maint="$(for _ in 1 2 3; do ms "SELECT mq.run_maintenance()"; done | mq_median)"
	read -r relations catalog <<<"$(sql "SELECT (SELECT count(*) FROM pg_class),
		(SELECT sum(pg_total_relation_size(oid)) FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace AND relkind = 'r')" | tr '|' ' ')"
	prelations="$(cluster_psql topics -d "$(cluster_conninfo topics | sed 's/dbname=postgres/dbname=plain/')" -A -t -c "SELECT count(*) FROM pg_class")"
	line="$n $create $pcreate $send $fetch $mem $cache $topic_cache $maint $relations $catalog $prelations"
	echo "$line" | awk -v fresh="$fresh" '{ printf "%d topics: create %s ms/topic (plain %s), send %s us, fetch %s us, backend %.1f MB (fresh %.1f MB; cache %.1f MB, mq topic cache %.1f MB), maintenance %s ms, pg_class %d rows (plain db %d), catalogs %.1f MB\n", $1, $2, $3, $4, $5, $6 / 1048576, fresh / 1048576, $7 / 1048576, $8 / 1048576, $9, $10, $12, $11 / 1048576 }'
	rows+=("$line")
done
cluster_stop topics

mq_phase "results"
table="| topics (× 4 partitions) | create, ms/topic | plain tables, ms/topic | send, µs | fetch, µs | backend that touched all, MB | of which cache, MB | mq topic cache, MB | maintenance pass, ms | pg_class rows (plain) | system catalogs, MB |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
[[ -n "$DATA" ]] && echo "# topics create_ms plain_create_ms send_us fetch_us backend_bytes cache_bytes topic_cache_bytes maint_ms pg_class catalog_bytes plain_pg_class" >"$DATA"
for line in "${rows[@]}"; do
	table+="
$(echo "$line" | awk '{ printf "| %d | %s | %s | %s | %s | %.1f | %.1f | %.2f | %s | %d (%d) | %.1f |", $1, $2, $3, $4, $5, $6 / 1048576, $7 / 1048576, $8 / 1048576, $9, $10, $12, $11 / 1048576 }')"
	[[ -n "$DATA" ]] && echo "$line" >>"$DATA"
done
table+="

A fresh backend: $(awk -v f="$fresh" 'BEGIN { printf "%.1f", f / 1048576 }') MB."
echo "$table"
[[ -n "$OUT" ]] && echo "$table" >"$OUT"
exit 0
