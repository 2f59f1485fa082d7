# Fetch sessions (KIP-227) through raw frames (run by fetch_sessions.sh
# with the broker's port; topic fs has partitions 0 and 1, partition 0
# two records, partition 1 none; records are added through psql on the
# test database): a full fetch opens a session, an incremental one answers only the
# partitions with something new, forgotten partitions leave the session,
# stale epochs, unknown ids and a change of topic naming (names vs v13+
# ids) get Kafka's errors, a session closes, and a
# full cache evicts as Kafka's does.  Prints TAP.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(:DEFAULT kafka_connect kafka_request ok tap_done);
use Digest::MD5 qw(md5);

my $port = shift or die "usage: fetch_sessions.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';

my $sock = kafka_connect($port);

sub call {
	my ($api, $ver, $body, $flex) = @_;
	my $r = kafka_request($sock, 'fetch_sessions.pl', $api, $ver, $body, $flex);
	return defined $r ? substr($r, $flex ? 5 : 4) : undef;
}

sub sql { my $q = shift; system('psql', '-XqAtc', $q) == 0 or die "psql failed: $q\n" }

# Fetch v11: session (id, epoch), partitions [[partition, offset]...] of
# topic fs, forgotten partitions of fs; returns { error, session,
# parts => { partition => [error, high watermark, record bytes] } }
sub fetch {
	my ($id, $epoch, $parts, $forget) = @_;
	my $body = pack('l> l> l> l> c l> l>', -1, 0, 1, 1 << 20, 0, $id, $epoch);
	if (@$parts) {
		$body .= pack('l>', 1) . str('fs') . pack('l>', scalar @$parts);
		$body .= pack('l> l> q> q> l>', $_->[0], -1, $_->[1], -1, 1 << 20) for @$parts;
	}
	else {
		$body .= pack('l>', 0);
	}
	if ($forget && @$forget) {
		$body .= pack('l>', 1) . str('fs') . pack('l>', scalar @$forget) . pack('l>*', @$forget);
	}
	else {
		$body .= pack('l>', 0);
	}
	$body .= str('');
	my $r = call(1, 11, $body);
	return undef unless defined $r;
	my ($err, $session, $ntopics) = unpack('x4 s> l> l>', $r);
	my %parts;
	my $pos = 14;
	for (1 .. $ntopics) {
		my $tlen = unpack("x$pos n", $r);
		$pos += 2 + $tlen;
		my $np = unpack("x$pos l>", $r);
		$pos += 4;
		for (1 .. $np) {
			my ($p, $e, $hw, $na) = unpack("x$pos l> s> q> x8 x8 l>", $r);
			$pos += 4 + 2 + 24 + 4 + ($na > 0 ? 16 * $na : 0) + 4;
			my $rlen = unpack("x$pos l>", $r);
			$pos += 4 + ($rlen > 0 ? $rlen : 0);
			$parts{$p} = [$e, $hw, $rlen];
		}
	}
	return { error => $err, session => $session, parts => \%parts };
}

sub shown { my $h = shift; return $h ? join(' ', map { "$_:" . join('/', @{ $h->{parts}{$_} }) } sort keys %{ $h->{parts} }) : 'closed' }

