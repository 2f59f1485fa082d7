# One leader-epoch request to mq-kafka through raw frames, for the
# cluster test (test/t/139_kafka_epochs.pl):
#   epoch_probe.pl PORT end TOPIC PARTITION EPOCH CURRENT
#       OffsetForLeaderEpoch v3: prints "error_code leader_epoch end_offset"
#   epoch_probe.pl PORT fetch TOPIC PARTITION CURRENT
#       Fetch v11 from offset 0 (current leader epoch CURRENT): prints
#       "error_code" and each record batch as base_offset@leader_epoch
#   epoch_probe.pl PORT diverge TOPIC PARTITION OFFSET LAST_FETCHED_EPOCH
#       Fetch v12 from OFFSET: prints "error_code", the offsets of the
#       records answered (or -) and the diverging epoch as epoch@end_offset
#       (or none)
# "closed" when the daemon closed the connection.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(:DEFAULT kafka_connect kafka_request kafka_fetch_flex batch_values);

my ($port, $what, $topic, $partition, @args) = @ARGV;
die "usage: epoch_probe.pl PORT end|fetch TOPIC PARTITION ...\n" unless defined $partition;
my $sock = kafka_connect($port);

sub call {
	my ($api, $ver, $body) = @_;
	my $r = kafka_request($sock, 'epoch_probe.pl', $api, $ver, $body, 0, 30);
	return defined $r ? substr($r, 4) : undef;
}

my $tlen = length $topic;
if ($what eq 'end') {
	my ($epoch, $current) = @args;
	my $r = call(23, 3, pack('l> l>', -1, 1) . str($topic) . pack('l> l> l> l>', 1, $partition, $current, $epoch));
	print defined $r ? join(' ', unpack("x4 x4 x2 x$tlen x4 s> x4 l> q>", $r)) . "\n" : "closed\n";
	exit 0;
}
if ($what eq 'diverge') {
	my ($offset, $lfe) = @args;
	my $h = kafka_fetch_flex($sock, 12, [[$topic, [[$partition, $offset, $lfe]]]], timeout => 30);
	my $p = $h && @{ $h->{topics} } == 1 ? $h->{topics}[0][1][0] : undef;
	print $p ? join(' ', $p->{error}, join(',', map { $_->[0] } @{ batch_values($p->{records}) }) || '-',
			$p->{diverging} ? join('@', @{ $p->{diverging} }) : 'none') . "\n" : "closed\n";
	exit 0;
}
my ($current) = @args;
my $body = pack('l> l> l> l> c l> l>', -1, 0, 1, 1 << 20, 0, 0, -1) . pack('l>', 1) . str($topic)
  . pack('l> l> l> q> q> l>', 1, $partition, $current, 0, -1, 1 << 20) . pack('l>', 0) . str('');
my $r = call(1, 11, $body);
if (!defined $r) { print "closed\n"; exit 0; }
my $pos = 14 + 2 + $tlen + 4;
my ($err, $naborted) = unpack("x$pos x4 s> x8 x8 x8 l>", $r);
$pos += 4 + 2 + 24 + 4 + ($naborted > 0 ? 16 * $naborted : 0) + 4;
my $rlen = unpack("x$pos l>", $r);
my $recs = $rlen > 0 ? substr($r, $pos + 4, $rlen) : '';
my @b;
while (length $recs >= 12) {
	my ($base, $blen, $epoch) = unpack('q> l> l>', $recs);
	push @b, "$base\@$epoch";
	substr($recs, 0, 12 + $blen, '');
}
print join(' ', $err, @b) . "\n";
