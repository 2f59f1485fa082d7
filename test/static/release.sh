#!/usr/bin/env bash
# Releases and their update path (docs/operations.md, "Upgrades"):
#   - the install and update scripts of earlier releases in src/release/
#     are exactly as released (src/release/SHA256SUMS), and none is unlisted:
#     a kept script that changes is no longer the release users have;
#   - mq.control's default_version is the Makefile's EXTVERSION, and the
#     hand-written part of the update from PREVVERSION exists;
#   - scripts/update-sql.pl splits every file of src/sql into statements.
# Run from the repository root; needs no server.
set -euo pipefail

(cd src/release && sha256sum --quiet -c SHA256SUMS) || {
	echo "FAIL: a script in src/release/ differs from the released one (SHA256SUMS)" >&2
	exit 1
}
for f in src/release/mq--*.sql; do
	if ! grep -q " $(basename "$f")\$" src/release/SHA256SUMS; then
		echo "FAIL: $f is not in src/release/SHA256SUMS" >&2
		exit 1
	fi
done

ext="$(sed -n 's/^EXTVERSION *= *//p' Makefile)"
prev="$(sed -n 's/^PREVVERSION *= *//p' Makefile)"
ctl="$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" mq.control)"
if [[ "$ext" != "$ctl" ]]; then
	echo "FAIL: Makefile EXTVERSION $ext, mq.control default_version $ctl" >&2
	exit 1
fi
for f in "src/release/mq--$prev.sql" "src/update/mq--$prev--$ext.sql"; do
	[[ -f "$f" ]] || {
		echo "FAIL: $f is missing (the update path from $prev)" >&2
		exit 1
	}
done

# shellcheck disable=SC2046 # the file names
perl scripts/update-sql.pl --skipped $(LC_ALL=C ls src/sql/*.sql) >/dev/null
echo "release scripts: ok ($prev kept, update $prev -> $ext)"
