#!/usr/bin/env bash
# Short files and functions (docs/design.md, "How the code is written"):
# no C file of src/ or broker/ over 600 lines, no function over 100 lines;
# the same for the SQL of src/sql (a routine from its CREATE line to the
# line that ends its body).
# Functions are found in PostgreSQL's layout, which scripts/format.sh
# enforces: the body's braces alone on a line in column 0.  An exception
# is named in EXCEPTIONS with its reason; there are none today.
# Run from the repository root; needs no server.
set -euo pipefail

MAX_FILE=600
MAX_FUNCTION=100
# "path:function  reason"
EXCEPTIONS=()

excepted() {
	local e
	for e in "${EXCEPTIONS[@]}"; do
		[[ "${e%% *}" == "$1" ]] && return 0
	done
	return 1
}

# Functions of a C file: name(...) at column 0, then "{" alone ... "}"
# alone; prints "name length" for each over the limit
C_FUNCTIONS='
	/^[A-Za-z_][A-Za-z_0-9]*\(/ { name = $0; sub(/\(.*/, "", name) }
	/^\{$/ { start = NR }
	/^\}$/ && start { if (NR - start - 1 > max) print name, NR - start - 1; start = 0 }'
# Routines of a SQL file: from "CREATE [OR REPLACE] FUNCTION|PROCEDURE" to
# the line with the "$$" that closes their body
SQL_FUNCTIONS='
	/^CREATE (OR REPLACE )?(FUNCTION|PROCEDURE) / {
		name = $0; sub(/^CREATE (OR REPLACE )?(FUNCTION|PROCEDURE) /, "", name); sub(/\(.*/, "", name)
		start = NR; dollars = 0 }
	start && /\$\$/ { dollars += gsub(/\$\$/, "&") }
	start && dollars >= 2 { if (NR - start + 1 > max) print name, NR - start + 1; start = 0 }'

bad=0
# check_sizes AWK-PROGRAM FILE...: the files' lengths and their functions'
check_sizes() {
	local prog="$1" f n name len
	shift
	for f in "$@"; do
		n="$(wc -l <"$f")"
		if ((n > MAX_FILE)) && ! excepted "$f"; then
			echo "FAIL: $f has $n lines (at most $MAX_FILE)" >&2
			bad=1
		fi
		while IFS=' ' read -r name len; do
			if ! excepted "$f:$name"; then
				echo "FAIL: $f: $name has $len lines (at most $MAX_FUNCTION)" >&2
				bad=1
			fi
		done < <(awk -v max="$MAX_FUNCTION" "$prog" "$f")
	done
}
mapfile -t c_files < <(find src broker -name '*.c' | sort)
mapfile -t sql_files < <(find src/sql -name '*.sql' | sort)
check_sizes "$C_FUNCTIONS" "${c_files[@]}"
check_sizes "$SQL_FUNCTIONS" "${sql_files[@]}"

# the checks must notice a long function, in C and in SQL
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
{
	printf 'static int\nlong_one(void)\n{\n'
	for ((i = 0; i <= MAX_FUNCTION; i++)); do printf '\tx++;\n'; done
	printf '}\n'
} >"$tmp/t.c"
{
	printf 'CREATE FUNCTION mq.long_one() RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n'
	for ((i = 0; i <= MAX_FUNCTION; i++)); do printf '    PERFORM 1;\n'; done
	printf 'END $$;\n'
} >"$tmp/t.sql"
if [[ -z "$(awk -v max="$MAX_FUNCTION" "$C_FUNCTIONS" "$tmp/t.c")" ||
	-z "$(awk -v max="$MAX_FUNCTION" "$SQL_FUNCTIONS" "$tmp/t.sql")" ]]; then
	echo "FAIL: the function-length check missed a long function" >&2
	bad=1
fi
((bad == 0)) && echo "sizes: every C and SQL file and function within its limit (${#EXCEPTIONS[@]} named exceptions)"
exit "$bad"
