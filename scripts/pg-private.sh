#!/usr/bin/env bash
# scripts/pg-private.sh DIR: copy the installed PostgreSQL 15 (binaries,
# libraries, share files) under DIR, keeping its paths, so that a server
# started from DIR/usr/lib/postgresql/15/bin loads extensions from DIR.
# PostgreSQL finds its share and lib directories relative to its own
# binary, so the copy works as a second installation.  Then
#
#   MQ_PG_ROOT=DIR bash scripts/test.sh
#
# builds, installs (make install DESTDIR=DIR) and tests against the copy,
# leaving the system's installation alone.
set -euo pipefail
dir="${1:?usage: scripts/pg-private.sh DIR}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh run build
cfg=/usr/lib/postgresql/15/bin/pg_config
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
for d in "$(dirname "$("$cfg" --bindir)")" "$("$cfg" --sharedir)"; do
	mkdir -p "$dir$(dirname "$d")"
	rm -rf "${dir:?}$d"
	cp -a "$d" "$dir$d"
done
chmod -R o+rX "$dir"
d="$dir"
while [[ "$d" != / ]]; do
	chmod o+x "$d"
	d="$(dirname "$d")"
done
echo "private PostgreSQL in $dir: MQ_PG_ROOT=$dir"
