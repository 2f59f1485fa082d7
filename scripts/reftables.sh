#!/usr/bin/env bash
# Reference tables in the docs, generated from the code that defines them
# (as scripts/errcodes.sh does for SQLSTATEs):
#
#   broker-keys  docs/replication.md  mq-broker's ini keys but [kafka]: the
#                                     keys[] table of broker/mq-broker/config.c
#   kafka-keys   docs/kafka.md        mq-broker's [kafka] keys, same table
#   kafka-help   docs/kafka.md        `mq-kafka --help`: the help[] text of
#                                     broker/mq-kafka/main.c (test/kafka/docs.sh
#                                     also runs it against the binary)
#   kafka-apis   docs/kafka.md        the APIs and versions mq-kafka serves,
#                                     and the first flexible (KIP-482) one:
#                                     the apis[] table of broker/mq-kafka/api.c
#                                     (numbers from handlers.h)
#   gucs         docs/operations.md   the GUCs: DefineCustom*Variable calls
#                                     in src/*.c
#   layers       docs/design.md       each C folder's files by layer, as
#                                     scripts/callgraph.pl counts calls
#
# Each table lives in its doc between the lines
#   <!-- BEGIN NAME: generated from ... by scripts/reftables.sh update; do not edit -->
#   <!-- END NAME -->
#
#   reftables.sh update        rewrite every region from the code
#   reftables.sh check         exit 1 (and show the diff) when a region
#                              differs from what the code generates
#   reftables.sh print NAME    print one generated region
#
# MQ_REFTABLES_ROOT names another tree to read and check (the static test
# uses a copy); default: this repository.  A table row the parser cannot
# read is an error, so a changed table format stops the check instead of
# emptying the docs.
set -euo pipefail

ROOT="${MQ_REFTABLES_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
NAMES=(broker-keys kafka-keys kafka-help kafka-apis gucs layers)

die() {
	echo "reftables.sh: $*" >&2
	exit 1
}

doc_of() {
	case "$1" in
	broker-keys) echo docs/replication.md ;;
	kafka-keys | kafka-help | kafka-apis) echo docs/kafka.md ;;
	gucs) echo docs/operations.md ;;
	layers) echo docs/design.md ;;
	*) die "unknown table $1" ;;
	esac
}

source_of() {
	case "$1" in
	broker-keys | kafka-keys) echo broker/mq-broker/config.c ;;
	kafka-help) echo broker/mq-kafka/main.c ;;
	kafka-apis) echo broker/mq-kafka/api.c ;;
	gucs) echo 'src/*.c' ;;
	layers) echo 'the C files (scripts/callgraph.pl)' ;;
	esac
}

begin_mark() {
	printf '<!-- BEGIN %s: generated from %s by scripts/reftables.sh update; do not edit -->\n' \
		"$1" "$(source_of "$1")"
}
end_mark() { printf '<!-- END %s -->\n' "$1"; }

# generate NAME: the region's text on stdout (parsing in perl, run in ROOT)
generate() {
	if [[ "$1" == layers ]]; then
		layers
		return
	fi
	(cd "$ROOT" && perl -e "$PERL" "$1")
}

# each folder's layers, top first: a file calls only files of lower layers
layers() {
	(cd "$ROOT" && perl scripts/callgraph.pl src broker/common broker/mq-broker broker/mq-kafka broker/mqctl) |
		awk '
			BEGIN { print "| folder | layer | files (a file calls only files of lower layers) |"; print "|---|---|---|" }
			/^[^ ]/ && !/^cycle / { dir = $1; next }
			/^  layer / {
				n = $2; sub(":", "", n); files = ""
				for (i = 3; i <= NF; i++) files = files (i > 3 ? " " : "") "`" $i "`"
				print "| `" dir "` | " n " | " files " |"
				next
			}
			/^cycle / { print "reftables: " $0 > "/dev/stderr"; bad = 1 }
			END { exit bad }'
}

# shellcheck disable=SC2016
PERL='
use strict;
use warnings;

my $what = shift;
my $STR = qr/"(?:[^"\\]|\\.)*"/;    # one C string literal
sub slurp { my ($f) = @_; open(my $h, "<", $f) or die "cannot read $f\n"; local $/; return <$h>; }
sub cstr {    # adjacent C string literals -> their text
	my ($s) = @_;
	my $out = "";
	while ($s =~ /"((?:[^"\\]|\\.)*)"/g) {
		my $t = $1;
		$t =~ s/\\(n|t|"|\\)/$1 eq "n" ? "\n" : $1 eq "t" ? "\t" : $1/ge;
		$out .= $t;
	}
	return $out;
}
sub fail { die "reftables: $_[0]\n"; }

