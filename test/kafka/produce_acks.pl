# One Produce v3 request to mq-kafka (run by produce_acks.sh): a record
# batch of one record with value VALUE to partition 0 of TOPIC with acks
# ACKS.  Prints "error_code base_offset" of the partition's response, or
# "none" when no response is due (acks=0; then it waits until mq-kafka
# has read the request: a second request on the same connection, an
# ApiVersions, is answered after it), or "closed" when mq-kafka closed the
# connection instead (acks=0 that failed, as Kafka's broker does).
#   produce_acks.pl PORT TOPIC ACKS VALUE
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire;

my ($port, $topic, $acks, $value) = @ARGV;
die "usage: produce_acks.pl PORT TOPIC ACKS VALUE\n" unless defined $value;

my $body = "\0" . varint(0) . varint(0) . varint(-1) . varint(length $value) . $value . varint(0);
my $recs = varint(length $body) . $body;
my $rest = pack('s> l> q> q> q> s> l> l>', 0, 0, 0, 0, -1, -1, -1, 1) . $recs;
my $batch = pack('q> l> l> C N', 0, 9 + length $rest, 0, 2, crc32c($rest)) . $rest;
my $produce = str(undef) . pack('s> l> l>', $acks, 30000, 1) . str($topic)
  . pack('l> l> l>', 1, 0, length $batch) . $batch;

my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
  or die "connect: $!\n";
sub request {
	my ($api, $ver, $corr, $b) = @_;
	my $frame = pack('s> s> l>', $api, $ver, $corr) . str('produce_acks.pl') . $b;
	$sock->syswrite(pack('l>', length $frame) . $frame);
}
# the next response: (correlation id, body)
sub response {
	my $sel = IO::Select->new($sock);
	my $buf = '';
	while (1) {
		die "no response within 60 s\n" unless $sel->can_read(60);
		my $got = $sock->sysread($buf, 65536, length $buf);
		die "connection closed\n" unless $got;
		if (length $buf >= 4) {
			my $size = unpack('l>', $buf);
			return (unpack('x4 l>', $buf), substr($buf, 8, $size - 4)) if length $buf >= 4 + $size;
		}
	}
}

request(0, 3, 1, $produce);
if ($acks == 0) {
	request(18, 0, 2, '');
	my ($corr) = eval { response() };
	if (!defined $corr) {
		die $@ unless $@ eq "connection closed\n";
		print "closed\n";
		exit 0;
	}
	die "unexpected response $corr\n" unless $corr == 2;
	print "none\n";
	exit 0;
}
my ($corr, $r) = response();
my $tlen = unpack('x4 n', $r);
my ($err, $base) = unpack("x4 x2 x$tlen x4 x4 s> q>", $r);
print "$err $base\n";
