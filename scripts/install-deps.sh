#!/usr/bin/env bash
# Install the Debian 12 packages mq needs to build and test (clang-14 and
# libfuzzer-14-dev for scripts/fuzz.sh, graphviz for scripts/fsm-graph.sh,
# clang-format-14 for scripts/format.sh, the peers of test/bench/peers.sh
# and gnuplot for test/bench/plot.sh).  Idempotent: packages already
# installed are skipped, and `apt-get update` only runs when something is
# missing.
set -euo pipefail

PKGS=(
	build-essential
	postgresql-15
	postgresql-server-dev-15
	postgresql-15-pgtap
	libipc-run-perl
	libtap-parser-sourcehandler-pgtap-perl
	libpq-dev
	libmicrohttpd-dev
	libinih-dev
	libjansson-dev
	# mq-kafka (docs/kafka.md): its event loop and the four codecs
	libevent-dev
	zlib1g-dev
	libsnappy-dev
	liblz4-dev
	libzstd-dev
	# mq-kafka's tests: Kafka clients, and clang's libFuzzer for
	# scripts/fuzz-kafka.sh; kafkajs comes from npm (test/kafka/js)
	kcat
	librdkafka-dev
	clang
	libfuzzer-14-dev
	nodejs
	clang-format-14
	# mq-kafka against Kafka clients with their default settings (issue
	# 23): kafka-python for test/kafka/kafka_python.sh (run with Debian's
	# /usr/bin/python3, not a pyenv interpreter)
	python3-kafka
	# ... and sarama for test/kafka/sarama.sh, built offline with Debian's Go
	golang
	golang-github-shopify-sarama-dev
	# the highly available coordinator (scripts/coord-ha.sh): pg_auto_failover
	postgresql-15-auto-failover
	# scripts/fuzz.sh (mq-broker's parsers) and scripts/fsm-graph.sh
	clang-14
	graphviz
	# test/bench/peers.sh (its short mode is a unit test): PgQ and its
	# ticker, Redis, NATS JetStream and their C clients; test/bench/plot.sh
	postgresql-15-pgq3
	pgqd
	redis-server
	libhiredis-dev
	nats-server
	libnats-dev
	gnuplot-nox
	# monitoring tests: test/t/150_monitoring_dashboard.pl runs Debian's
	# Prometheus and postgres exporter with monitoring/'s configs
	prometheus
	prometheus-postgres-exporter
)

missing=()
for p in "${PKGS[@]}"; do
	status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
	if [[ "$status" != installed ]]; then
		missing+=("$p")
	fi
done

# npm: Debian's package, unless a node distribution that bundles npm
# (NodeSource's nodejs) is installed already; the two conflict.
if ! command -v npm >/dev/null 2>&1; then
	missing+=(npm)
fi

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#PKGS[@]} packages already installed"
	exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "install-deps: missing ${missing[*]}; not root and no sudo" >&2
		exit 1
	fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
