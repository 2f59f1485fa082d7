#!/usr/bin/env bash
# No new call cycles between C files (docs/design.md, "Layers"):
# scripts/callgraph.pl finds, in each folder, the files that call each
# other directly or through a chain.  Cycles that exist are recorded in
# test/static/cycles.baseline, one per line, to be broken (issue 22); this
# check fails when a cycle appears or grows (a file joins one), and when
# the baseline names more than is there (a cycle was broken or shrank:
# record it, so that it cannot come back unnoticed).
#   MQ_CYCLES_UPDATE=1 bash test/static/cycles.sh   rewrites the baseline
# Run from the repository root; needs no server.
set -euo pipefail

DIRS=(src broker/common broker/mq-broker broker/mq-kafka broker/mqctl)
baseline=test/static/cycles.baseline
now="$(perl scripts/callgraph.pl "${DIRS[@]}" | sed -n 's/^cycle //p' | sort)"

if [[ -n "${MQ_CYCLES_UPDATE:-}" ]]; then
	printf '%s\n' "$now" | sed '/^$/d' >"$baseline"
	echo "cycles: baseline rewritten ($(wc -l <"$baseline") cycles)"
	exit 0
fi

# is every file of cycle $1 ("dir: a.c b.c") in one recorded cycle of that dir?
covered() {
	local dir="${1%%:*}" files="${1#*: }" line f ok
	while IFS= read -r line; do
		[[ "${line%%:*}" == "$dir" ]] || continue
		ok=1
		for f in $files; do
			[[ " ${line#*: } " == *" $f "* ]] || { ok=0; break; }
		done
		((ok)) && return 0
	done <"$baseline"
	return 1
}

bad=0
while IFS= read -r c; do
	[[ -n "$c" ]] || continue
	if ! covered "$c"; then
		echo "FAIL: a new or larger call cycle in $c" >&2
		bad=1
	fi
done <<<"$now"
if ((bad == 0)) && [[ "$now" != "$(sort "$baseline")" ]]; then
	echo "FAIL: $baseline names cycles that are gone or smaller now; record it:" >&2
	echo "  MQ_CYCLES_UPDATE=1 bash test/static/cycles.sh" >&2
	diff <(sort "$baseline") <(printf '%s\n' "$now") >&2 || true
	bad=1
fi
((bad == 0)) && echo "cycles: $(grep -c . <<<"$now" || true) recorded cycles, none new or larger"
exit "$bad"
