#!/usr/bin/env bash
# SQLSTATEs have one home, src/errcodes.txt (see its header):
#   - docs/errors.md's table is exactly what it generates;
#   - every MQ code used anywhere in the repository is defined there, and C
#     code uses the generated constants, not string literals;
#   - and the check itself fails when the docs and the source disagree.
# Run from the repository root; needs no server.
set -euo pipefail

bash scripts/errcodes.sh check

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# the check must notice a description changed in the source only
sed 's/| unknown topic |/| no such topic |/' src/errcodes.txt >"$tmp/changed.txt"
if bash scripts/errcodes.sh check "$tmp/changed.txt" 2>/dev/null; then
	echo "FAIL: the check passed although docs/errors.md no longer matches the source" >&2
	exit 1
fi
# ... and a code used in the repository but missing from the source
grep -v '^MQ001 ' src/errcodes.txt >"$tmp/missing.txt"
if bash scripts/errcodes.sh check "$tmp/missing.txt" 2>/dev/null; then
	echo "FAIL: the check passed although MQ001 is used but not defined" >&2
	exit 1
fi
# a malformed or duplicated line stops generation (and so the build)
{ cat src/errcodes.txt; grep '^MQ001 ' src/errcodes.txt; } >"$tmp/dup.txt"
if bash scripts/errcodes.sh c-header "$tmp/dup.txt" >/dev/null 2>&1; then
	echo "FAIL: a duplicated SQLSTATE was accepted" >&2
	exit 1
fi
echo "errcodes: docs table current, every code used is defined"
