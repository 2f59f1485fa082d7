# Fetch v4+ from two mq-kafka daemons over the same database, one copying
# the record batches mq.kafka_fetch encodes (the default), one encoding
# rows itself (--fetch-encoder=daemon): every response of a matrix of
# requests must be the same bytes.  Also checks each batch's CRC-32C and
# counts the records, so that the matrix is seen to return records.
# Run by fetch_batch.sh:
#   fetch_batch.pl PORT_DATABASE PORT_DAEMON SPEC...
# where each SPEC is topic:partition:offset,... (the partitions of one
# request, several topics allowed).  Prints TAP; the last line is
# "records N batches M".
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(:DEFAULT kafka_connect kafka_request ok tap_done);

my ($port_db, $port_daemon, @specs) = @ARGV;
die "usage: fetch_batch.pl PORT PORT SPEC...\n" unless $port_daemon && @specs;
$| = 1;
my ($records, $batches) = (0, 0);

my %sock = map { $_ => kafka_connect($_) } ($port_db, $port_daemon);

# one request, the whole response frame after the size
sub call {
	my ($port, $ver, $body) = @_;
	return kafka_request($sock{$port}, 'fetch_batch.pl', 1, $ver, $body, $ver >= 12, 30) // 'closed';
}

# a Fetch request body: parts are [topic, partition, offset], grouped by topic in order
sub fetch_body {
	my ($ver, $max_bytes, $part_max, @parts) = @_;
	my @topics;
	for my $p (@parts) {
		push @topics, [$p->[0], []] if !@topics || $topics[-1][0] ne $p->[0];
		push @{ $topics[-1][1] }, $p;
	}
	my $b = pack('l> l> l> l> c', -1, 0, 0, $max_bytes, 1);
	$b .= pack('l> l>', 0, -1) if $ver >= 7;
	$b .= pack('l>', scalar @topics);
	for my $t (@topics) {
		$b .= str($t->[0]) . pack('l>', scalar @{ $t->[1] });
		for my $p (@{ $t->[1] }) {
			$b .= pack('l>', $p->[1]);
			$b .= pack('l>', -1) if $ver >= 9;
			$b .= pack('q>', $p->[2]);
			$b .= pack('q>', -1) if $ver >= 5;
			$b .= pack('l>', $part_max);
		}
	}
	$b .= pack('l>', 0) if $ver >= 7;	# forgotten topics
	$b .= str('') if $ver >= 11;		# rack
	return $b;
}

# the record sets of a v4..v11 response: check every batch's CRC; returns
# (records, batches, errors) or undef when it does not parse
sub walk {
	my ($ver, $resp) = @_;
	my $pos = 4 + 4 + ($ver >= 7 ? 6 : 0);
	my ($recs, $nb, @bad) = (0, 0);
	my $get = sub { my ($f, $len) = @_; my $v = unpack($f, substr($resp, $pos, $len)); $pos += $len; $v };
	my $nt = $get->('l>', 4);
	for (1 .. $nt) {
		my $tl = $get->('s>', 2);
		$pos += $tl;
		my $np = $get->('l>', 4);
		for (1 .. $np) {
			$pos += 4 + 2 + 8 + 8 + ($ver >= 5 ? 8 : 0);
			my $na = $get->('l>', 4);
			$pos += 16 * $na if $na > 0;
			$pos += 4 if $ver >= 11;
			my $len = $get->('l>', 4);
			my $set = $len > 0 ? substr($resp, $pos, $len) : '';
			$pos += $len if $len > 0;
			my $q = 0;
			while ($q + 12 <= length $set) {
				my ($blen) = unpack('l>', substr($set, $q + 8, 4));
				my $b = substr($set, $q, 12 + $blen);
				my $crc = unpack('N', substr($b, 17, 4));
				push @bad, 'crc' if crc32c(substr($b, 21)) != $crc;
				push @bad, 'magic' if unpack('c', substr($b, 16, 1)) != 2;
				$recs += unpack('l>', substr($b, 57, 4));
				$nb++;
				$q += 12 + $blen;
			}
			push @bad, 'trailing bytes' if $q != length $set;
		}
	}
	return undef if $pos != length $resp;
	return ($recs, $nb, @bad);
}

for my $spec (@specs) {
	my @parts = map { [split /:/] } split /,/, $spec;
	for my $ver (4, 7, 11) {
		for my $max_bytes (1, 700, 9000, 52428800) {
			for my $part_max (1, 300, 5000, 1048576) {
				my $body = fetch_body($ver, $max_bytes, $part_max, @parts);
				my $a = call($port_db, $ver, $body);
				my $b = call($port_daemon, $ver, $body);
				my $what = "v$ver $spec max_bytes $max_bytes partition $part_max";
				my ($r, $nb, @bad) = walk($ver, $a);
				if (!defined $r) {
					ok(0, "$what: the response parses");
					next;
				}
				$records += $r;
				$batches += $nb;
				ok($a eq $b, "$what: the same bytes ($r records in $nb batches)",
				   sprintf('lengths %d and %d, first difference at byte %d', length $a, length $b,
					   (($a ^ $b) =~ /^(\0*)/ ? length $1 : -1)));
				ok(!@bad, "$what: batches check", join(', ', @bad)) if @bad;
			}
		}
	}
}
print "records $records batches $batches\n";
tap_done(0);
