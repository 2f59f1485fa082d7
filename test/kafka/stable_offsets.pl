# OffsetFetch's require_stable (KIP-447) on the wire, for protocol.sh:
# prints one line "VERSION REQUIRE_STABLE OFFSET ERROR" for group GROUP's
# offset of TOPIC partition PARTITION, asked with OffsetFetch v6 (which
# cannot require stable offsets), v7 and v8, each without and with
# require_stable.
#   stable_offsets.pl PORT GROUP TOPIC PARTITION
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(kafka_connect kafka_request uvarint cstr read_varint);

my ($port, $group, $topic, $partition) = @ARGV;
die "usage: stable_offsets.pl PORT GROUP TOPIC PARTITION\n" unless defined $partition;
my $sock = kafka_connect($port);


# (offset, error) of the one partition in a v6-v8 response
sub one_partition {
	my ($r, $ver) = @_;
	my $pos = 4 + 1 + 4;    # correlation id, header tags, throttle time
	if ($ver >= 8) {
		read_varint(\$r, \$pos);    # groups: 1
		$pos += read_varint(\$r, \$pos) - 1;    # group id
	}
	read_varint(\$r, \$pos);    # topics: 1
	$pos += read_varint(\$r, \$pos) - 1;    # topic name
	read_varint(\$r, \$pos);    # partitions: 1
	my ($p, $off) = unpack("x$pos l> q>", $r);
	$pos += 4 + 8 + 4;
	my $mlen = read_varint(\$r, \$pos);
	$pos += $mlen - 1 if $mlen > 0;
	return ($off, unpack("x$pos s>", $r));
}

for my $ver (6, 7, 8) {
	for my $stable ($ver >= 7 ? (0, 1) : (0)) {
		my $topics = uvarint(2) . cstr($topic) . uvarint(2) . pack('l>', $partition) . "\0";
		my $body = $ver >= 8
		  ? uvarint(2) . cstr($group) . $topics . "\0" . pack('c', $stable) . "\0"
		  : cstr($group) . $topics . ($ver >= 7 ? pack('c', $stable) : '') . "\0";
		my $r = kafka_request($sock, 'stable_offsets.pl', 9, $ver, $body, 1);
		die "OffsetFetch v$ver: no answer\n" unless defined $r;
		print join(' ', $ver, $stable, one_partition($r, $ver)), "\n";
	}
}
