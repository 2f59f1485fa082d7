#!/usr/bin/perl
# scripts/format-align.pl TYPEDEFS ORIGINAL < in.c > out.c: the part of pgindent's
# layout that clang-format cannot express, applied after clang-format by
# scripts/format.sh.
#
#  - Declarations: the declared name starts 12 columns right of the
#    statement's indentation ("int			n;", "ListCell   *lc;"), the
#    stars hanging to its left; a type too long for that gets one space.
#    A line is a declaration when every word before the name is a
#    qualifier, a C type, a struct/union/enum tag or a name in TYPEDEFS
#    (scripts/typedefs.list): that list is what tells "Foo *bar;" from a
#    multiplication, as it does for pgindent.  Lines inside parentheses
#    (parameter lists, calls) and preprocessor lines are left alone.
#  - Further declarators of a declaration ("*vals," under "*keys,") are
#    aligned with the first.
#  - Preprocessor directives are kept as they were written (pgindent leaves
#    them alone): ORIGINAL, the file before clang-format, gives them back.
#  - Trailing comments ("x = 1;	/* why */") start at column 33, or one tab
#    after code that reaches past it.
#
# Whitespace is written as pgindent's entab writes it: tabs (width 4) for
# every stretch that reaches a tab stop, spaces for the rest, and a single
# column before a tab stop is a space unless a tab follows it.
use strict;
use warnings;

my $TAB = 4;
my $DECL_COLUMN = 12;		# pgindent -di12
my $COMMENT_COLUMN = 32;	# pgindent -c33 (0-based here)

my %types = map { $_ => 1 }
  qw(void char short int long float double signed unsigned bool _Bool);
my %quals = map { $_ => 1 }
  qw(static extern const volatile register inline);
my %tagged = map { $_ => 1 } qw(struct union enum);

my ($list, $original) = @ARGV;
die "usage: $0 TYPEDEFS ORIGINAL < in > out\n" unless defined $original;
open my $fh, '<', $list or die "$list: $!\n";
while (<$fh>) { chomp; $types{$_} = 1 if length; }
close $fh;

