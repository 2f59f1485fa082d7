#!/usr/bin/env bash
# mq-kafka against SQL on the same node in the same run: librdkafka
# (test/kafka/rdk_client.c) producing and consuming 100-byte records
# through mq-kafka, and mqctl perf doing the same through SQL.
#
#   bash test/bench/kafka.sh [RECORDS]        # default 200000
#
# Figures: produce records/s (librdkafka defaults, acks=all, linger.ms=5,
# against mqctl perf produce with batches of 500); produce latency p50/p99
# at 200 records/s (librdkafka with linger.ms=0, per record from enqueue
# to acknowledgement; mqctl perf with batches of 1, per batch); consume
# records/s (librdkafka from the beginning of the topic; mqctl perf
# consume).  The goal (issue 14) is Kafka produce >= 0.8x the SQL batch
# path.  Uses the INSTALLED extension and broker/ binaries (build first);
# the server is a throwaway cluster (scripts/lib.sh), stopped at exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
N="${1:-200000}"
LAT_N=2000
RATE=200
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-kafka.XXXXXX")"
KPID=""
cleanup() {
	[[ -n "$KPID" ]] && kill "$KPID" 2>/dev/null
	rm -rf "$WORK"
}
mq_on_exit cleanup

cc -O2 -o "$WORK/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread
cluster_start bench >/dev/null
psql -X -q -c "CREATE EXTENSION mq" \
	-c "SELECT mq.create_topic(t, 1) FROM unnest(ARRAY['k_tput', 'k_lat', 's_tput', 's_lat']) t" >/dev/null
port="$(free_port)"
broker/mq-kafka/mq-kafka --listen "127.0.0.1:$port" -d "dbname=postgres" >"$WORK/mq-kafka.log" 2>&1 &
KPID=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
B="127.0.0.1:$port"
MQCTL=broker/mqctl/mqctl

field() { sed -n "s|.*$1 \([0-9.]*\).*|\1|p" <<<"$2"; }

k_tput="$("$WORK/rdk_client" perf "$B" k_tput "$N")"
s_tput="$("$MQCTL" perf produce s_tput --records "$N" --batch 500 --reporting-interval-ms 600000 | tail -1)"
k_lat="$("$WORK/rdk_client" perf "$B" k_lat "$LAT_N" "$RATE")"
s_lat="$("$MQCTL" perf produce s_lat --records "$LAT_N" --batch 1 --throughput "$RATE" \
	--reporting-interval-ms 600000 | tail -1)"
k_cons="$("$WORK/rdk_client" consume "$B" k_tput "$N")"
s_cons="$("$MQCTL" perf consume s_tput --records "$N" --reporting-interval-ms 600000 | tail -1)"

kt="$(field 'records/s' "$k_tput")"
st="$(sed -n 's/.* sent, \([0-9.]*\) records\/sec.*/\1/p' <<<"$s_tput")"
kc="$(field 'records/s' "$k_cons")"
sc="$(sed -n 's/.* \([0-9.]*\) records\/sec.*/\1/p' <<<"$s_cons")"

echo
echo "| figure | Kafka (mq-kafka) | SQL (mqctl perf) | Kafka/SQL |"
echo "|---|---|---|---|"
printf '| produce, %d x 100 B, records/s | %.0f | %.0f | %s |\n' "$N" "$kt" "$st" "$(mq_ratio "$kt" "$st")"
printf '| produce latency p50 at %d/s, ms | %s | %s | |\n' "$RATE" "$(field p50_ms "$k_lat")" \
	"$(sed -n 's/.*, \([0-9.]*\) ms 50th.*/\1/p' <<<"$s_lat")"
printf '| produce latency p99 at %d/s, ms | %s | %s | |\n' "$RATE" "$(field p99_ms "$k_lat")" \
	"$(sed -n 's/.*, \([0-9.]*\) ms 99th.*/\1/p' <<<"$s_lat")"
printf '| consume, records/s | %.0f | %.0f | %s |\n' "$kc" "$sc" "$(mq_ratio "$kc" "$sc")"
echo
echo "raw: $k_tput"
echo "raw: $s_tput"
echo "raw: $k_lat"
echo "raw: $s_lat"
echo "raw: $k_cons"
echo "raw: $s_cons"
