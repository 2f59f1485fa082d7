# Compaction on a replicated partition: every node's maintenance worker
# compacts its own copy, below its own high watermark, and the copies come
# out identical, because each applies the same rule (the latest record per
# key below the cleaner point) to the same log.  An independent checker
# computes the expected survivors from what was produced and compares each
# replica with it.  A leader does not wait for its followers before it
# cleans: a follower that fetches a cleaned range gets each record's
# offset and copies the gaps (test/t/127 moves a cleaned partition).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $c = MqCluster->new(nodes => 2);
$c->start_brokers;
$c->create_topic('cmp', 1, {
	'replication.factor'        => 2,
	'cleanup.policy'            => '"compact"',
	'segment.records'           => 100,
	'min.cleanable.dirty.ratio' => 0,
	'delete.retention.ms'       => '"1d"' });
my $leader = $c->leader('cmp', 0);
my ($follower) = grep { $_ != $leader } 1 .. 2;
my $ln = $c->node($leader);

# what was produced, offset => [key, value]; keys k0..k19, every 7th a tombstone
my @produced;
sub produce
{
	my ($from, $n) = @_;
	my @rows = map { [ 'k' . ($_ * 7 % 20), $_ % 7 == 3 ? undef : "v$_" ] } $from .. $from + $n - 1;
	my $keys = join(',', map { "'$_->[0]'" } @rows);
	my $vals = join(',', map { defined $_->[1] ? "'$_->[1]'" : 'NULL' } @rows);
	my $out = $ln->safe_psql('postgres',
		"SELECT min(msg_offset) FROM mq.send_batch('cmp', ARRAY[$keys], ARRAY[$vals]::text[], partition => 0)");
	$produced[ $out + $_ ] = $rows[$_] for 0 .. $#rows;
}

# The survivors a correct cleaner leaves: below the cleaner point the
# latest record of each key (null keys and tombstones kept), above it all.
sub expected
{
	my ($cp) = @_;
	my %latest;
	for my $o (0 .. $cp - 1) { $latest{ $produced[$o][0] } = $o; }
	my @out;
	for my $o (0 .. $#produced)
	{
		next if $o < $cp && $latest{ $produced[$o][0] } != $o;
		push @out, join(' ', $o, $produced[$o][0], $produced[$o][1] // 'NULL');
	}
	return \@out;
}

# A replica's log, straight from its partition table, and its cleaner point.
sub contents
{
	my ($i) = @_;
	my $node = $c->node($i);
	my $rel = $node->safe_psql('postgres',
		"SELECT p.relid FROM mq.partition_state p JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'cmp'");
	my $rows = $node->safe_psql('postgres',
		"SELECT msg_offset || ' ' || convert_from(key, 'UTF8') || ' ' || coalesce(convert_from(value, 'UTF8'), 'NULL') "
		  . "FROM $rel ORDER BY msg_offset");
	return [ split /\n/, $rows ];
}

sub cleaner_point
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SELECT cleaner_point FROM mq.compaction WHERE topic = 'cmp' AND partition = 0");
}

# Wait until both replicas have the whole log and compacted it up to the
# segment holding the last record, with the removed space rewritten.
sub compacted_to
{
	my ($cp) = @_;
	ok($c->wait_converged('cmp', 0, $leader, $follower), 'replicas converged');
	for my $i ($leader, $follower)
	{
		ok($c->node($i)->poll_query_until('postgres',
				"SELECT cleaner_point = $cp AND removed_awaiting_rewrite = 0 FROM mq.compaction "
				  . "WHERE topic = 'cmp' AND partition = 0"),
			"node$i compacted up to $cp by itself");
	}
}

produce(0, 250);
produce(250, 250);
compacted_to(400);
my $want = expected(400);
is_deeply(contents($leader), $want, 'the leader holds the latest record per key below the cleaner point, all above');
is_deeply(contents($follower), $want, 'the follower compacted to the same records at the same offsets');
ok($c->node($follower)->safe_psql('postgres', 'SELECT count(*) FROM mq.cleaner_pass WHERE NOT copied') > 0,
	'the follower ran its own passes');

# a second round: the new dirty part supersedes records of the clean part
produce(500, 230);
compacted_to(700);
$want = expected(700);
is_deeply(contents($leader), $want, 'after a second pass the leader matches the checker');
is_deeply(contents($follower), $want, 'and so does the follower');

# reading from the start through the leader: the latest value of every key
my %latest;
$latest{ $produced[$_][0] } = $produced[$_][1] // 'NULL' for 0 .. $#produced;
my $read = $ln->safe_psql('postgres',
	"SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM (SELECT DISTINCT ON (key) convert_from(key, 'UTF8') AS k, "
	  . "coalesce(convert_from(value, 'UTF8'), 'NULL') AS v FROM mq.fetch('cmp', 0, 0, 100000) ORDER BY key, msg_offset DESC) l");
is($read, join(',', map { "$_=$latest{$_}" } sort keys %latest), 'a consumer from the start gets the latest value of every key');

# a replica fetch of the compacted range carries the records' offsets
my $epoch = $ln->safe_psql('postgres',
	"SELECT leader_epoch FROM mq.partition_state p JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'cmp'");
my @survivors = map { (split / /)[0] } @{ expected(700) };
is($ln->safe_psql('postgres',
		"BEGIN; SELECT array_to_string((b).offsets, ',') FROM (SELECT mq.replica_fetch('cmp', 0, $epoch, 99, 0, 10, 0) AS b) f; "
		  . 'ROLLBACK'),
	join(',', @survivors[ 0 .. 9 ]), 'a replica fetch below the cleaner point carries the offsets of the survivors');

done_testing();
