# The analysis of test/bench/ackpath.sh (see its header): reads pgbench's
# per-record logs (lat_<acks>_<run>.*: client, record, latency us, script,
# end s, end us) and the followers' brokers' strace files
# (strace.<run>.<broker>, -ttt -xx), and prints where each acks=all
# record's time went, step by step, as a markdown table.
#
# Usage: perl ackpath.pl WORKDIR RUNS FOLLOWER...
use strict;
use warnings;

my ($work, $runs, @followers) = @ARGV;
die "usage: ackpath.pl WORKDIR RUNS FOLLOWER...\n" unless defined $runs && @followers;
# records per CALL (ackpath.sh --records): a batch is timed by its first offset
my $per = 1;
if (open my $rf, '<', "$work/records")
{
	chomp($per = <$rf>);
}

# records of one acks run: [start us, end us] in order, offsets from base
sub records
{
	my ($acks, $run) = @_;
	my @r;
	for my $f (glob "$work/lat_${acks}_$run.*")
	{
		open my $fh, '<', $f or die "$f: $!";
		while (<$fh>)
		{
			my @c = split;
			next unless @c >= 6;
			my $end = $c[4] * 1e6 + $c[5];
			push @r, [ $end - $c[2], $end ];
		}
	}
	return @r;
}

# the fetch offset: the first of mq.replica_fetch_commit's fetch_offsets
# (binary int8[]), or an older broker's mq.replica_fetch argument (text)
sub fetch_offset
{
	my ($v) = @_;
	return $v if $v =~ /^\d+$/;
	return undef if length($v) < 32 || unpack('N', $v) != 1;
	return unpack('q>', substr($v, 24, 8));
}

# The kind of a frontend message buffer: ('F', fetch offset), ('A'), ('O').
sub classify
{
	my ($buf) = @_;
	my ($query, $pos) = ('', 0);
	while ($pos + 5 <= length $buf)
	{
		my $type = substr($buf, $pos, 1);
		my $len = unpack('N', substr($buf, $pos + 1, 4));
		my $body = substr($buf, $pos + 5, $len - 4);
		if ($type eq 'P')
		{
			(undef, $query) = split /\0/, $body, 3;
			$query //= '';
		}
		elsif ($type eq 'B' && $query =~ /replica_fetch/)
		{
			my $p = index($body, "\0") + 1;    # portal
			$p = index($body, "\0", $p) + 1;      # statement
			my $nf = unpack('n', substr($body, $p, 2));
			$p += 2 + 2 * $nf;
			my $np = unpack('n', substr($body, $p, 2));
			$p += 2;
			for my $i (0 .. $np - 1)
			{
				last if $p + 4 > length $body;
				my $l = unpack('l>', substr($body, $p, 4));
				$p += 4;
				return ('F', fetch_offset(substr($body, $p, $l))) if $i == 4;
				$p += $l if $l > 0;
			}
			return ('F', undef);
		}
		$pos += 1 + $len;
	}
	return ('A') if $query =~ /replica_append/;
	return ('F', undef) if $query =~ /replica_fetch/;
	return ('O');
}

