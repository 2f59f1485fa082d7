#!/usr/bin/perl
# scripts/format-align.pl TYPEDEFS ORIGINAL < in.c > out.c: the part of
# pgindent's layout that clang-format 14 cannot express, applied to
# clang-format's output by scripts/format.sh.  ORIGINAL is the file as it
# was before clang-format.
#
#  - Line breaks are the author's, as with pgindent, which never joins or
#    splits code lines: where clang-format joined lines inside a statement
#    (it will not break some operands and nested arguments, even with no
#    column limit) they are cut again where ORIGINAL had its breaks, and
#    where it broke a line ORIGINAL has whole (after a string continued on
#    the next line, inside chains of ?:) the pieces are joined again.
#    Braces on their own lines and one statement a line stay clang-format's.
#  - Continuation lines: inside parentheses under the innermost open one
#    (pgindent -lp); a statement continued after an operator 4 columns in
#    from its first line (-ci4).
#  - Declarations: the declared name starts 12 columns right of the
#    statement's indentation ("int			n;", "ListCell   *lc;"), the
#    stars hanging to its left, further declarators under the first; a
#    type too long for that gets one space (-di12).  A line is a
#    declaration when every word before the name is a qualifier, a C type,
#    a struct/union/enum tag or a name in TYPEDEFS (scripts/typedefs.list):
#    that list is what tells "Foo *bar;" from a multiplication, as it is
#    for pgindent.
#  - Trailing comments ("x = 1;	/* why */") start at column 33, or one
#    tab after code that reaches past it (-c33).
#  - Preprocessor directives are kept as written (pgindent leaves them
#    alone); "(*fn) (args)" and ",...)" are written as pgindent does.
#
# Whitespace is written as pgindent's entab writes it: tabs (width 4) for
# every stretch that reaches a tab stop, spaces for the rest, and a single
# column before a tab stop is a space unless a tab follows it.
use strict;
use warnings;

my $TAB = 4;
my $DECL_COLUMN = 12;		# pgindent -di12
my $COMMENT_COLUMN = 32;	# pgindent -c33 (0-based here)

my %keywords = map { $_ => 1 }
  qw(void char short int long float double signed unsigned bool _Bool);
my %types = %keywords;
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
		# the name may be a typedef's too ("char *text;"), not a keyword
		return $line if $keywords{$name} || $quals{$name} || $tagged{$name};
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
	else { $ws = "\t"; }
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

