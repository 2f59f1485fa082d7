# Fetch v12+'s diverging epoch through raw frames (run by epochs.sh with
# the broker's port, after it gave topic ep the epochs 0 from offset 0,
# 2 from 3 and 5 from 5 and seven records; ep2 an epoch history that
# starts at epoch 3 from offset 4 (4 from 6, six records); ep3 epochs 0
# and 2 from 3, five records, those before offset 1 deleted): a fetcher's
# last fetched epoch and fetch offset checked as Kafka's leader checks
# them, with the end of that epoch as OffsetForLeaderEpoch answers it,
# alone, beside other partitions, by topic id, in a long poll and in a
# fetch session.
# Prints TAP.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use Digest::MD5 qw(md5);
use KafkaWire qw(:DEFAULT kafka_connect kafka_fetch_flex batch_values ok tap_done);

my $port = shift or die "usage: diverging.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';

my $sock = kafka_connect($port);

# the partition 0 answer of one Fetch v12 of TOPIC from OFFSET with last fetched epoch LFE
sub fetch1 {
	my ($topic, $offset, $lfe, %o) = @_;
	my $h = kafka_fetch_flex($sock, $o{ver} // 12, [[$o{ver} && $o{ver} >= 13 ? md5($topic) : $topic,
				[[0, $offset, $lfe, undef, $o{current}]]]], %o);
	return $h && @{ $h->{topics} } == 1 ? $h->{topics}[0][1][0] : undef;
}

sub shown {
	my $p = shift;
	return 'closed or timed out' unless $p;
	return "error $p->{error}, records "
	  . join(',', map { $_->[0] } @{ batch_values($p->{records}) })
	  . ', diverging ' . ($p->{diverging} ? join('@', @{ $p->{diverging} }) : 'none');
}

# the offsets of the records answered
sub offsets { my $p = shift; return join(',', map { $_->[0] } @{ batch_values($p->{records}) }) }

# [topic, offset, last fetched epoch, expected records or diverging epoch@end or error, what]
for my $c (
	['ep', 0, -1, '0,1,2,3,4,5,6', 'no last fetched epoch (-1): not checked'],
	['ep', 7, 5, '', 'the latest epoch, at the log end: nothing new, no divergence'],
	['ep', 6, 5, '6', 'the latest epoch, inside it: the records'],
	['ep', 5, 2, '5,6', 'epoch 2, at its end (5): the records after it'],
	['ep', 2, 0, '2,3,4,5,6', 'epoch 0, inside it: the records'],
	['ep', 6, 2, 'diverging 2@5', 'epoch 2 past its end (5): diverging at epoch 2, end 5'],
	['ep', 5, 3, 'diverging 2@5', 'epoch 3, which this log never had: diverging at epoch 2 (the largest below), end 5'],
	['ep', 3, 1, 'diverging 0@3', 'epoch 1: diverging at epoch 0, end 3, even at that offset'],
	['ep', 7, 6, 'error 1', 'an epoch newer than the latest: OFFSET_OUT_OF_RANGE (its end is undefined)'],
	['ep2', 4, 1, '4,5', 'an epoch older than the history, at the history\'s start: the records'],
	['ep2', 5, 1, 'diverging 1@4', 'past the history\'s start: diverging at the epoch asked, end 4'],
	['ep3', 0, 1, 'error 1', 'an offset before the log start: OFFSET_OUT_OF_RANGE, before the divergence check (Kafka)'],
	['ep3', 2, 1, 'diverging 0@3', 'the same epoch from inside the log: diverging at epoch 0, end 3'],
  ) {
	my ($topic, $offset, $lfe, $want, $what) = @$c;
	my $p = fetch1($topic, $offset, $lfe);
	my $good;
	if ($want =~ /^diverging (\d+)@(\d+)$/) {
		$good = $p && $p->{error} == 0 && $p->{diverging} && $p->{diverging}[0] == $1 && $p->{diverging}[1] == $2
		  && $p->{records} eq '';
	}
	elsif ($want =~ /^error (\d+)$/) {
		$good = $p && $p->{error} == $1 && !$p->{diverging} && $p->{records} eq '';
	}
	else {
		$good = $p && $p->{error} == 0 && !$p->{diverging} && offsets($p) eq $want;
	}
	ok($good, "Fetch v12 of $topic from $offset, last fetched epoch $lfe: $what", 'got ' . shown($p));
}

# ---- with other partitions, by topic id, with the current leader epoch, long polling
{
	my $h = kafka_fetch_flex($sock, 12, [['ep', [[0, 6, 2]]], ['ep2', [[0, 0, -1]]]]);
	my ($a, $b) = $h ? map { $_->[1][0] } @{ $h->{topics} } : ();
	ok($a && $b && $a->{diverging} && $a->{diverging}[0] == 2 && !$b->{diverging} && offsets($b) eq '0,1,2,3,4,5',
		'one partition diverging, another read in the same Fetch: each answered as alone', 'got ' . shown($a) . '; ' . shown($b));
	my $p = fetch1('ep', 6, 2, ver => 13);
	ok($p && $p->{diverging} && $p->{diverging}[0] == 2 && $p->{diverging}[1] == 5,
		'Fetch v13 (topic ids): the same diverging epoch', 'got ' . shown($p));
	$p = fetch1('ep', 6, 2, ver => 17);
	ok($p && $p->{diverging} && $p->{diverging}[0] == 2 && $p->{diverging}[1] == 5,
		'Fetch v17: the same', 'got ' . shown($p));
	$p = fetch1('ep', 6, 2, current => 4);
	ok($p && $p->{error} == 74 && !$p->{diverging}, 'an older current leader epoch is checked first: FENCED_LEADER_EPOCH, no diverging epoch',
		'got ' . shown($p));
	$p = fetch1('ep', 6, 2, current => 5);
	ok($p && $p->{error} == 0 && $p->{diverging}, 'the partition\'s own current leader epoch: the diverging epoch', 'got ' . shown($p));
	# a long poll (20 s, more bytes than there are) answers a diverging partition at once
	$p = fetch1('ep', 6, 2, max_wait => 20000, min_bytes => 1 << 20, timeout => 8);
	ok($p && $p->{diverging}, 'a long poll with a diverging partition is answered at once (Kafka), not at its 20 s deadline',
		'got ' . shown($p));
}

# ---- in a fetch session (KIP-227): the session keeps the last fetched
# epoch, and an incremental fetch answers a diverging partition although
# nothing else changed
{
	my $h = kafka_fetch_flex($sock, 12, [['ep', [[0, 6, 2]]]], session_epoch => 0);
	my $p = $h && @{ $h->{topics} } ? $h->{topics}[0][1][0] : undef;
	my $id = $h ? $h->{session} : 0;
	ok($id && $p && $p->{diverging} && $p->{diverging}[0] == 2, 'a full fetch opening a session: the diverging epoch',
		'got session ' . ($id // '-') . ', ' . shown($p));
	$h = kafka_fetch_flex($sock, 12, [], session_id => $id, session_epoch => 1);
	$p = $h && @{ $h->{topics} } ? $h->{topics}[0][1][0] : undef;
	ok($h && $h->{error} == 0 && $p && $p->{diverging} && $p->{diverging}[0] == 2 && $p->{diverging}[1] == 5,
		'the session\'s next (incremental, naming no partition): still diverging at epoch 2, end 5 (its last fetched epoch kept)',
		'got ' . ($h ? "error $h->{error}, " . shown($p) : 'closed'));
}

tap_done();
