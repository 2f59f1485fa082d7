#!/usr/bin/env bash
# The plots of docs/benchmarks.md are the data's: test/bench/plot.sh,
# run on the committed outputs in docs/img/data/, draws exactly the
# committed docs/img/*.svg, and every image docs/benchmarks.md shows is
# one of them.  Fix with `bash test/bench/plot.sh`.  Needs no PostgreSQL
# server (gnuplot: test/bench/plot.sh runs scripts/install-deps.sh bench).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

tap_tmp bench-plots-test
rc=0
bash test/bench/plot.sh docs/img/data "$tmp" >/dev/null 2>"$tmp/err" || rc=$?
ok "$rc" "test/bench/plot.sh draws the plots$( ((rc == 0)) || echo ": $(head -3 "$tmp/err")")"

differ=""
for f in "$tmp"/*.svg docs/img/*.svg; do
	b="$(basename "$f")"
	[[ -f "$tmp/$b" && -f "docs/img/$b" ]] && cmp -s "$tmp/$b" "docs/img/$b" || differ+=" $b"
done
ok "$([[ -z "$differ" ]] && echo 0 || echo 1)" "docs/img/*.svg are what plot.sh draws from docs/img/data${differ:+ (differ:$(tr ' ' '\n' <<<"$differ" | sort -u | tr '\n' ' '))}"

missing=""
while IFS= read -r img; do
	[[ -f "docs/$img" ]] || missing+=" $img"
done < <(sed -n 's/.*!\[[^]]*\](\([^)]*\)).*/\1/p' docs/benchmarks.md)
shown="$(sed -n 's/.*!\[[^]]*\](\([^)]*\)).*/\1/p' docs/benchmarks.md | wc -l)"
ok "$([[ -z "$missing" && "$shown" -gt 0 ]] && echo 0 || echo 1)" "the $shown images docs/benchmarks.md shows exist${missing:+ (missing:$missing)}"
tap_done
