#!/usr/bin/env bash
# Install the Debian 12 packages mq needs to build and test.  Idempotent:
# packages already installed are skipped, and `apt-get update` only runs
# when something is missing.
set -euo pipefail

PKGS=(
	build-essential
	postgresql-15
	postgresql-server-dev-15
	postgresql-15-pgtap
	libipc-run-perl
	libtap-parser-sourcehandler-pgtap-perl
	libpq-dev
	libmicrohttpd-dev
	libinih-dev
	libjansson-dev
	clang-format-14
	clang
)

missing=()
for p in "${PKGS[@]}"; do
	status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
	if [[ "$status" != installed ]]; then
		missing+=("$p")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#PKGS[@]} packages already installed"
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

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