# The original's lines, and each (whitespace aside) with where it stands:
# where clang-format breaks or joins lines against the author's choice,
# the original decides.
my (@orig, %written, %where);
sub read_original
{
	open my $of, '<', $original or die "$original: $!\n";
	chomp(@orig = <$of>);
	close $of;
	for my $i (0 .. $#orig)
	{
		my $s = squeeze($orig[$i]);
		$written{$s} = 1;
		push @{ $where{$s} }, $i;
	}
}

# Line breaks the author made inside a statement that clang-format took
# out (it joins operands and nested arguments it will not break, even
# with no column limit): pgindent keeps them, so the joined line is cut
# again where the original had its breaks, and the pieces after the first
# are marked for a continuation indent (see below): "\x01WS\x02" before
# the piece, WS the indentation the original gave it.
my $cursor = 0;		# where in the original the lines have got to
sub resplit
{
	my ($line) = @_;
	my $want = squeeze($line);
	if ($written{$want})
	{
		my ($next) = grep { $_ >= $cursor } @{ $where{$want} };
		$cursor = $next if defined $next;
		return ($line);
	}
	return ($line) if $line =~ /^\s*#/ || length($want) < 2;
	# the nearest candidates first: the same text may stand elsewhere
	for my $i ($cursor .. $#orig, 0 .. $cursor - 1)
	{
		my $first = squeeze($orig[$i]);
		next unless length $first && length $first < length $want
		  && substr($want, 0, length $first) eq $first;
		my @sizes = (length $first);
		my $have = $first;
		for (my $j = $i + 1; $j < @orig && length $have < length $want; $j++)
		{
			my $next = squeeze($orig[$j]);
			last unless length $next
			  && substr($want, length $have, length $next) eq $next;
			$have .= $next;
			push @sizes, length $next;
		}
		next unless $have eq $want;
		# cut the line after as many non-blank characters as each piece has
		my @ws = map { /^([ \t]*)/; $1 } @orig[ $i + 1 .. $i + $#sizes ];
		my @pieces;
		my ($piece, $count) = ('', 0);
		for my $ch (split //, $line)
		{
			if (@sizes > 1 && $count == $sizes[0] && $ch =~ /\S/)
			{
				push @pieces, $piece;
				($piece, $count) = ('', 0);
				shift @sizes;
			}
			$piece .= $ch;
			$count++ if $ch !~ /[\s\\]/;
		}
		push @pieces, $piece;
		s/[ \t]+$// for @pieces;
		s/^\s+// for @pieces[ 1 .. $#pieces ];
		$pieces[$_] = "\x01$ws[$_ - 1]\x02$pieces[$_]" for 1 .. $#pieces;
		$cursor = $i + @pieces - 1;
		return @pieces;
	}
	return ($line);
}
# Line breaks clang-format made that the author did not (after a string
# continued on the next line, inside chains of ?:) go again: consecutive
# lines none of which the original has, joined, make a line it has.
sub rejoin
{
	my @in = @_;
	my @out;
	for (my $i = 0; $i < @in; $i++)
	{
		my $line = $in[$i];
		if ($line !~ /^\s*#/ && !$written{ squeeze($line) })
		{
			my $joined = $line;
			for (my $j = $i + 1; $j < @in && $j < $i + 8; $j++)
			{
				# within one statement only: a line ending in "," or an
				# operator, the next not a brace
				my $open = 0;
				last if code_only($in[ $j - 1 ], \$open) !~ /[-+*\/%&|^<>=?:,(]\s*$/ || $open;
				last if $in[$j] =~ /^\s*(#|$|[{}])/;
				(my $next = $in[$j]) =~ s/^\s+//;
				$joined .= " $next";
				if ($written{ squeeze($joined) })
				{
					($line, $i) = ($joined, $j);
					last;
				}
			}
		}
		push @out, $line;
	}
	return @out;
}
# What the lines before tell about the next one.
my %at = (
	comment => 0,		# inside a block comment
	macro => 0,			# on a continued preprocessor line
	depth => 0,			# open parentheses
	braces => 0,		# open braces
	prev_code => '',	# the last line with code, literals and comments blanked
	stmt_indent => 0,	# indentation of the statement going on
);
my @parens;				# visual columns just inside each open "("

# The indentation (and declaration alignment) of a line of plain code;
# $continued is the author's indentation of a line break put back.
sub indent_line
{
	my ($line, $code, $continued) = @_;
	if (defined $continued)
	{
		# a line break of the author's put back: continued under the
		# innermost open parenthesis, or as the author indented it
		return (@parens ? entab(0, $parens[-1]) : $continued) . $line;
	}
	if (@parens)
	{
		# inside parentheses a line continues under the innermost open
		# one (pgindent's -lp), whatever clang-format aligned it with
		$line =~ s/^[ \t]*(?=\S)/entab(0, $parens[-1])/e;
		return $line;
	}
	if ($at{braces} > 0 && $line =~ /\S/ && $at{prev_code} =~ /(?:[-+*\/%&|^<>=?]|[^:]:)\s*$/
		&& $at{prev_code} !~ /^\s*(?:case\b.*|default|[A-Za-z_]\w*)\s*:\s*$/)
	{
		# a statement continued after an operator: 4 columns in from its
		# first line (pgindent's -ci4)
		$line =~ s/^[ \t]*/entab(0, $at{stmt_indent} + $TAB)/e;
		return $line;
	}
	my $further = defined $decl_column ? align_declarator($line) : undef;
	$line = defined $further ? $further : align_declaration($line);
	$decl_column = undef if $code !~ /,\s*$/;
	return $line;
}

# Spacing inside a line of plain code.
sub space_line
{
	my ($line) = @_;
	my $code = code_only($line, \(my $ignore = 0));
	# no alignment inside a line (clang-format lines up chained ?:)
	while ($code =~ /(?<=\S)([ \t]{2,}|\t)(?=[?:])/g)
	{
		my ($at, $len) = ($-[1], length $1);
		substr($line, $at, $len) = ' ';
		substr($code, $at, $len) = ' ';
		pos($code) = $at + 1;
	}
	# a function pointer and its arguments: "(*fn) (x)"
	$line =~ s/(\(\*+\w+\))\(/$1 (/g if $code =~ /\(\*+\w+\)\(/;
	# pgindent writes variadic parameters as ",...)"
	$line =~ s/, \.\.\.\)/,...)/ if $code =~ /, \.\.\.\)/;
	# file-scope strings continued on further lines start at column 1
	$line =~ s/^[ \t]+"/"/ if $at{braces} == 0 && !@parens;
	return $line;
}

# A trailing comment moved to its column.
sub place_comment
{
	my ($line) = @_;
	return $line unless $line =~ m{^(.*\S)[ \t]+(/\*(?:(?!\*/).)*\*/)[ \t]*$};
	my ($c, $comment) = ($1, $2);
	my $open = 0;
	# only when it is the line's one comment
	return $line if code_only($c, \$open) =~ m{/\*} || $open || $c =~ m{^\s*/?\*};
	return align_comment($c, $comment);
}

# Keep count of parentheses and braces after a line of code.
sub track
{
	my ($line, $code) = @_;
	my $depth_before = $at{depth};
	my $col = 0;
	for my $ch (split //, $code)
	{
		$col = $ch eq "\t" ? $col - $col % $TAB + $TAB : $col + 1;
		if ($ch eq '(') { $at{depth}++; push @parens, $col; }
		if ($ch eq ')' && $at{depth} > 0) { $at{depth}--; pop @parens; }
		$at{braces}++ if $ch eq '{';
		$at{braces}-- if $ch eq '}' && $at{braces} > 0;
	}
	if ($code =~ /\S/)
	{
		# the indentation of the statement a continuation line belongs to
		my $continues = $at{prev_code} =~ /(?:[-+*\/%&|^<>=?,(]|[^:]:)\s*$/ || $depth_before > 0;
		$at{stmt_indent} = width_to(0, $line =~ /^([ \t]*)/ ? $1 : '') unless $continues;
		$at{prev_code} = $code;
	}
	$decl_column = undef if $at{depth} > 0;
}

sub main
{
	read_original();
	chomp(my @input = <STDIN>);
	my @lines = map { resplit($_) } rejoin(restore_directives(\@orig, \@input));
	for my $line (@lines)
	{
		my $continued = $line =~ s/^\x01([^\x02]*)\x02// ? $1 : undef;
		my $was_comment = $at{comment};
		my $code = code_only($line, \$at{comment});
		my $is_macro = $at{macro} || $line =~ /^\s*#/;
		$at{macro} = $is_macro && $line =~ /\\$/;
		if (!$was_comment && !$is_macro)
		{
			$line = space_line(indent_line($line, $code, $continued));
		}
		$line = place_comment($line) unless $was_comment;
		print "$line\n";
		next if $is_macro;
		my $still = $was_comment;
		track($line, code_only($line, \$still));
	}
}

main();
