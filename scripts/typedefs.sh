#!/usr/bin/env bash
# scripts/typedefs.sh: print the typedefs list that scripts/format.sh uses
# to tell declarations from expressions (pgindent's typedefs.list).
#
# Every C file under src/ and broker/ is run through the C preprocessor with
# the include paths its Makefile uses, and every name a `typedef` declares
# in what the compiler sees is listed: the project's own types and those of
# PostgreSQL, libpq and the C library that the code can name.  One name a
# line, sorted.  scripts/format.sh fix rewrites scripts/typedefs.list with
# this; scripts/format.sh check fails when the list is out of date.
#
# Knobs: PG_CONFIG (default pg_config), CC (default cc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PG_CONFIG="${PG_CONFIG:-pg_config}"
CC="${CC:-cc}"
server="$("$PG_CONFIG" --includedir-server)"
client="$("$PG_CONFIG" --includedir)"
cppflags="$("$PG_CONFIG" --cppflags)"

# Headers the build generates (from src/errcodes.txt, ...) may not exist
# yet: they are given as empty files, which is enough for the typedefs
# (the code's own headers declare its types).
stubs="$(mktemp -d)"
trap 'rm -rf "$stubs"' EXIT

# preprocess_once FILE DIR: FILE (a .c file, or a file that includes
# some) with the include paths of the code in DIR
preprocess_once() {
	local f="$1" d="$2"
	# shellcheck disable=SC2086 # $cppflags is a list of flags
	case "$d" in
	src) "$CC" -E $cppflags -Isrc -I"$server" -I"$server/../internal" -I"$stubs" "$f" ;;
	broker/*) "$CC" -E -DMQ_VERSION='"0"' -I"$client" -Ibroker/common \
		-I"$d" -I"$stubs" "$f" ;;
	esac
}

# preprocess FILE DIR SCRATCH: the text the compiler sees, a stub for
# each missing generated header ("name.h" includes only)
preprocess() {
	local f="$1" d="$2" scratch="$3" err missing made=" "
	for _ in 1 2 3 4 5 6 7 8; do
		if preprocess_once "$f" "$d" >"$scratch.out" 2>"$scratch.err"; then
			cat "$scratch.out"
			return 0
		fi
		err="$(cat "$scratch.err")"
		missing="$(sed -n 's/.*fatal error: \([A-Za-z0-9_./-]*\.h\): No such file or directory.*/\1/p' <<<"$err" | head -n 1)"
		# missing again after this call made its stub: a real error (a
		# stub another file's run made at the same time is no sign)
		if [[ -z "$missing" || "$made" == *" $missing "* ]]; then
			echo "$err" >&2
			return 1
		fi
		made+="$missing "
		mkdir -p "$stubs/$(dirname "$missing")"
		: >"$stubs/$missing"
	done
	return 1
}

# The names declared by each top-level "typedef ...;" of C source, one a
# line, sorted (run on each file's preprocessed text; the lists are merged)
extract='
	# The names declared by each top-level "typedef ...;" of C source.
	local $/;
	my $src = <STDIN>;
	$src =~ s/^#.*$//mg;                          # line markers
	$src =~ s/"(?:\\.|[^"\\])*"/""/g;             # string literals
	# GNU attributes and asm labels, whose parentheses nest
	my $paren;
	$paren = qr/\((?:[^()]++|(??{$paren}))*\)/;
	$src =~ s/\b(?:__attribute__|__asm__|__asm|asm)\s*$paren//g;
	my %names;
	while ($src =~ /\btypedef\b/g)
	{
		my $start = pos($src);
		my ($depth, $i) = (0, $start);
		for (; $i < length $src; $i++)
		{
			my $ch = substr($src, $i, 1);
			$depth++ if $ch eq "{" || $ch eq "(";
			$depth-- if $ch eq "}" || $ch eq ")";
			last if $ch eq ";" && $depth == 0;
		}
		my $decl = substr($src, $start, $i - $start);
		pos($src) = $i;
		1 while $decl =~ s/\{[^{}]*\}//g;             # struct and enum bodies
		# split the declarators at top-level commas
		my @parts = ("");
		my $d = 0;
		for my $ch (split //, $decl)
		{
			$d++ if $ch eq "(" || $ch eq "[";
			$d-- if $ch eq ")" || $ch eq "]";
			if ($ch eq "," && $d == 0) { push @parts, ""; next; }
			$parts[-1] .= $ch;
		}
		for my $p (@parts)
		{
			if ($p =~ /\(\s*\*+\s*(?:const\s+)?(\w+)\s*\)/) { $names{$1} = 1; next; }
			$p =~ s/(?:\[[^\]]*\]\s*)+$//;
			$p =~ s/\s*\(.*$//s if $p !~ /\(\s*\*/;   # function types: name(args)
			$names{$1} = 1 if $p =~ /(\w+)\s*$/;
		}
	}
	# reserved names of the C library (__off_t, ...) are never written here
	print "$_\n" for sort grep { !/^__/ } keys %names;
'

# The C files of each directory are preprocessed as one text (a file that
# includes them all, in name order): the headers they share, guarded
# against a second inclusion, are read once, not once a file (a
# preprocessor and an extraction per file took 33 s of CPU on the 2-core
# machine, 180 files of about 1 MB each; docs/design.md, "The test
# command's time").  One directory per core at a time, each directory's
# names to a file of its own, merged at the end (the stub headers are
# shared: making one twice is harmless).
out="$(mktemp -d)"
trap 'rm -rf "$stubs" "$out"' EXIT
mapfile -t dirs < <(git ls-files 'src/*.c' 'broker/*.c' | xargs -n 1 dirname | sort -u)
jobs_max="$(nproc)"
for i in "${!dirs[@]}"; do
	git ls-files "${dirs[$i]}/*.c" | while read -r f; do
		if [[ "$(dirname "$f")" == "${dirs[$i]}" ]]; then printf '#include "%s"\n' "$PWD/$f"; fi
	done >"$out/$i.c"
	{
		{ preprocess "$out/$i.c" "${dirs[$i]}" "$out/$i.scratch" || : >"$out/$i.failed"; } 2>"$out/$i.err" |
			perl -e "$extract" >"$out/$i.names"
	} &
	while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
done
wait
for i in "${!dirs[@]}"; do
	if [[ -e "$out/$i.failed" ]]; then
		cat "$out/$i.err" >&2
		echo "typedefs.sh: cannot preprocess the C files of ${dirs[$i]}" >&2
		exit 1
	fi
done
LC_ALL=C sort -u "$out"/*.names
