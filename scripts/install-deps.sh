#!/usr/bin/env bash
# Install the Debian 12 packages mq needs, by purpose:
#
#   scripts/install-deps.sh [PURPOSE...]     default: run build test
#
#   run    what a node needs at run time (scripts/deps/run.txt)
#   build  compiling mq and its Debian packages (build.txt)
#   test   the test command's tools (test.txt)
#   bench  the benchmarks' peers and plots: Redis, NATS, PgQ, gnuplot (bench.txt)
#   fuzz   libFuzzer toolchains (fuzz.txt)
#   all    every list
#
# Callers: scripts/test.sh and scripts/sanitize.sh (run build test),
# scripts/demo.sh, scripts/demo-cluster.sh and scripts/pg-private.sh
# (run build), test/bench/peers.sh and test/bench/plot.sh (bench),
# scripts/fuzz.sh and scripts/fuzz-kafka.sh (fuzz).  Each list is one
# package a line, `#` comments.  Idempotent: packages already installed
# are skipped, and `apt-get update` only runs when something is missing.
set -euo pipefail

deps="$(cd "$(dirname "${BASH_SOURCE[0]}")/deps" && pwd)"
purposes=("$@")
((${#purposes[@]})) || purposes=(run build test)
if [[ " ${purposes[*]} " == *" all "* ]]; then
	purposes=(run build test bench fuzz)
fi

PKGS=()
for p in "${purposes[@]}"; do
	[[ -f "$deps/$p.txt" ]] || {
		echo "install-deps: unknown purpose '$p' (run build test bench fuzz all)" >&2
		exit 2
	}
	mapfile -t -O "${#PKGS[@]}" PKGS < <(sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$deps/$p.txt")
done
mapfile -t PKGS < <(printf '%s\n' "${PKGS[@]}" | sort -u)

missing=()
for p in "${PKGS[@]}"; do
	status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
	if [[ "$status" != installed ]]; then
		missing+=("$p")
	fi
done

# npm (test): Debian's package, unless a node distribution that bundles
# npm (NodeSource's nodejs) is installed already; the two conflict.
if [[ " ${purposes[*]} " == *" test "* ]] && ! command -v npm >/dev/null 2>&1; then
	missing+=(npm)
fi

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#PKGS[@]} packages for ${purposes[*]} already installed"
	exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "install-deps: missing ${missing[*]}; not root and no sudo" >&2
		exit 1
	fi
fi

echo "install-deps (${purposes[*]}): installing ${missing[*]}"
APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
"${APT[@]}" update -qq
"${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