# A broker's events in time order: [t us, kind, offset], kinds FS, FR
# (fetch sent, first answer byte read), AS, AR (append), O (other).
sub events
{
	my ($file) = @_;
	my (@ev, %pending);
	open my $fh, '<', $file or return ();
	while (<$fh>)
	{
		next unless /^(\d+)\.(\d+) (sendto|recvfrom)\((\d+), (?:"([^"]*)"(?:\.\.\.)?|\S+?), .*\) = (-?\d+)/;
		my ($t, $call, $fd, $data, $rc) = ($1 * 1e6 + $2, $3, $4, $5 // '', $6);
		next if $rc <= 0;
		if ($call eq 'sendto')
		{
			# a large message (a batch's append) goes out in several
			# sends: the rest of one already sent is not a new message
			next if exists $pending{$fd};
			(my $bytes = $data) =~ s/\\x([0-9a-f]{2})/chr(hex($1))/ge;
			my ($kind, $off) = classify($bytes);
			# Terminate ('X') has no answer; the fd may serve a new connection
			$pending{$fd} = [ $kind, $off ] unless substr($bytes, 0, 1) eq 'X';
			push @ev, [ $t, $kind eq 'O' ? 'O' : $kind . 'S', $off ];
		}
		elsif (my $p = delete $pending{$fd})
		{
			push @ev, [ $t, $p->[0] eq 'O' ? 'O' : $p->[0] . 'R', $p->[1] ];
		}
	}
	return @ev;
}

# For each offset: the follower's times [FR, AS, AR, FS(ack), FR(ack)].
sub paths
{
	my @ev = @_;
	my %path;
	for my $i (0 .. $#ev)
	{
		next unless $ev[$i][1] eq 'FR' && defined $ev[$i][2];
		my $o = $ev[$i][2];
		my @want = ('AS', 'AR', 'FS', 'FR');
		my @t = ($ev[$i][0]);
		for my $j ($i + 1 .. $#ev)
		{
			last unless @want;
			next unless $ev[$j][1] eq $want[0];
			last if $want[0] eq 'FS' && !(defined $ev[$j][2] && $ev[$j][2] > $o);
			push @t, $ev[$j][0];
			shift @want;
		}
		$path{$o} = \@t unless @want;	# the last complete chain of o
	}
	return %path;
}

sub median
{
	my @s = sort { $a <=> $b } @_;
	return @s ? $s[int($#s / 2)] : 0;
}

sub pct
{
	my ($p, @v) = @_;
	my @s = sort { $a <=> $b } @v;
	my $i = int(@s * $p / 100) - 1;
	$i = 0 if $i < 0;
	return @s ? $s[$i] : 0;
}

sub mean
{
	my $n = 0;
	$n += $_ for @_;
	return @_ ? $n / @_ : 0;
}

my @names = ('1 commit+fetch: record start -> the record\'s fetch answer at the broker',
	'2 broker: -> append sent to its node',
	'3 append+flush: -> the node answered',
	'4 broker: -> acknowledging fetch sent',
	'5 ack fetch: -> its answer (high watermark moved)',
	'6 wake+return: the later answer -> record end');
my (@steps, @total, @other_early, @lat1, @latall);
for my $run (1 .. $runs)
{
	push @lat1, map { $_->[1] - $_->[0] } records('1', $run);
	my @recs = records('all', $run);
	push @latall, map { $_->[1] - $_->[0] } @recs;
	open my $bf, '<', "$work/base.all.$run" or die "base.all.$run: $!";
	chomp(my $base = <$bf>);
	my %fp;
	for my $b (@followers)
	{
		my %p = paths(events("$work/strace.$run.$b"));
		$fp{$b} = \%p;
	}
	for my $k (0 .. $#recs)
	{
		my ($s, $e) = @{ $recs[$k] };
		my $o = $base + $k * $per;
		my @p = grep { defined } map { $fp{$_}{$o} } @followers;
		next unless @p == @followers;
		next if grep { $_->[0] < $s || $_->[4] > $e } @p;	# not this record's
		my ($crit, @rest) = sort { $b->[4] <=> $a->[4] } @p;
		my @d = ($crit->[0] - $s, map { $crit->[$_] - $crit->[ $_ - 1 ] } 1 .. 4);
		push @d, $e - $crit->[4];
		push @{ $steps[$_] }, $d[$_] for 0 .. 5;
		push @total, $e - $s;
		push @other_early, $crit->[4] - $_->[4] for @rest;
	}
}
my $tmean = mean(@total);
printf "| step of an acks=all record (%d records traced) | median, ms | mean, ms | share of the mean |\n",
  scalar @total;
print "|---|---:|---:|---:|\n";
for my $i (0 .. 5)
{
	my $m = mean(@{ $steps[$i] // [] });
	printf "| %s | %.2f | %.2f | %.0f %% |\n", $names[$i], median(@{ $steps[$i] // [] }) / 1000,
	  $m / 1000, $tmean ? 100 * $m / $tmean : 0;
}
printf "| total, traced records | %.2f | %.2f | |\n", median(@total) / 1000, $tmean / 1000;
printf "| the other follower's answer came earlier by | %.2f | %.2f | |\n",
  median(@other_early) / 1000, mean(@other_early) / 1000;
printf "\nacks=1: %d records, p50 %.2f ms, p99 %.2f ms; acks=all (brokers traced): %d records, p50 %.2f ms, p99 %.2f ms; p50 ratio %.2f, p99 ratio %.2f\n",
  scalar @lat1, pct(50, @lat1) / 1000, pct(99, @lat1) / 1000,
  scalar @latall, pct(50, @latall) / 1000, pct(99, @latall) / 1000,
  pct(50, @lat1) ? pct(50, @latall) / pct(50, @lat1) : 0,
  pct(99, @lat1) ? pct(99, @latall) / pct(99, @lat1) : 0;
