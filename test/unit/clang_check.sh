#!/usr/bin/env bash
# The tools' sources through clang (`make -C broker clang-check`: syntax
# only, the build's warnings as errors).  The everyday build is gcc's;
# scripts/sanitize.sh and the fuzzers build with clang, whose warnings
# differ: a comparison with a string literal that gcc let pass stopped
# the sanitized build unnoticed until this check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

if command -v clang >/dev/null; then
	rc=0
	make -s -j"$(nproc)" -C broker clang-check || rc=$?
	ok "$rc" "every source of broker/ compiles under clang without a warning"
else
	ok 1 "clang is installed (scripts/install-deps.sh test)"
fi
tap_done
