#!/usr/bin/env bash
# Demo: build + install mq, start a throwaway cluster, CREATE EXTENSION mq,
# run scripts/demo.sql with psql, stop the cluster (also on failure / ^C);
# then the replication demo, scripts/demo-cluster.sh (3 data nodes, a
# coordinator, 3 brokers; the leader is killed while producing).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

mq_phase "dependencies (scripts/install-deps.sh run build)"
bash scripts/install-deps.sh run build
mq_pg_paths || mq_die "pg_config not found after installing the dependencies"

mq_phase "build + install"
mq_build_install || mq_die "build/install failed"

mq_phase "start throwaway cluster"
cluster_start demo

mq_phase "CREATE EXTENSION $MQ_EXTENSION"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION $MQ_EXTENSION"

if [[ -f scripts/demo.sql ]]; then
	mq_phase "psql -f scripts/demo.sql"
	psql -X -v ON_ERROR_STOP=1 -f scripts/demo.sql
else
	echo "scripts/demo.sql does not exist yet: nothing to demo beyond CREATE EXTENSION"
fi

mq_phase "stop cluster"
cluster_stop
echo "single-node demo done"

# Replication: 3 data nodes, a coordinator and 3 brokers; the leader's node
# is killed while producing with acks=all (scripts/demo-cluster.sh)
MQ_DEMO_SKIP_BUILD=1 bash scripts/demo-cluster.sh
echo "demo done"
