# The Kafka wire encodings the raw-protocol tests build requests with
# (protocol.pl, produce_acks.pl): CRC-32C as batch.c computes it, zigzag
# varints, and nullable strings and bytes; and, on request, one round trip
# (kafka_connect, kafka_request) and TAP output (ok, tap_done).
package KafkaWire;
use strict;
use warnings;
use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
our @EXPORT = qw(crc32c varint str vbytes);
our @EXPORT_OK = qw(kafka_connect kafka_request ok tap_done);

# CRC-32C (Castagnoli)
my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c;
} 0 .. 255;
sub crc32c {
	my $c = 0xFFFFFFFF;
	$c = $crc_table[($c ^ $_) & 0xff] ^ ($c >> 8) for unpack('C*', $_[0]);
	return $c ^ 0xFFFFFFFF;
}

sub varint {
	my $v = shift;
	my $u = $v >= 0 ? 2 * $v : -2 * $v - 1;
	my $out = '';
	while ($u >= 0x80) { $out .= chr(($u & 0x7f) | 0x80); $u >>= 7; }
	return $out . chr($u);
}
sub str { defined $_[0] ? pack('n', length $_[0]) . $_[0] : pack('s>', -1) }
sub vbytes { defined $_[0] ? varint(length $_[0]) . $_[0] : varint(-1) }

# A connection to 127.0.0.1:PORT (dies when refused).
sub kafka_connect {
	my ($port) = @_;
	return IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
	  || die "connect $port: $!\n";
}

# One request on SOCK with header v1 (v2, with its empty tagged fields,
# when FLEX): the response frame after its size, or undef when the
# connection closes or nothing comes within TIMEOUT seconds (10).
sub kafka_request {
	my ($sock, $client, $api, $ver, $body, $flex, $timeout) = @_;
	my $frame = pack('s> s> l>', $api, $ver, 7) . str($client) . ($flex ? "\0" : '') . $body;
	$sock->syswrite(pack('l>', length $frame) . $frame);
	my $sel = IO::Select->new($sock);
	my $buf = '';
	while (1) {
		return undef unless $sel->can_read($timeout // 10);
		my $got = $sock->sysread($buf, 1 << 20, length $buf);
		return undef unless $got;
		if (length $buf >= 4) {
			my $size = unpack('l>', $buf);
			return substr($buf, 4, $size) if length $buf >= 4 + $size;
		}
	}
}

# TAP: one numbered check, with DETAIL printed when it fails; tap_done
# prints the plan and exits 1 if any failed.
my ($checks, $failed) = (0, 0);

sub ok {
	my ($cond, $what, $detail) = @_;
	$checks++;
	print(($cond ? "ok" : "not ok") . " $checks - $what\n");
	print "#   $detail\n" if !$cond && defined $detail;
	$failed++ unless $cond;
	return $cond;
}

sub tap_done {
	my ($plan) = @_;
	print "1..$checks\n" if $plan // 1;
	exit($failed ? 1 : 0);
}

1;
