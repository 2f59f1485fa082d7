#!/usr/bin/env bash
# Every ```sql block of README.md and docs/*.md runs, in document order,
# in a fresh database per document (with mq installed, unless the
# document's first block installs it itself), as the superuser, with
# ON_ERROR_STOP: an example that no longer works fails this test.
#
# A block that cannot run here (it needs a cluster, say) is preceded by
# the line "<!-- docs-test: skip REASON -->"; a document whose examples
# need setup first may give it in a comment block
# "<!-- docs-test: setup\nSQL...\n-->" anywhere before them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# blocks FILE DIR: write DIR/NNN.sql for each block (skips left out) and
# DIR/000-setup.sql for setup; prints how many blocks it wrote
blocks() {
	awk -v dir="$2" '
		/^<!-- docs-test: skip/ { skip = 1; next }
		/^<!-- docs-test: setup/ { setup = 1; next }
		setup && /^-->/ { setup = 0; next }
		setup { print > (dir "/000-setup.sql"); next }
		/^```sql/ { inside = 1; n++; out = sprintf("%s/%03d.sql", dir, n); if (skip) out = "/dev/null"; skip = 0; next }
		inside && /^```/ { inside = 0; close(out); next }
		inside { print > out }
		END { print n + 0 }' "$1"
}

docs=(README.md docs/*.md)
for doc in "${docs[@]}"; do
	dir="$(tmpdir)/$(basename "$doc" .md)"
	mkdir -p "$dir"
	n="$(blocks "$doc" "$dir")"
	((n > 0)) || continue
	db="docs_$(basename "$doc" .md | tr -c 'a-z0-9\n' '_')"
	# roles are cluster-wide: the ones a document creates go with its database
	roles="$(cat "$dir"/*.sql | sed -n 's/^CREATE ROLE \([a-z_0-9]*\).*/\1/p' | tr '\n' ' ')"
	drop="dropdb --if-exists '$db' 2>/dev/null; for r in $roles; do dropuser --if-exists \"\$r\"; done"
	eval "$drop"
	createdb "$db"
	on_exit "$drop"
	if ! grep -qi '^CREATE EXTENSION mq' "$dir/001.sql" 2>/dev/null; then
		psql -X -q -d "$db" -c 'CREATE EXTENSION mq' >/dev/null
	fi
	for f in "$dir"/*.sql; do
		if out="$(psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$f" 2>&1)"; then
			pass "$doc: example $(basename "$f" .sql) runs"
		else
			fail "$doc: example $(basename "$f" .sql) fails" "$(cat "$f")
---
$out"
		fi
	done
done

finish
