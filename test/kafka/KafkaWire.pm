# The Kafka wire encodings the raw-protocol tests build requests with
# (protocol.pl, produce_acks.pl): CRC-32C as batch.c computes it, zigzag
# varints, and nullable strings and bytes.
package KafkaWire;
use strict;
use warnings;
use Exporter 'import';
our @EXPORT = qw(crc32c varint str vbytes);

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

1;
