# Leader epochs through raw frames (run by epochs.sh with the broker's
# port, after it gave topic ep the epochs 0 from offset 0, 2 from 3 and 5
# from 5, seven records, group eg's offset 4, topic ep2 an epoch history
# that starts at epoch 3, and topic fol to this node as a follower):
# OffsetForLeaderEpoch's answers as Kafka's epoch cache gives them,
# Fetch's current leader epoch check and each batch's partition leader
# epoch, ListOffsets' epochs and checks, OffsetFetch's epochs; and that an
# API not served is not advertised and closes the connection when sent
# anyway.  Prints TAP.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(:DEFAULT kafka_connect kafka_request ok tap_done);

my $port = shift or die "usage: epochs.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';

my $sock = kafka_connect($port);

# one request; the response body after the correlation id (and, for a
# flexible version, the header's tagged fields), or undef when closed
sub call {
	my ($api, $ver, $body, $flex) = @_;
	my $r = kafka_request($sock, 'epochs.pl', $api, $ver, $body, $flex);
	return defined $r ? substr($r, $flex ? 5 : 4) : undef;
}

# ---- ApiVersions: OffsetForLeaderEpoch advertised 0-4
{
	my $r = call(18, 0, '');
	my ($err, $cnt) = unpack('s> l>', $r // '');
	my %adv;
	for my $i (0 .. ($cnt // 0) - 1) {
		my ($k, $lo, $hi) = unpack('x' . (6 + 6 * $i) . ' s> s> s>', $r);
		$adv{$k} = "$lo-$hi";
	}
	ok(($adv{23} // '') eq '0-4', 'ApiVersions advertises OffsetForLeaderEpoch (23) 0-4', 'got ' . ($adv{23} // 'none'));
}

# ---- what is not served: not advertised, and a request closes the
# connection (Kafka closes it for an API or version it does not serve)
{
	my $r = call(18, 0, '');
	my $cnt = defined $r ? unpack('x2 l>', $r) : 0;
	my %adv = map { unpack('x' . (6 + 6 * $_) . ' s>', $r) => 1 } 0 .. $cnt - 1;
	ok($cnt > 0 && !$adv{55} && !$adv{57}, 'DescribeQuorum (55), UpdateFeatures (57) are not advertised');
	ok(!defined call(55, 0, pack('l>', 0)), 'a DescribeQuorum request sent anyway closes the connection');
	$sock = kafka_connect($port);
	$r = call(18, 0, '');
	ok(defined $r && unpack('s>', $r) == 0, 'and the daemon serves the next connection');
}

# ---- OffsetForLeaderEpoch v3 (v2+: current leader epoch): (error, epoch, end offset)
sub epoch_end {
	my ($topic, $partition, $asked, $current, $ver) = @_;
	$ver //= 3;
	my $body = ($ver >= 3 ? pack('l>', -1) : '') . pack('l>', 1) . str($topic) . pack('l> l>', 1, $partition)
	  . ($ver >= 2 ? pack('l>', $current // -1) : '') . pack('l>', $asked);
	my $r = call(23, $ver, $body);
	return () unless defined $r;
	my $pos = $ver >= 2 ? 4 : 0;
	my $tlen = unpack("x$pos x4 n", $r);
	$pos += 4 + 2 + $tlen + 4;
	return unpack("x$pos s> x4 l> q>", $r) if $ver >= 1;
	my ($e, $end) = unpack("x$pos s> x4 q>", $r);
	return ($e, undef, $end);
}

for my $c ([0, 0, 3, 'the start of epoch 2'], [1, 0, 3, 'epoch 0 (the largest below) up to epoch 2'],
	[2, 2, 5, 'the start of epoch 5'], [4, 2, 5, 'epoch 2 up to epoch 5'],
	[5, 5, 7, 'the latest epoch: the log end'], [6, -1, -1, 'an epoch after the latest: undefined'],
	[-1, -1, -1, 'the undefined epoch: undefined']) {
	my ($asked, $epoch, $end, $what) = @$c;
	my ($e, $got_epoch, $got_end) = epoch_end('ep', 0, $asked);
	ok(defined $e && $e == 0 && $got_epoch == $epoch && $got_end == $end,
		"OffsetForLeaderEpoch of epoch $asked: ($epoch, $end), $what",
		'got ' . join(', ', map { $_ // 'undef' } $e, $got_epoch, $got_end));
}
{
	my ($e, $epoch, $end) = epoch_end('ep2', 0, 1);
	ok(defined $e && $e == 0 && $epoch == 1 && $end == 4, 'an epoch older than the history: itself, up to where the first epoch starts (Kafka)',
		'got ' . join(', ', map { $_ // 'undef' } $e, $epoch, $end));
	($e) = epoch_end('ep', 0, 0, 4);
	ok(defined $e && $e == 74, 'a current leader epoch older than the partition\'s: FENCED_LEADER_EPOCH (74)', 'got ' . ($e // 'closed'));
	($e) = epoch_end('ep', 0, 0, 6);
	ok(defined $e && $e == 75, 'a newer one: UNKNOWN_LEADER_EPOCH (75)', 'got ' . ($e // 'closed'));
	($e, $epoch, $end) = epoch_end('ep', 0, 2, 5);
	ok(defined $e && $e == 0 && $end == 5, 'the partition\'s own: answered', 'got ' . ($e // 'closed'));
	($e) = epoch_end('ep', 9, 0);
	ok(defined $e && $e == 3, 'an unknown partition: UNKNOWN_TOPIC_OR_PARTITION (3)', 'got ' . ($e // 'closed'));
	($e, $epoch, $end) = epoch_end('ep', 0, 2, undef, 0);
	ok(defined $e && $e == 0 && $end == 5, 'v0 (no epoch in the answer): the end offset', 'got ' . ($e // 'closed'));
}
{
	# v4, flexible: compact forms and tagged fields
	my $body = pack('l>', -1) . chr(2) . chr(3) . 'ep' . chr(2) . pack('l> l> l>', 0, -1, 1) . "\0\0\0";
	my $r = call(23, 4, $body, 1);
	my ($e, $epoch, $end) = defined $r ? unpack('x4 x1 x1 x2 x1 s> x4 l> q>', $r) : ();
	ok(defined $e && $e == 0 && $epoch == 0 && $end == 3, 'v4 (flexible): epoch 1 ends at 3 under epoch 0',
		'got ' . join(', ', map { $_ // 'undef' } $e, $epoch, $end));
}

# ---- Fetch v11 of ep from offset 0 with a current leader epoch:
# (error, [[base offset, partition leader epoch]...])
sub fetch_batches {
	my ($current) = @_;
	my $body = pack('l> l> l> l> c l> l>', -1, 0, 1, 1 << 20, 0, 0, -1) . pack('l>', 1) . str('ep')
	  . pack('l> l> l> q> q> l>', 1, 0, $current, 0, -1, 1 << 20) . pack('l>', 0) . str('');
	my $r = call(1, 11, $body);
	return () unless defined $r;
	my $tlen = unpack('x10 x4 n', $r);
	my $pos = 14 + 2 + $tlen + 4;
	my ($err, $naborted) = unpack("x$pos x4 s> x8 x8 x8 l>", $r);
	$pos += 4 + 2 + 24 + 4 + ($naborted > 0 ? 16 * $naborted : 0) + 4;
	my $rlen = unpack("x$pos l>", $r);
	my $recs = $rlen > 0 ? substr($r, $pos + 4, $rlen) : '';
	my @b;
	while (length $recs >= 12) {
		my ($base, $blen, $epoch) = unpack('q> l> l>', $recs);
		push @b, [$base, $epoch];
		substr($recs, 0, 12 + $blen, '');
	}
	return ($err, \@b);
}
{
	my ($e, $b) = fetch_batches(5);
	my $got = join(' ', map { "$_->[0]\@$_->[1]" } @{ $b // [] });
	ok(defined $e && $e == 0 && $got eq '0@0 3@2 5@5',
		'Fetch: each batch carries the epoch its records were written under, a new batch at each epoch', "got error " . ($e // 'closed') . ", batches $got");
	($e, $b) = fetch_batches(4);
	ok(defined $e && $e == 74 && !@$b, 'Fetch with an older current leader epoch: FENCED_LEADER_EPOCH, no records', 'got ' . ($e // 'closed'));
	($e, $b) = fetch_batches(6);
	ok(defined $e && $e == 75 && !@$b, 'with a newer one: UNKNOWN_LEADER_EPOCH', 'got ' . ($e // 'closed'));
	($e, $b) = fetch_batches(-1);
	ok(defined $e && $e == 0 && @$b == 3, 'with none (-1): not checked', 'got ' . ($e // 'closed'));
}

# ---- ListOffsets v4: the epoch of the record answered (earliest), the current one (latest);
# the request's current leader epoch checked as Fetch checks it (KIP-320)
for my $c ([-2, -1, 0, 0, 0, 'earliest: offset 0, written under epoch 0'],
	[-1, -1, 0, 7, 5, 'latest: the high watermark, the current epoch 5'],
	[-1, 5, 0, 7, 5, 'latest with the current epoch 5: answered'],
	[-1, 2, 74, -1, -1, 'with an older current epoch (2): FENCED_LEADER_EPOCH'],
	[-1, 6, 75, -1, -1, 'with a newer current epoch (6): UNKNOWN_LEADER_EPOCH'],
	[4102444800000, -1, 0, -1, -1, 'by a time after every record: offset -1 and epoch -1, as Kafka leaves them']) {
	my ($ts, $current, $want_e, $want_off, $want_epoch, $what) = @$c;
	my $r = call(2, 4, pack('l> c l>', -1, 0, 1) . str('ep') . pack('l> l> l> q>', 1, 0, $current, $ts));
	my ($e, $off, $epoch) = defined $r ? unpack('x4 x4 x2 x2 x4 x4 s> x8 q> l>', $r) : ();
	ok(defined $e && $e == $want_e && $off == $want_off && $epoch == $want_epoch, "ListOffsets v4 $what",
		'got ' . join(', ', map { $_ // 'undef' } $e, $off, $epoch));
}

# ---- ListOffsets of a partition this node follows: NOT_LEADER_OR_FOLLOWER, as a Kafka follower answers
for my $ver (1, 4) {
	my $r = call(2, $ver, pack('l>', -1) . ($ver >= 2 ? "\0" : '') . pack('l>', 1) . str('fol')
		. pack('l> l>', 1, 0) . ($ver >= 4 ? pack('l>', -1) : '') . pack('q>', -1));
	my $e = defined $r ? unpack('x' . ($ver >= 2 ? 4 : 0) . ' x4 x2 x3 x4 x4 s>', $r) : undef;
	ok(defined $e && $e == 6, "ListOffsets v$ver of a partition this node follows: NOT_LEADER_OR_FOLLOWER",
		'got ' . ($e // 'closed'));
}

# ---- OffsetFetch v5: the committed leader epoch is the epoch of the record before the offset
{
	my $r = call(9, 5, str('eg') . pack('l>', 1) . str('ep') . pack('l> l>', 1, 0));
	my ($off, $epoch) = defined $r ? unpack('x4 x4 x2 x2 x4 x4 q> l>', $r) : ();
	ok(defined $off && $off == 4 && $epoch == 2, 'OffsetFetch v5: offset 4, committed leader epoch 2 (record 3\'s)',
		'got ' . join(', ', map { $_ // 'undef' } $off, $epoch));
}

tap_done();
