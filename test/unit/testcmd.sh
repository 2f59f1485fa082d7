#!/usr/bin/env bash
# The test command reports its times: each phase's when it ends, then a
# table of phase times and the slowest suites, before the last line
# `N passed, N failed`; MQ_QUICK=1 narrows the suites to test/quick.txt.
# Runs scripts/test.sh on its unit phase alone (narrowed to one quick
# script, so it never runs itself), against what is built already.
# Needs no PostgreSQL server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

status=0
check() { # check N DESCRIPTION R: R is 1 once a step of this check failed
	if (($3)); then
		echo "not ok $1 - $2"
		status=1
	else
		echo "ok $1 - $2"
	fi
}

out="$(env -u MQ_QUICK MQ_TEST_ONLY=unit MQ_SKIP_BUILD=1 MQ_TESTS=test/unit/fsm_graph.sh \
	bash scripts/test.sh 2>&1)" || true
r=0
grep -qE '^<== unit tests without PostgreSQL: [0-9]+\.[0-9]s$' <<<"$out" || r=1
check 1 "the unit phase's time is printed when it ends" "$r"
r=0
sed -n '/^phase times:$/,/^slowest suites:$/p' <<<"$out" |
	grep -qE '^ +[0-9]+\.[0-9]s  unit tests without PostgreSQL$' || r=1
check 2 "the table of phase times has the unit phase" "$r"
r=0
sed -n '/^slowest suites:$/,$p' <<<"$out" | grep -qE '^ +[0-9]+\.[0-9]s  unit:test/unit/fsm_graph\.sh$' || r=1
check 3 "the slowest suites list the suite that ran" "$r"
r=0
[[ "$(tail -n 1 <<<"$out")" == "1 passed, 0 failed" ]] || r=1
check 4 "the last line still counts the suites" "$r"

# MQ_QUICK: exactly the unit suites test/quick.txt names
want="$(sed -e 's/#.*//' test/quick.txt | grep -c '^test/unit/' || true)"
out="$(env -u MQ_TESTS MQ_QUICK=1 MQ_TEST_ONLY=unit MQ_SKIP_BUILD=1 bash scripts/test.sh 2>&1)" || true
got="$(grep -c '^--- PASS: unit:' <<<"$out" || true)"
r=0
[[ "$got" == "$want" ]] && ! grep -q 'unit:test/unit/testcmd.sh' <<<"$out" || r=1
check 5 "MQ_QUICK runs the $want unit suites of test/quick.txt (ran $got)" "$r"
if ((status)); then
	printf '%s\n' "$out" | tail -n 30
fi
exit "$status"