sub broker_keys {
	my ($want_kafka) = @_;
	my $c = slurp("broker/mq-broker/config.c");
	my ($table) = $c =~ /static const ConfigKey keys\[\] = \{(.*?)\n\};/s
	  or fail("no keys[] table in broker/mq-broker/config.c");
	my @rows;
	for my $line (split /\n(?=\tKEY\()/, $table) {
		next unless $line =~ /KEY\(/;
		$line =~ /KEY\(\s*("[^"]*"),\s*("[^"]*"),\s*\w+,\s*\x27(\w)\x27,\s*([\w-]+),\s*([\w-]+),\s*(NULL|$STR),\s*((?:$STR\s*)+)\),?\s*$/s
		  or fail("config.c: cannot read the key line: $line");
		my ($sec, $name, $kind, $min, $max, $dflt, $doc) = (cstr($1), cstr($2), $3, $4, $5, $6, cstr($7));
		next if ($sec eq "kafka") != $want_kafka;
		my $values;
		if ($kind eq "s") { $values = "text" }
		elsif ($min eq "0" && $max eq "1") { $values = "true, false (1, 0)" }
		elsif ($max =~ /_MAX$/) { $values = "$min or more" }
		else { $values = "$min to $max" }
		$dflt = $dflt eq "NULL" ? "" : "`" . cstr($dflt) . "`";
		push @rows, "| [$sec] | `$name` | $dflt | $values | $doc |";
	}
	fail("config.c: no keys read") unless @rows;
	print "| section | key | default | values | meaning |\n|---|---|---|---|---|\n";
	print "$_\n" for @rows;
}

sub kafka_help {
	my $c = slurp("broker/mq-kafka/main.c");
	my ($lits) = $c =~ /static const char help\[\] =\s*((?:$STR\s*)+);/s
	  or fail("no help[] text in broker/mq-kafka/main.c");
	print "```console\n\$ mq-kafka --help\n", cstr($lits), "```\n";
}

sub camel { join "", map { ucfirst lc } split /_/, $_[0] }

sub kafka_apis {
	my $h = slurp("broker/mq-kafka/handlers.h");
	my %num;
	$num{$1} = $2 while $h =~ /\b(KAPI_\w+)\s*=\s*(\d+)/g;
	my $c = slurp("broker/mq-kafka/api.c");
	my ($table) = $c =~ /static const KApi apis\[\] = \{(.*?)\n\};/s
	  or fail("no apis[] table in broker/mq-kafka/api.c");
	my @rows;
	for my $line (split /\n(?=\t\{)/, $table) {
		next unless $line =~ /\{/;
		$line =~ /^\s*\{(KAPI_\w+),\s*(\d+),\s*(\d+),\s*(\d+),\s*\w+,\s*((?:$STR\s*)+)\},?\s*$/s
		  or fail("api.c: cannot read the API line: $line");
		my ($key, $min, $max, $flex, $doc) = ($1, $2, $3, $4, cstr($5));
		defined $num{$key} or fail("api.c: $key has no number in handlers.h");
		(my $name = $key) =~ s/^KAPI_//;
		my $vers = $min == $max ? "$min" : "$min\x{2013}$max";
		my $fv = $flex > $max ? "\x{2014}" : "$flex+";
		push @rows, [$num{$key}, "| " . camel($name) . " ($num{$key}) | $vers | $fv |" . ($doc eq "" ? "" : " $doc") . " |"];
	}
	fail("api.c: no APIs read") unless @rows;
	binmode STDOUT, ":utf8";
	print "| API (key) | versions | flexible | notes |\n|---|---|---|---|\n";
	print "$_->[1]\n" for sort { $a->[0] <=> $b->[0] } @rows;
}

# the arguments of a C call, split at top-level commas
sub args {
	my ($s) = @_;
	my (@a, $cur, $depth);
	$cur = ""; $depth = 0;
	while ($s =~ /\G($STR|[(]|[)]|,|[^"(),]+)/gc) {
		my $t = $1;
		if ($t eq "," && $depth == 0) { push @a, $cur; $cur = ""; next }
		$depth++ if $t eq "(";
		$depth-- if $t eq ")";
		$cur .= $t;
	}
	push @a, $cur;
	s/^\s+|\s+$//g for @a;
	return @a;
}

sub gucs {
	my (%defines, @rows);
	my @files = sort glob("src/*.c");
	for my $f (@files, glob("src/*.h")) {
		my $t = slurp($f);
		$defines{$1} = $2 while $t =~ /^#define\s+(\w+)\s+([^\n]+?)\s*$/mg;
	}
	my %context = (
		PGC_USERSET    => "any role (SET)",
		PGC_SUSET      => "superusers (SET)",
		PGC_SIGHUP     => "postgresql.conf, reload",
		PGC_POSTMASTER => "postgresql.conf, restart",
	);
	my %unit = (GUC_UNIT_MS => "ms", GUC_UNIT_S => "s", GUC_UNIT_BYTE => "bytes", GUC_UNIT_KB => "kB", 0 => "");
	for my $f (@files) {
		my $t = slurp($f);
		# in _PG_init, what follows this test is defined only when preloaded
		my $preload_at = $t =~ /if \(!process_shared_preload_libraries_in_progress\)\s*return;/ ? $-[0] : -1;
		while ($t =~ /DefineCustom(Bool|Int|Real|String|Enum)Variable\((.*?)\);/sg) {
			my ($type, $at, @a) = ($1, $-[0], args($2));
			my ($name, $short, $long, $boot) = (cstr($a[0]), cstr($a[1]), $a[2], $a[4]);
			my ($min, $max, $ctx, $flags);
			if ($type eq "Int" || $type eq "Real") { ($min, $max, $ctx, $flags) = @a[5 .. 8] }
			elsif ($type eq "Enum") { ($ctx, $flags) = @a[6 .. 7] }
			else { ($ctx, $flags) = @a[5 .. 6] }
			defined $flags or fail("$f: cannot read the call defining $name");
			my $val = sub {
				my ($v) = @_;
				$v = $defines{$v} while defined $defines{$v};
				$v = eval $v if $v =~ /^[\d\s*+()-]+$/;
				return $v;
			};
			my $u = $unit{$flags} // fail("$f: $name: flags $flags not known here");
			my $dflt = $type eq "Bool" ? ($boot eq "true" ? "on" : "off")
			  : $type eq "String" ? ($boot eq "NULL" ? "" : "\x27" . cstr($boot) . "\x27")
			  : $val->($boot) . ($u ? " $u" : "");
			my $values = $type eq "Bool" ? "on, off" : $type eq "String" ? "text" : "";
			if ($type eq "Int" || $type eq "Real") {
				my ($lo, $hi) = ($val->($min), $val->($max));
				$values = $hi =~ /_MAX$/ ? "$lo or more" : "$lo to $hi";
				$values .= " $u" if $u;
			}
			my $who = $context{$ctx} // fail("$f: $name: context $ctx not known here");
			my $doc = $short;
			$doc .= " " . cstr($long) if $long ne "NULL";
			$doc .= " Only with `shared_preload_libraries = \x27mq\x27`." if $preload_at >= 0 && $at > $preload_at;
			push @rows, [$name, "| `$name` | $dflt | $values | $who | $doc |"];
		}
	}
	fail("no DefineCustom*Variable calls in src/*.c") unless @rows;
	print "| setting | default | values | set by | meaning |\n|---|---|---|---|---|\n";
	print "$_->[1]\n" for sort { $a->[0] cmp $b->[0] } @rows;
}

if ($what eq "broker-keys") { broker_keys(0) }
elsif ($what eq "kafka-keys") { broker_keys(1) }
elsif ($what eq "kafka-help") { kafka_help() }
elsif ($what eq "kafka-apis") { kafka_apis() }
elsif ($what eq "gucs") { gucs() }
else { fail("unknown table $what") }
'

# regenerated DOC (relative to ROOT) on stdout: each of its regions
# replaced by what the code generates
regenerated() {
	local doc="$1" name args=()
	for name in "${NAMES[@]}"; do
		[[ "$(doc_of "$name")" == "$doc" ]] || continue
		local b e
		b="$(begin_mark "$name")"
		e="$(end_mark "$name")"
		grep -qxF "$b" "$ROOT/$doc" || die "$doc lacks the line $b"
		grep -qxF "$e" "$ROOT/$doc" || die "$doc lacks the line $e"
		args+=("$name")
	done
	local text="" gen
	text="$(cat "$ROOT/$doc")"
	for name in "${args[@]}"; do
		gen="$(generate "$name")" || die "cannot generate $name"
		# the document on stdin: one environment string is capped at
		# 128 KiB (MAX_ARG_STRLEN), which docs/design.md outgrew
		text="$(printf '%s\n' "$text" | GEN="$gen" awk -v b="$(begin_mark "$name")" -v e="$(end_mark "$name")" '
			$0 == b { print; print ENVIRON["GEN"]; skip = 1; next }
			$0 == e { skip = 0 }
			!skip { print }')" || die "cannot rewrite $doc"
	done
	printf '%s\n' "$text"
}

docs() {
	local name
	for name in "${NAMES[@]}"; do doc_of "$name"; done | sort -u
}

case "${1:-}" in
update)
	for doc in $(docs); do
		new="$(regenerated "$doc")"
		printf '%s\n' "$new" >"$ROOT/$doc"
	done
	;;
check)
	status=0
	for doc in $(docs); do
		if ! diff -u "$ROOT/$doc" <(regenerated "$doc") >&2; then
			echo "$doc: a generated table is not what the code says: run bash scripts/reftables.sh update" >&2
			status=1
		fi
	done
	exit "$status"
	;;
print)
	generate "${2:?usage: reftables.sh print NAME}"
	;;
*)
	sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
