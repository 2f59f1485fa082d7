#!/usr/bin/env bash
# Generate what src/errcodes.txt defines (mq's SQLSTATEs) and check its uses.
#
#   errcodes.sh c-header [SRC]        ERRCODE_MQ_* macros for the extension
#                                     (the top-level Makefile writes them to
#                                     src/mq_errcodes.h)
#   errcodes.sh frontend-header [SRC] MQ_SQLSTATE_* string constants for the
#                                     frontend tools (broker/Makefile writes
#                                     them to broker/common/mq_sqlstates.h)
#   errcodes.sh docs-table [SRC]      the Markdown table of docs/errors.md
#   errcodes.sh docs-update           rewrite that table in docs/errors.md,
#                                     between its BEGIN/END marker comments
#   errcodes.sh check                 exit 1 unless docs/errors.md holds the
#                                     table SRC generates and every MQ code
#                                     used in the repository is defined
#
# SRC defaults to src/errcodes.txt of this repository.  A malformed or
# duplicated line is an error in every mode, so the build stops on it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCS="$ROOT/docs/errors.md"
BEGIN_MARK='<!-- BEGIN errcodes: generated from src/errcodes.txt by scripts/errcodes.sh docs-update; do not edit -->'
END_MARK='<!-- END errcodes -->'

die() {
	echo "errcodes.sh: $*" >&2
	exit 1
}

# Parse SRC and print it as MODE (c | frontend | docs | codes) on stdout.
generate() {
	local mode="$1" src="$2"
	[[ -r "$src" ]] || die "cannot read $src"
	awk -v mode="$mode" -v src="$src" '
	function fail(msg) { printf "%s:%d: %s\n", src, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
	function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
	BEGIN {
		if (mode == "c") {
			print "/* Generated from src/errcodes.txt by scripts/errcodes.sh: do not edit. */"
			print "#ifndef MQ_ERRCODES_H"
			print "#define MQ_ERRCODES_H"
		} else if (mode == "frontend") {
			print "/* Generated from src/errcodes.txt by scripts/errcodes.sh: do not edit. */"
			print "/* mq'"'"'s SQLSTATEs as strings, to compare with PG_DIAG_SQLSTATE. */"
			print "#ifndef MQ_SQLSTATES_H"
			print "#define MQ_SQLSTATES_H"
		} else if (mode == "docs") {
			print "| SQLSTATE | condition | raised when | what to do |"
			print "|---|---|---|---|"
		}
	}
	/^[ \t]*$/ || /^#/ { next }
	{
		n = split($0, f, "|")
		if (n != 5)
			fail("expected 5 fields separated by \"|\", found " n)
		code = trim(f[1]); macro = trim(f[2]); cond = trim(f[3]); when = trim(f[4]); todo = trim(f[5])
		if (code !~ /^MQ[0-9A-Z][0-9A-Z][0-9A-Z]$/)
			fail("bad SQLSTATE \"" code "\" (class MQ, five characters)")
		if (macro !~ /^ERRCODE_MQ_[A-Z0-9_]+$/)
			fail("bad macro name \"" macro "\" (ERRCODE_MQ_...)")
		if (cond == "" || when == "" || todo == "")
			fail("empty condition, description or advice")
		if (code in seen_code)
			fail("SQLSTATE " code " defined twice")
		if (macro in seen_macro)
			fail("macro " macro " defined twice")
		seen_code[code] = 1; seen_macro[macro] = 1
		if (mode == "c")
			printf "#define %-44s MAKE_SQLSTATE('"'"'%s'"'"','"'"'%s'"'"','"'"'%s'"'"','"'"'%s'"'"','"'"'%s'"'"')\t/* %s */\n",
				macro, substr(code, 1, 1), substr(code, 2, 1), substr(code, 3, 1),
				substr(code, 4, 1), substr(code, 5, 1), cond
		else if (mode == "frontend") {
			name = macro; sub(/^ERRCODE_MQ_/, "MQ_SQLSTATE_", name)
			printf "#define %-44s \"%s\"\t/* %s */\n", name, code, cond
		} else if (mode == "docs")
			printf "| `%s` | %s | %s | %s |\n", code, cond, when, todo
		else
			print code
	}
	END {
		if (bad)
			exit 1
		if (mode == "c" || mode == "frontend")
			print "#endif"
	}' "$src"
}

# docs/errors.md with its generated table replaced by the current one.
docs_regenerated() {
	local table
	table="$(generate docs "$SRC")"
	grep -qxF "$BEGIN_MARK" "$DOCS" || die "$DOCS lacks the line $BEGIN_MARK"
	grep -qxF "$END_MARK" "$DOCS" || die "$DOCS lacks the line $END_MARK"
	TABLE="$table" awk -v b="$BEGIN_MARK" -v e="$END_MARK" '
		$0 == b { print; print ENVIRON["TABLE"]; skip = 1; next }
		$0 == e { skip = 0 }
		!skip { print }' "$DOCS"
}

# The repository's files (NUL-separated, relative to ROOT): what git
# tracks, or, outside a git checkout, what is there.
repo_files() {
	if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$ROOT" ls-files -z -- src broker sql expected test docs scripts README.md
	else
		(cd "$ROOT" && find src broker sql expected test docs scripts README.md \
			-type f ! -name '*.o' ! -name '*.so' ! -name '*.bc' -print0)
	fi
}

# Every MQ code named in code, SQL, tests or docs must be defined.
check_uses() {
	local defined used missing literal
	defined="$(generate codes "$SRC" | sort -u)"
	used="$(cd "$ROOT" && { repo_files | xargs -0 grep -IohE '\bMQ[0-9]{3}\b' || true; } | sort -u)"
	missing="$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$defined"))"
	# C code names codes by their generated constants, never by literal
	literal="$(cd "$ROOT" && repo_files | grep -zE '\.[ch]$' |
		xargs -0 grep -nE '"MQ[0-9]{3}"' || true)"
	if [[ -n "$literal" ]]; then
		echo "SQLSTATE string literals in C (use ERRCODE_MQ_* or MQ_SQLSTATE_*):" >&2
		printf '%s\n' "$literal" | sed 's/^/  /' >&2
		return 1
	fi
	if [[ -n "$missing" ]]; then
		echo "SQLSTATEs used but not defined in src/errcodes.txt:" >&2
		for code in $missing; do
			(cd "$ROOT" && repo_files | xargs -0 grep -InwF "$code" | sed 's/^/  /') >&2
		done
		return 1
	fi
}

MODE="${1:-}"
SRC="${2:-$ROOT/src/errcodes.txt}"
case "$MODE" in
c-header) generate c "$SRC" ;;
frontend-header) generate frontend "$SRC" ;;
docs-table) generate docs "$SRC" ;;
docs-update)
	new="$(docs_regenerated)"
	printf '%s\n' "$new" >"$DOCS"
	;;
check)
	status=0
	if ! diff -u "$DOCS" <(docs_regenerated) >&2; then
		echo "docs/errors.md's table is not what src/errcodes.txt generates:" \
			"run bash scripts/errcodes.sh docs-update" >&2
		status=1
	fi
	check_uses || status=1
	exit "$status"
	;;
*)
	sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
