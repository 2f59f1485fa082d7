#!/usr/bin/env bash
# test/quick.txt (the suites `MQ_QUICK=1 bash scripts/test.sh` runs) names
# only suites that exist, one file a line, no globs, and at least one of
# every area the test command runs suites of: unit, pg_regress, isolation, pgTAP,
# concurrency, mqctl, mq-kafka and multi-node TAP.  Run from the
# repository root; needs no server.
set -euo pipefail

list=test/quick.txt
[[ -r "$list" ]] || {
	echo "FAIL: $list is missing" >&2
	exit 1
}
bad=0
declare -A seen=()
while IFS= read -r line; do
	f="${line%%#*}"
	f="${f//[[:space:]]/}"
	[[ -n "$f" ]] || continue
	case "$f" in
	test/unit/*_test.c | test/unit/*.sh) area=unit ;;
	sql/*.sql) area=regress ;;
	test/isolation/specs/*.spec) area=isolation ;;
	test/pgtap/*.sql) area=pgtap ;;
	test/concurrency/*.sh) area=concurrency ;;
	test/cli/*.sh) area=cli ;;
	test/kafka/*.sh) area=kafka ;;
	test/t/*.pl) area=tap ;;
	*)
		echo "FAIL: $list: \"$f\" is not a suite the test command runs" >&2
		bad=1
		continue
		;;
	esac
	if [[ "$f" == *[*?[]* || ! -f "$f" ]]; then
		echo "FAIL: $list names \"$f\", which is not a file" >&2
		bad=1
		continue
	fi
	seen[$area]=1
done <"$list"
for area in unit regress isolation pgtap concurrency cli kafka tap; do
	if [[ -z "${seen[$area]:-}" ]]; then
		echo "FAIL: $list has no $area suite" >&2
		bad=1
	fi
done
((bad == 0)) || exit 1
echo "quick: every suite of $list exists, every area has one"
