#!/usr/bin/env bash
# scripts/format.sh check|fix [FILE...]: the C code's layout as a check.
#
# The layout is PostgreSQL's pgindent style, made with clang-format 14
# (.clang-format at the top of the tree) followed by scripts/format-align.pl,
# which does what clang-format cannot: declarations aligned at column 12
# using the typedefs list scripts/typedefs.list (made from the code by
# scripts/typedefs.sh), trailing comments at column 33, preprocessor lines
# as written.
#
#   check  print a unified diff of every file that is not formatted, and of
#          scripts/typedefs.list if the code declares types it lacks or no
#          longer declares some; exit 1 if there is any
#   fix    rewrite scripts/typedefs.list, then format the files in place
#
# FILEs default to every C file and header under src/ and broker/ that git
# knows.  Needs clang-format 14 (Debian clang-format-14; see
# scripts/install-deps.sh): other versions lay some lines out differently.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-}"
[[ "$mode" == check || "$mode" == fix ]] || {
	echo "usage: scripts/format.sh check|fix [FILE...]" >&2
	exit 2
}
shift

CLANG_FORMAT="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}"
if [[ -z "$CLANG_FORMAT" ]] || ! "$CLANG_FORMAT" --version | grep -q 'version 14\.'; then
	echo "format.sh: clang-format 14 is needed (scripts/install-deps.sh installs it)" >&2
	exit 2
fi

if (($#)); then
	files=("$@")
else
	mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'broker/*.c' 'broker/*.h')
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

bash scripts/typedefs.sh >"$tmp/typedefs.list"

# format FILE: print the formatted text of FILE
format() {
	"$CLANG_FORMAT" --style=file "$1" |
		perl scripts/format-align.pl "$tmp/typedefs.list" "$1"
}

if [[ "$mode" == fix ]]; then
	cp "$tmp/typedefs.list" scripts/typedefs.list
	status=0
	for f in "${files[@]}"; do
		# format-align.pl keeps line breaks of the text it is given, so a
		# second round may still move something: repeat until nothing does
		stable=0
		for _ in 1 2 3; do
			format "$f" >"$tmp/out"
			if cmp -s "$tmp/out" "$f"; then
				stable=1
				break
			fi
			cat "$tmp/out" >"$f"
		done
		if ((!stable)); then
			echo "format.sh: $f does not settle; format it by hand and retry" >&2
			status=1
		fi
	done
	exit "$status"
fi

status=0
if ! diff -u --label scripts/typedefs.list --label 'scripts/typedefs.list (from the code)' \
	scripts/typedefs.list "$tmp/typedefs.list"; then
	status=1
fi
# Copies of the files, formatted in place by one clang-format per core
# (started once per file, it cost 100 ms of CPU a file, mostly its own
# start), then aligned and compared one file per core at a time, each
# diff to a file of its own, printed in order.
jobs_max="$(nproc)"
mkdir "$tmp/c"
cp .clang-format "$tmp/c/"
for i in "${!files[@]}"; do
	cp "${files[$i]}" "$tmp/c/$i.${files[$i]##*.}"
done
(cd "$tmp/c" && ls -- *.[ch] | xargs -r -P "$jobs_max" -n $(((${#files[@]} + jobs_max - 1) / jobs_max)) \
	"$CLANG_FORMAT" --style=file -i)
for i in "${!files[@]}"; do
	f="${files[$i]}"
	{
		perl scripts/format-align.pl "$tmp/typedefs.list" "$f" <"$tmp/c/$i.${f##*.}" >"$tmp/$i.out"
		diff -u --label "$f" --label "$f (formatted)" "$f" "$tmp/$i.out" >"$tmp/$i.diff" || true
	} &
	while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
done
wait
for i in "${!files[@]}"; do
	if [[ -s "$tmp/$i.diff" ]]; then
		cat "$tmp/$i.diff"
		status=1
	fi
done
if ((status)); then
	echo "format.sh: not formatted; run scripts/format.sh fix" >&2
fi
exit "$status"
