#!/usr/bin/env bash
# The graph of mq-broker's state machine in the docs is the table's: the
# committed docs/broker-fsm.dot and the dot block of docs/replication.md
# must equal `mq-broker --print-fsm`.  Fix with `bash scripts/fsm-graph.sh`.
# Needs no PostgreSQL server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bin=broker/mq-broker/mq-broker
status=0
now="$("$bin" --print-fsm)"

if [[ "$now" == "$(cat docs/broker-fsm.dot)" ]]; then
	echo "ok 1 - docs/broker-fsm.dot is mq-broker --print-fsm"
else
	echo "not ok 1 - docs/broker-fsm.dot differs from mq-broker --print-fsm (run scripts/fsm-graph.sh)"
	diff <(printf '%s\n' "$now") docs/broker-fsm.dot | head -20 || true
	status=1
fi

block="$(awk '/^<!-- fsm:begin -->$/ { inside = 1; next }
	/^<!-- fsm:end -->$/ { inside = 0 }
	inside && !/^```/ { print }' docs/replication.md)"
if [[ "$now" == "$block" ]]; then
	echo "ok 2 - the graph in docs/replication.md is mq-broker --print-fsm"
else
	echo "not ok 2 - the graph in docs/replication.md differs (run scripts/fsm-graph.sh)"
	status=1
fi

# the drawing has exactly the graph's edges (Graphviz titles each "A->B")
want_edges="$(printf '%s\n' "$now" | sed -n 's/^  \([A-Z_]*\) -> \([A-Z_]*\) .*/\1->\2/p' | sort -u)"
svg_edges="$(sed -n 's/.*<title>\([A-Z_]*\)&#45;&gt;\([A-Z_]*\)<\/title>.*/\1->\2/p' docs/broker-fsm.svg 2>/dev/null | sort -u)"
if [[ -n "$want_edges" && "$want_edges" == "$svg_edges" ]]; then
	echo "ok 3 - docs/broker-fsm.svg draws the graph's edges"
else
	echo "not ok 3 - docs/broker-fsm.svg is missing or draws other edges (run scripts/fsm-graph.sh)"
	status=1
fi
echo "1..3"
exit "$status"