# ---- a full fetch that opens a session
my $h = fetch(0, 0, [[0, 0], [1, 0]]);
my $id = $h && $h->{session};
ok($h && $h->{error} == 0 && $id && keys %{ $h->{parts} } == 2 && $h->{parts}{0}[2] > 0,
	'a full fetch with epoch 0 opens a session and answers both partitions', 'got ' . shown($h) . ' session ' . ($id // '-'));

# ---- incremental: partition 0 moves on, nothing new anywhere: an empty answer
$h = fetch($id, 1, [[0, 2]]);
ok($h && $h->{error} == 0 && $h->{session} == $id && !keys %{ $h->{parts} },
	'an incremental fetch with nothing new answers no partition, same session', 'got ' . shown($h));

# ---- records on partition 1 (fetched from offset 0 as the session keeps it)
sql("SELECT mq.send('fs', NULL::bytea, 'x'::bytea, partition => 1)");
$h = fetch($id, 2, []);
ok($h && $h->{error} == 0 && join(',', keys %{ $h->{parts} }) eq '1' && $h->{parts}{1}[2] > 0 && $h->{parts}{1}[1] == 1,
	'records on partition 1: only partition 1 is answered, with them and its new high watermark', 'got ' . shown($h));

# ---- a high watermark that moves past the fetch offset shows the partition again
sql("SELECT mq.send('fs', NULL::bytea, 'y'::bytea, partition => 0)");
$h = fetch($id, 3, [[1, 1]]);
ok($h && $h->{error} == 0 && join(',', keys %{ $h->{parts} }) eq '0' && $h->{parts}{0}[1] == 3,
	'a record on partition 0: partition 0 is answered, partition 1 (moved on) is not', 'got ' . shown($h));

# ---- errors: a stale epoch, an unknown session
$h = fetch($id, 3, []);
ok($h && $h->{error} == 71 && $h->{session} == 0 && !keys %{ $h->{parts} },
	'a repeated epoch: INVALID_FETCH_SESSION_EPOCH (71), session 0, no partitions', 'got error ' . ($h ? $h->{error} : 'closed'));
$h = fetch($id == 12345 ? 54321 : 12345, 1, []);
ok($h && $h->{error} == 70 && !keys %{ $h->{parts} }, 'an unknown session id: FETCH_SESSION_ID_NOT_FOUND (70)',
	'got error ' . ($h ? $h->{error} : 'closed'));

# ---- the session survives the errors; forgotten partitions leave it
$h = fetch($id, 4, [[0, 3]], [1]);
ok($h && $h->{error} == 0 && !keys %{ $h->{parts} }, 'epoch 4 goes on; partition 1 forgotten', 'got ' . shown($h));
sql("SELECT mq.send('fs', NULL::bytea, 'z'::bytea, partition => 1)");
$h = fetch($id, 5, []);
ok($h && $h->{error} == 0 && !keys %{ $h->{parts} }, 'a record on the forgotten partition 1 is not answered', 'got ' . shown($h));

# ---- closing: epoch -1 is a sessionless full fetch, the session is gone
$h = fetch($id, -1, [[0, 0]]);
ok($h && $h->{error} == 0 && $h->{session} == 0 && keys %{ $h->{parts} } == 1,
	'epoch -1 closes the session: a full fetch, session id 0', 'got ' . shown($h));
$h = fetch($id, 6, []);
ok($h && $h->{error} == 70, 'the closed session is not found (70)', 'got error ' . ($h ? $h->{error} : 'closed'));
$h = fetch(0, -1, [[0, 0]]);
ok($h && $h->{error} == 0 && $h->{session} == 0, 'session 0, epoch -1: sessionless, as before KIP-227', 'got ' . shown($h));

# ---- v13+ sessions name topics by id (the MD5 of the name): a session
# opened with ids takes only requests with ids (Kafka's
# FETCH_SESSION_TOPIC_ID_ERROR otherwise)
sub fetch13 {
	my ($id, $epoch, $offset) = @_;
	my $body = pack('l> l> l> l> c l> l>', -1, 0, 1, 1 << 20, 0, $id, $epoch);
	$body .= defined $offset
	  ? chr(2) . md5('fs') . chr(2) . pack('l> l> q> l> q> l>', 0, -1, $offset, -1, -1, 1 << 20) . "\0\0"
	  : chr(1);
	$body .= chr(1) . chr(1) . "\0";	# no forgotten topics, rack "", tags
	my $r = call(1, 13, $body, 1);
	return undef unless defined $r;
	my ($err, $session, $count) = unpack('x4 s> l> C', $r);
	return { error => $err, session => $session, topics => $count - 1 };
}
{
	my $h13 = fetch13(0, 0, 0);
	my $id13 = $h13 && $h13->{session};
	ok($h13 && $h13->{error} == 0 && $id13 && $h13->{topics} == 1, 'Fetch v13 by topic id opens a session',
		'got ' . ($h13 ? "error $h13->{error} session $h13->{session} topics $h13->{topics}" : 'closed'));
	$h13 = fetch13($id13, 1, 3);
	ok($h13 && $h13->{error} == 0 && $h13->{session} == $id13 && $h13->{topics} == 0,
		'its incremental fetch with nothing new answers no topic', 'got ' . ($h13 ? "error $h13->{error} topics $h13->{topics}" : 'closed'));
	$h = fetch($id13, 2, []);
	ok($h && $h->{error} == 106, 'the session taken on by Fetch v11 (names): FETCH_SESSION_TOPIC_ID_ERROR (106)',
		'got error ' . ($h ? $h->{error} : 'closed'));
	fetch13($id13, -1, 3);	# closed, for the cache's count below
}

# ---- the cache: 1000 slots; a full cache refuses an equal session and
# evicts the smallest for a larger one
my @ids;
for (1 .. 1000) {
	$h = fetch(0, 0, [[0, 3]]);
	push @ids, $h ? $h->{session} : 0;
}
ok(!grep({ !$_ } @ids), '1000 sessions of one partition each fit in the cache', (grep { !$_ } @ids) . ' got none');
$h = fetch(0, 0, [[0, 3]]);
ok($h && $h->{error} == 0 && $h->{session} == 0, 'the 1001st of one partition gets none (id 0) but its records', 'got ' . shown($h));
$h = fetch(0, 0, [[0, 3], [1, 0]]);
my $big = $h && $h->{session};
ok($big, 'one of two partitions evicts a smaller session');
$h = fetch($ids[0], 1, []);
ok($h && $h->{error} == 70, 'the least recently used of the smallest sessions was evicted', 'got error ' . ($h ? $h->{error} : 'closed'));
$h = fetch($ids[1], 1, []);
ok($h && $h->{error} == 0, 'the others remain', 'got error ' . ($h ? $h->{error} : 'closed'));

tap_done();
