# Fetch v13+ of several topics by id through raw frames (run by
# fetch_topic_ids.sh with the broker's port; topics ta, tb, tc hold the
# records "ta-0".."ta-7" and so on): each Fetch asks one record of each
# topic (a partition byte limit of 100: a batch of one counts 89, of two 117), so each
# response leaves records behind and mq-kafka reads the next Fetch ahead
# in this Fetch's order of topics; the next Fetch names the topics in
# another order, takes that read-ahead, and must still answer each topic
# with its own id.  Prints TAP.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use Digest::MD5 qw(md5 md5_hex);
use KafkaWire qw(:DEFAULT kafka_connect kafka_fetch_flex batch_values ok tap_done);

my $port = shift or die "usage: fetch_topic_ids.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';

my $sock = kafka_connect($port);
my @names = qw(ta tb tc);
my %by_id = map { md5($_) => $_ } @names;

# each round's orders of topics: turned, then reversed, as clients rotate them
my @orders = ([0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0], [0, 2, 1], [1, 0, 2], [0, 1, 2], [2, 1, 0]);
for my $ver (13, 17) {
	my ($bad, $seen, $read) = (0, 0, 0);
	my %next = map { $_ => 0 } @names;
	my @detail;
	for my $round (0 .. $#orders) {
		# from where the last response stopped: what the read-ahead read
		my @topics = map { [md5($names[$_]), [[0, $next{ $names[$_] }, -1, 100]]] } @{ $orders[$round] };
		my $h = kafka_fetch_flex($sock, $ver, \@topics);
		unless ($h && @{ $h->{topics} } == 3) {
			$bad++;
			push @detail, "round $round: " . ($h ? scalar(@{ $h->{topics} }) . ' topics' : 'no answer');
			next;
		}
		for my $t (@{ $h->{topics} }) {
			my ($id, $parts) = @$t;
			my $vals = batch_values($parts->[0]{records});
			my $want = $by_id{$id} // '?';
			my $from = $next{$want} // -1;
			$seen++;
			$read += @$vals;
			if ($from >= 8 ? !@$vals : (@$vals && $vals->[0][0] == $from && $vals->[0][1] eq "$want-$from")) {
				$next{$want} = $vals->[-1][0] + 1 if @$vals;
				next;
			}
			$bad++;
			push @detail, "round $round: id of $want (" . md5_hex($want) . ") from $from with "
			  . (@$vals ? "offset $vals->[0][0] value $vals->[0][1]" : 'no records');
		}
	}
	ok($bad == 0 && $seen == 3 * @orders && $read == 24,
		"Fetch v$ver of three topics by id, their order turned at each Fetch: each topic answered with its own id and records",
		join('; ', @detail) . " ($read records read)");
}

tap_done();
