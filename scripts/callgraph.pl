#!/usr/bin/perl
# scripts/callgraph.pl DIR...: the call graph between the C files of each
# folder, counted as docs/design.md ("Layers") counts it: file A depends
# on file B when A calls (or names) a function that B defines without
# `static`.  For each folder it prints the files by layer (a file stands
# above every file it depends on) and then each cycle: a set of files
# that depend on each other, directly or through a chain.
#
# Functions are found in PostgreSQL's layout, which scripts/format.sh
# enforces: the name at column 0 followed by "(", the return type on the
# line before (with "static" for a file's own).  Comments, strings and
# character constants are removed before names are looked for.  Calls
# through a pointer a caller handed over (a completion callback) are not
# calls of the callee's file: that is how a lower layer reports back.
#
# Output lines:  "layer N: a.c b.c"  and  "cycle DIR: a.c b.c ..." (files
# sorted).  Exit status 0; test/static/cycles.sh judges the cycles.
use strict;
use warnings;

# --edges: also print "edge a.c -> b.c: f g" for every dependency, to see
# which calls hold a cycle together
my $show_edges = @ARGV && $ARGV[0] eq '--edges' ? shift @ARGV : 0;

sub strip_code {
	my ($text) = @_;
	$text =~ s{/\*.*?\*/}{ }gs;
	$text =~ s{//[^\n]*}{}g;
	$text =~ s{"(?:\\.|[^"\\\n])*"}{""}g;
	$text =~ s{'(?:\\.|[^'\\\n])*'}{''}g;
	return $text;
}

# the non-static functions a file defines
sub definitions {
	my ($text) = @_;
	my @lines = split /\n/, $text;
	my %defs;
	for my $i (1 .. $#lines) {
		next unless $lines[$i] =~ /^([A-Za-z_]\w*)\(/;
		my $name = $1;
		my $type = $lines[$i - 1];
		next if $type =~ /^\s*$/ || $type =~ /[;{}]\s*$/ || $type =~ /^#/;
		next if $type =~ /\bstatic\b/;
		# a definition, not a prototype: "{" before the next ";"
		my $j = $i;
		$j++ while $j < $#lines && $lines[$j] !~ /[;{]\s*$/ && $lines[$j] !~ /^\{/;
		next unless $lines[$j] =~ /\{\s*$/ || ($j + 1 <= $#lines && $lines[$j + 1] =~ /^\{/ && $lines[$j] !~ /;\s*$/);
		$defs{$name} = 1;
	}
	return \%defs;
}

# Tarjan's strongly connected components
sub components {
	my ($nodes, $edges) = @_;
	my ($index, @stack, %idx, %low, %on, @sccs) = (0);
	my $visit;
	$visit = sub {
		my ($v) = @_;
		$idx{$v} = $low{$v} = $index++;
		push @stack, $v;
		$on{$v} = 1;
		for my $w (sort keys %{ $edges->{$v} }) {
			if (!defined $idx{$w}) {
				$visit->($w);
				$low{$v} = $low{$w} if $low{$w} < $low{$v};
			} elsif ($on{$w}) {
				$low{$v} = $idx{$w} if $idx{$w} < $low{$v};
			}
		}
		if ($low{$v} == $idx{$v}) {
			my @c;
			while (1) {
				my $w = pop @stack;
				$on{$w} = 0;
				push @c, $w;
				last if $w eq $v;
			}
			push @sccs, [sort @c];
		}
	};
	for my $v (@$nodes) { $visit->($v) unless defined $idx{$v} }
	return @sccs;
}

for my $dir (@ARGV) {
	my @files = sort glob("$dir/*.c");
	my (%text, %defs, %owner, %edges);
	for my $f (@files) {
		open my $fh, '<', $f or die "$f: $!\n";
		local $/;
		$text{$f} = strip_code(<$fh>);
		close $fh;
		$defs{$f} = definitions($text{$f});
		$owner{$_} = $f for keys %{ $defs{$f} };
		$edges{$f} = {};
	}
	for my $f (@files) {
		my %seen;
		while ($text{$f} =~ /\b([A-Za-z_]\w*)\b/g) {
			my $o = $owner{$1};
			next unless defined $o && $o ne $f && !$seen{$1}++;
			push @{ $edges{$f}{$o} }, $1;
		}
	}
	my @sccs = components(\@files, \%edges);
	my %comp;
	for my $c (@sccs) { $comp{$_} = $c for @$c }
	# layers over the graph of components: 0 calls nothing in the folder
	my %layer;
	my $layer_of;
	$layer_of = sub {
		my ($f) = @_;
		return $layer{$f} if defined $layer{$f};
		$layer{$_} = 0 for @{ $comp{$f} };
		my $l = 0;
		for my $m (@{ $comp{$f} }) {
			for my $w (keys %{ $edges{$m} }) {
				next if $comp{$w} == $comp{$f};
				my $lw = $layer_of->($w) + 1;
				$l = $lw if $lw > $l;
			}
		}
		$layer{$_} = $l for @{ $comp{$f} };
		return $l;
	};
	$layer_of->($_) for @files;
	print "$dir\n";
	my $top = 0;
	for (values %layer) { $top = $_ if $_ > $top }
	for my $l (reverse 0 .. $top) {
		my @in = map { s{^\Q$dir\E/}{}r } grep { $layer{$_} == $l } @files;
		print "  layer $l: @in\n" if @in;
	}
	if ($show_edges) {
		for my $f (@files) {
			for my $o (sort keys %{ $edges{$f} }) {
				printf "edge %s -> %s: %s\n", map({ s{^\Q$dir\E/}{}r } $f, $o),
				  join(' ', @{ $edges{$f}{$o} });
			}
		}
	}
	for my $c (@sccs) {
		next unless @$c > 1;
		print "cycle $dir: " . join(' ', map { s{^\Q$dir\E/}{}r } @$c) . "\n";
	}
}