sub width_to
{
	my ($col, $text) = @_;
	for my $ch (split //, $text)
	{
		$col = $ch eq "\t" ? $col - $col % $TAB + $TAB : $col + 1;
	}
	return $col;
}

# whitespace from column $from to column $to (at least one character)
sub entab
{
	my ($from, $to) = @_;
	return ' ' if $to <= $from;
	my @stops;
	for (my $c = $from - $from % $TAB + $TAB; $c <= $to; $c += $TAB) { push @stops, $c; }
	my ($ws, $at) = ('', $from);
	for my $i (0 .. $#stops)
	{
		if ($stops[$i] - $at == 1 && $i == $#stops) { $ws .= ' '; }
		else { $ws .= "\t"; }
		$at = $stops[$i];
	}
	return $ws . (' ' x ($to - $at));
}

# Is every word a qualifier, a type, or a tag after struct/union/enum, with
# at least one type or tag?
sub is_type
{
	my @words = split /\s+/, $_[0];
	my ($after_tag, $typed) = (0, 0);
	for my $w (@words)
	{
		if ($after_tag) { $after_tag = 0; $typed = 1; next; }
		if ($tagged{$w}) { $after_tag = 1; next; }
		next if $quals{$w};
		return 0 unless $types{$w};
		$typed = 1;
	}
	return $typed && !$after_tag;
}

# the column of the name of the declaration being continued, if any
my $decl_column;

sub align_declaration
{
	$decl_column = undef;
	my ($line) = @_;
	my ($indent, $type, $decl);
	if ($line =~ /^(\t*)(\})[ \t]*(\**[A-Za-z_]\w*\s*(?:[\[=;,].*)?)$/)
	{
		# the variable of a struct declared in place ("} stats;"), not a
		# typedef's name
		($indent, $type, $decl) = ($1, $2, $3);
		return $line if $decl =~ /^(\w+)/ && $types{$1};
	}
	elsif ($line =~ /^(\t*)([A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*?)[ \t]*(\(\*+[A-Za-z_]\w*\))[ \t]*(\(.*)$/)
	{
		# a function pointer: "bool		(*handle) (int opt);"
		($indent, $type, $decl) = ($1, $2, "$3 $4");
		return $line unless is_type($type);
	}
	elsif ($line =~ /^(\t*)([A-Za-z_]\w*(?:[ \t]+[A-Za-z_]\w*)*?)[ \t]+(\**)([A-Za-z_]\w*)(\s*(?:[\[=;,:(].*)?)$/)
	{
		my ($stars, $name);
		($indent, $type, $stars, $name, $decl) = ($1, $2, $3, $4, $5);
		return $line unless is_type($type);
		return $line if $types{$name} || $quals{$name} || $tagged{$name};
		$decl = "$stars$name$decl";
	}
	else { return $line; }
	$type =~ s/[ \t]+/ /g;
	my ($stars) = $decl =~ /^(\**)/;
	my $start = length($indent) * $TAB;
	my $end = $start + length($type);
	my $target = $start + $DECL_COLUMN - length($stars);
	my $ws = $end + 1 <= $target ? entab($end, $target) : ' ';
	$decl_column = $start + $DECL_COLUMN;
	return "$indent$type$ws$decl";
}

# a further declarator of a declaration continued from the line before
sub align_declarator
{
	my ($line) = @_;
	return undef unless $line =~ /^[ \t]*(\**)([A-Za-z_]\w*)(\s*(?:[\[=;,].*)?)$/;
	return entab(0, $decl_column - length($1)) . "$1$2$3";
}

# Preprocessor directives (with their continuation lines) in order, each
# as [ lines ].
sub directives
{
	my ($lines) = @_;
	my (@out, $open);
	for my $l (@$lines)
	{
		if ($open) { push @{ $out[-1] }, $l; }
		elsif ($l =~ /^\s*#/) { push @out, [$l]; }
		else { next; }
		$open = $l =~ /\\$/;
	}
	return @out;
}

sub squeeze { (my $s = join(' ', @_)) =~ s/[\s\\]+//g; return $s; }

# Put back the directives of the original where clang-format changed only
# their whitespace.
sub restore_directives
{
	my ($orig, $new) = @_;
	my @was = directives($orig);
	my (@out, $open, $k);
	$k = 0;
	for (my $i = 0; $i < @$new; $i++)
	{
		my $l = $new->[$i];
		if ($l =~ /^\s*#/ && $k < @was)
		{
			my $j = $i;
			$j++ while $new->[$j] =~ /\\$/ && $j + 1 < @$new;
			my @now = @$new[ $i .. $j ];
			my $w = $was[ $k++ ];
			push @out, squeeze(@now) eq squeeze(@$w) ? @$w : @now;
			$i = $j;
			next;
		}
		push @out, $l;
	}
	return @out;
}

sub align_comment
{
	my ($code, $comment) = @_;
	my $end = width_to(0, $code);
	my $ws;
	if ($end < $COMMENT_COLUMN) { $ws = entab($end, $COMMENT_COLUMN); }
	else
	{
		my $stop = $end - $end % $TAB + $TAB;
		$ws = $stop - $end > 1 ? "\t" : ' ';
	}
	return "$code$ws$comment";
}

# The line with the insides of string and character literals and of
# comments blanked (same columns); updates whether a block comment is still
# open at its end.
sub code_only
{
	my ($line, $in_comment) = @_;
	my $out = '';
	my $blank = sub { (my $t = $_[0]) =~ s/[^\t]/ /g; return $t; };
	while (length $line)
	{
		if ($$in_comment)
		{
			if ($line =~ s{^(.*?\*/)}{}) { $$in_comment = 0; $out .= $blank->($1); }
			else { $out .= $blank->($line); $line = ''; }
		}
		elsif ($line =~ s{^/\*}{}) { $$in_comment = 1; $out .= '  '; }
		elsif ($line =~ s{^(//.*)}{}) { $out .= $blank->($1); }
		elsif ($line =~ s{^(["'])((?:\\.|(?!\1)[^\\])*)\1}{})
		{
			$out .= $1 . ('x' x length($2)) . $1;
		}
		else { $line =~ s{^(.)}{}s; $out .= $1; }
	}
	return $out;
}

# visual column of the first "(" of a line, if any
sub paren_column
{
	my ($line) = @_;
	return undef unless $line =~ /^([^(]*)\(/;
	return width_to(0, $1);
}

# leading whitespace of a continuation line moved by $delta columns
sub shift_line
{
	my ($line, $delta) = @_;
	return $line unless $line =~ /^([ \t]+)(\S.*)$/;
	return entab(0, width_to(0, $1) + $delta) . $2;
}

open my $of, '<', $original or die "$original: $!\n";
chomp(my @orig = <$of>);
close $of;
chomp(my @input = <STDIN>);
my @lines = restore_directives(\@orig, \@input);
# lines as the original has them, whitespace aside: where clang-format
# insists on a line break that the author did not make, the line decides
my %written = map { squeeze($_) => 1 } @orig;

my ($in_comment, $depth, $braces, $macro, $shift) = (0, 0, 0, 0, 0);
my @parens;			# visual columns just inside each open "("
my $prev_code = '';
for (my $i = 0; $i < @lines; $i++)
{
	my $line = $lines[$i];
	my $was_comment = $in_comment;
	my $code = code_only($line, \$in_comment);
	my $is_macro = $macro || $line =~ /^\s*#/;
	my $plain = !$was_comment && !$is_macro;
	$macro = $is_macro && $line =~ /\\$/;
	if ($plain && $depth == 0)
	{
		my $before = $line;
		my $further = defined $decl_column ? align_declarator($line) : undef;
		$line = defined $further ? $further : align_declaration($line);
		$decl_column = undef if $code !~ /,\s*$/;
		# continuation lines aligned under its "(" move with it
		my ($was, $now) = (paren_column($before), paren_column($line));
		$shift = defined $was && defined $now ? $now - $was : 0;
	}
	elsif ($plain && $line =~ /^\s*"/ && $prev_code =~ /"\s*$/ && @parens)
	{
		# a string continued from the line before (implicit concatenation)
		# lines up with the other arguments, not with the first string, and
		# the arguments after it stay on its line
		$line =~ s/^\s*/entab(0, $parens[-1])/e;
		if ($code =~ /",\s*$/ && $i + 1 < @lines && $lines[ $i + 1 ] =~ /^\s+([^\s"\/].*)$/
			&& $written{ squeeze("$line $1") })
		{
			$line .= " $1";
			splice @lines, $i + 1, 1;
		}
	}
	elsif ($plain && $shift)
	{
		$line = shift_line($line, $shift);
	}
	if ($plain)
	{
		# pgindent writes variadic parameters as ",...)"
		$line =~ s/, \.\.\.\)/,...)/ if $code =~ /, \.\.\.\)/;
		# file-scope strings continued on further lines start at column 1
		$line =~ s/^[ \t]+"/"/ if $braces == 0 && $depth == 0;
	}
	if (!$was_comment && $line =~ m{^(.*\S)[ \t]+(/\*(?:(?!\*/).)*\*/)[ \t]*$})
	{
		my ($c, $comment) = ($1, $2);
		my $open = 0;
		# only when it is the line's one comment
		$line = align_comment($c, $comment)
		  if code_only($c, \$open) !~ m{/\*} && !$open && $c !~ m{^\s*/?\*};
	}
	# the last row of an initializer list: the list's "};" on a line of its own
	$line =~ s/^(\t+)(\{.*\})\}(;?)$/"$1$2\n" . substr($1, 1) . "}$3"/e if $plain;
	print "$line\n";
	next if $is_macro;
	my $still = $was_comment;
	$code = code_only($line, \$still);
	my $col = 0;
	for my $ch (split //, $code)
	{
		$col = $ch eq "\t" ? $col - $col % $TAB + $TAB : $col + 1;
		if ($ch eq '(') { $depth++; push @parens, $col; }
		if ($ch eq ')' && $depth > 0) { $depth--; pop @parens; }
		$braces++ if $ch eq '{';
		$braces-- if $ch eq '}' && $braces > 0;
	}
	$prev_code = $code if $code =~ /\S/;
	$decl_column = undef if $depth > 0;
	$shift = 0 if $depth == 0;
}
