#!/usr/bin/env bash
# mq-kafka over TLS against plaintext in the same run (issue 24): one
# mq-kafka with a PLAINTEXT and an SSL listener (a throwaway CA,
# test/kafka/tls_certs.bash), librdkafka (test/kafka/rdk_client.c perf
# and consume) producing and consuming 100-byte records through each, on
# topics of their own.  The runs alternate (plaintext, TLS, plaintext,
# TLS, ...; ROUNDS of each, default 3) and the best of each is kept, so
# that a noisy neighbour on the shared machine hurts both alike.
#
#   bash test/bench/kafka_tls.sh [RECORDS] [ROUNDS]   # default 200000 3
#
# Prints records/s of both and the TLS/plaintext ratios; the goal is
# TLS >= 0.8x for produce and consume.  Uses the INSTALLED extension and
# the broker/ binaries (build first); the server is a throwaway cluster
# (scripts/lib.sh), stopped at exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
source test/kafka/tls_certs.bash
N="${1:-200000}"
ROUNDS="${2:-3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-kafka-tls.XXXXXX")"
KPID=""
cleanup() {
	[[ -n "$KPID" ]] && kill "$KPID" 2>/dev/null
	rm -rf "$WORK"
}
mq_on_exit cleanup

cc -O2 -o "$WORK/rdk_client" test/kafka/rdk_client.c -lrdkafka -lpthread
tls_make_certs "$WORK/pki"
printf 'security.protocol=ssl\nssl.ca.location=%s\n' "$WORK/pki/ca.crt" >"$WORK/ssl.conf"
cluster_start bench >/dev/null
psql -X -q -c "CREATE EXTENSION mq" >/dev/null
for r in $(seq "$ROUNDS"); do
	psql -X -q -c "SELECT mq.create_topic('plain_$r', 1), mq.create_topic('tls_$r', 1)" >/dev/null
done
p1="$(free_port)"
p2="$(free_port)"
broker/mq-kafka/mq-kafka -d "dbname=postgres" --listeners "PLAINTEXT://127.0.0.1:$p1,SSL://127.0.0.1:$p2" \
	--ssl-certificate "$WORK/pki/server.crt" --ssl-key "$WORK/pki/server.key" >"$WORK/mq-kafka.log" 2>&1 &
KPID=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$p2") 2>/dev/null; do sleep 0.05; done

field() { sed -n "s|.*$1 \([0-9.]*\).*|\1|p" <<<"$2"; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
pp=0 tp=0 pc=0 tc=0
for r in $(seq "$ROUNDS"); do
	pp="$(max "$pp" "$(field 'records/s' "$("$WORK/rdk_client" perf "127.0.0.1:$p1" "plain_$r" "$N")")")"
	tp="$(max "$tp" "$(field 'records/s' "$(RDK_CONF="$WORK/ssl.conf" "$WORK/rdk_client" perf "127.0.0.1:$p2" "tls_$r" "$N")")")"
	pc="$(max "$pc" "$(field 'records/s' "$("$WORK/rdk_client" consume "127.0.0.1:$p1" "plain_$r" "$N")")")"
	tc="$(max "$tc" "$(field 'records/s' "$(RDK_CONF="$WORK/ssl.conf" "$WORK/rdk_client" consume "127.0.0.1:$p2" "tls_$r" "$N")")")"
done

echo
echo "| figure ($N records of 100 B, best of $ROUNDS) | plaintext | TLS | TLS/plaintext |"
echo "|---|---:|---:|---:|"
echo "| produce records/s (librdkafka, acks=all) | $pp | $tp | $(mq_ratio "$tp" "$pp") |"
echo "| consume records/s (librdkafka) | $pc | $tc | $(mq_ratio "$tc" "$pc") |"
