#!/usr/bin/env bash
# No call cycles between C files (docs/design.md, "Layers"): in each
# folder, scripts/callgraph.pl finds the files that call each other
# directly or through a chain of files of that folder; there must be none,
# so that a dispatcher stands above its handlers and helpers, completion
# and shared state below them.  On a failure, the edges behind the cycle:
#   perl scripts/callgraph.pl --edges DIR
# Run from the repository root; needs no server.
set -euo pipefail

DIRS=(src broker/common broker/mq-broker broker/mq-kafka broker/mqctl)
cycles="$(perl scripts/callgraph.pl "${DIRS[@]}" | sed -n 's/^cycle //p')"
if [[ -n "$cycles" ]]; then
	sed 's/^/FAIL: a call cycle in /' <<<"$cycles" >&2
	exit 1
fi
echo "cycles: none in ${DIRS[*]}"
