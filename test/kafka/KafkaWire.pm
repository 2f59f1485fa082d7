# The Kafka wire encodings the raw-protocol tests build requests with
# (protocol.pl, produce_acks.pl): CRC-32C as batch.c computes it, zigzag
# varints, and nullable strings and bytes; and, on request, one round trip
# (kafka_connect, kafka_request), a flexible Fetch (v12+) and the records
# of its record batches (kafka_fetch_flex, batch_values: diverging.pl,
# fetch_topic_ids.pl), and TAP output (ok, tap_done).
package KafkaWire;
use strict;
use warnings;
use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
our @EXPORT = qw(crc32c varint str vbytes);
our @EXPORT_OK = qw(kafka_connect kafka_request kafka_call kafka_fetch_flex batch_values uvarint cstr read_varint read_cstr ok tap_done);

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

# kafka_request that dies when no answer comes within 30 seconds.
sub kafka_call {
	my ($sock, $client, $api, $ver, $body, $flex) = @_;
	my $r = kafka_request($sock, $client, $api, $ver, $body, $flex, 30);
	die "api $api v$ver: no answer\n" unless defined $r;
	return $r;
}

# KIP-482: an unsigned varint; a compact string (length + 1, 0 for null)
sub uvarint {
	my $u = shift;
	my $out = '';
	while ($u >= 0x80) { $out .= chr(($u & 0x7f) | 0x80); $u >>= 7; }
	return $out . chr($u);
}
sub cstr { defined $_[0] ? uvarint(length($_[0]) + 1) . $_[0] : "\0" }

# the unsigned (zigzag when ZIGZAG) varint of $$buf at offset $$pos, which moves past it
sub read_varint {
	my ($buf, $pos, $zigzag) = @_;
	my ($v, $shift) = (0, 0);
	while ($$pos < length $$buf) {
		my $b = ord substr($$buf, $$pos++, 1);
		$v |= ($b & 0x7f) << $shift;
		last unless $b & 0x80;
		$shift += 7;
	}
	return !$zigzag ? $v : ($v & 1) ? -(($v >> 1) + 1) : $v >> 1;
}

# the compact string of $$buf at offset $$pos (undef for null), which moves past it
sub read_cstr {
	my ($buf, $pos) = @_;
	my $n = read_varint($buf, $pos) - 1;
	return undef if $n < 0;
	my $s = substr($$buf, $$pos, $n);
	$$pos += $n;
	return $s;
}

# Fetch v12+ (flexible) on SOCK.  TOPICS: [[name, or 16-byte id from
# v13, [[partition, fetch offset, last fetched epoch, max bytes,
# current leader epoch]...]]...] (max bytes 1 MiB and current leader
# epoch -1 when left out); OPTS: max_wait (ms), min_bytes, timeout (s),
# session_id and session_epoch (KIP-227; 0 and -1: none).
# Returns { error, session, topics => [[name or id, [{ partition, error, hw,
# log_start, records, diverging => [epoch, end offset] or undef }...]]...] }
# in the response's order, or undef when the connection closes or the
# answer does not come within the timeout.
sub kafka_fetch_flex {
	my ($sock, $ver, $topics, %o) = @_;
	my $body = ($ver <= 14 ? pack('l>', -1) : '')
	  . pack('l> l> l> c l> l>', $o{max_wait} // 0, $o{min_bytes} // 0, 1 << 20, 0, $o{session_id} // 0,
		$o{session_epoch} // -1) . uvarint(@$topics + 1);
	for my $t (@$topics) {
		$body .= ($ver >= 13 ? $t->[0] : cstr($t->[0])) . uvarint(@{ $t->[1] } + 1);
		$body .= pack('l> l> q> l> q> l>', $_->[0], $_->[4] // -1, $_->[1], $_->[2], -1, $_->[3] // 1 << 20) . "\0"
		  for @{ $t->[1] };
		$body .= "\0";
	}
	$body .= uvarint(1) . cstr('') . "\0";	# no forgotten topics, rack id '', no tags
	my $r = kafka_request($sock, 'KafkaWire', 1, $ver, $body, 1, $o{timeout});
	return undef unless defined $r;
	my $pos = 5 + 4;	# correlation id, header tags, throttle time
	my %h = (error => unpack("x$pos s>", $r), topics => []);
	$h{session} = unpack("x$pos x2 l>", $r);
	$pos += 2 + 4;
	my $nt = read_varint(\$r, \$pos) - 1;
	for (1 .. $nt) {
		my $key;
		if ($ver >= 13) { $key = substr($r, $pos, 16); $pos += 16; }
		else { my $len = read_varint(\$r, \$pos) - 1; $key = substr($r, $pos, $len); $pos += $len; }
		my @parts;
		my $np = read_varint(\$r, \$pos) - 1;
		for (1 .. $np) {
			my %p;
			@p{qw(partition error hw)} = unpack("x$pos l> s> q>", $r);
			$p{log_start} = unpack("x$pos x22 q>", $r);
			$pos += 4 + 2 + 8 + 8 + 8;
			my $na = read_varint(\$r, \$pos) - 1;
			for (1 .. $na) { $pos += 16; read_varint(\$r, \$pos); }
			$pos += 4;	# preferred read replica
			my $rlen = read_varint(\$r, \$pos) - 1;
			$p{records} = $rlen > 0 ? substr($r, $pos, $rlen) : '';
			$pos += $rlen > 0 ? $rlen : 0;
			my $ntags = read_varint(\$r, \$pos);
			for (1 .. $ntags) {
				my $tag = read_varint(\$r, \$pos);
				my $size = read_varint(\$r, \$pos);
				$p{diverging} = [unpack("x$pos l> q>", $r)] if $tag == 0;
				$pos += $size;
			}
			push @parts, \%p;
		}
		read_varint(\$r, \$pos);	# topic tags (none)
		push @{ $h{topics} }, [$key, \@parts];
	}
	return \%h;
}

# the records of uncompressed record batches (magic 2): [[offset, value]...]
sub batch_values {
	my ($set) = @_;
	my @out;
	while (length $set >= 61) {
		my ($base, $blen) = unpack('q> l>', $set);
		my $count = unpack('x57 l>', $set);
		my $recs = substr($set, 61, $blen - 49);
		my $pos = 0;
		for (1 .. $count) {
			my $len = read_varint(\$recs, \$pos, 1);
			my $end = $pos + $len;
			$pos++;	# attributes
			read_varint(\$recs, \$pos, 1);	# timestamp delta
			my $delta = read_varint(\$recs, \$pos, 1);
			my $klen = read_varint(\$recs, \$pos, 1);
			$pos += $klen if $klen > 0;
			my $vlen = read_varint(\$recs, \$pos, 1);
			push @out, [$base + $delta, $vlen >= 0 ? substr($recs, $pos, $vlen) : undef];
			$pos = $end;
		}
		substr($set, 0, 12 + $blen, '');
	}
	return \@out;
}

# TAP: one numbered check, with DETAIL printed when it fails; tap_done
# prints the plan and exits 1 if any failed.  The prototype evaluates the
# condition in scalar context: a failed match (`$x =~ /re/`) in a list
# would vanish and shift the name into its place, passing the check.
my ($checks, $failed) = (0, 0);

sub ok ($$;$) {
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
