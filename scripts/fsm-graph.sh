#!/usr/bin/env bash
# Regenerate the graph of mq-broker's partition state machine from its
# transition table (broker/mq-broker/fsm.c): docs/broker-fsm.dot (the text
# of `mq-broker --print-fsm`), docs/broker-fsm.svg (drawn by Graphviz's
# dot, Debian package graphviz) and the copy of the dot text in
# docs/replication.md between the lines "<!-- fsm:begin -->" and
# "<!-- fsm:end -->".  test/unit/fsm_graph.sh fails until this has run
# after a change to the table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

make -s -C broker mq-broker/mq-broker
broker/mq-broker/mq-broker --print-fsm >docs/broker-fsm.dot
if command -v dot >/dev/null 2>&1; then
	dot -Tsvg docs/broker-fsm.dot >docs/broker-fsm.svg
else
	echo "fsm-graph: Graphviz's dot is missing (scripts/install-deps.sh installs graphviz); SVG not redrawn" >&2
fi

awk -v dotfile=docs/broker-fsm.dot '
	/^<!-- fsm:begin -->$/ {
		print; print "```dot"
		while ((getline line < dotfile) > 0) print line
		print "```"; skip = 1; next
	}
	/^<!-- fsm:end -->$/ { skip = 0 }
	!skip { print }' docs/replication.md >docs/replication.md.new
mv docs/replication.md.new docs/replication.md
echo "fsm-graph: docs/broker-fsm.dot, docs/broker-fsm.svg and docs/replication.md updated"
