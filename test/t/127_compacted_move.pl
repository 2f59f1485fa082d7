# Moving a compacted partition after its first cleaning (issue 13): a new
# replica copies the leader's cleaned log with its offset gaps intact, as
# Kafka's followers do, joins the ISR, and once leadership is handed to it
# serves the same records at the same offsets.  Before, the leader refused
# the new replica's fetch below its cleaner point (MQ007) and the move
# never completed.
#
# Three nodes; the topic has replicas 1 and 2.  Keys are overwritten,
# some values are tombstones, some records carry headers and CreateTime
# timestamps; both replicas compact on their own.  Then mqctl reassign
# moves the partition to replicas 3 and 2 (broker 1 leaves): broker 3
# copies the cleaned log in fetches of 7 records, joins the ISR and is
# handed the leadership.  Every replica's log is compared record by
# record with the old leader's (offsets, keys, values, headers,
# timestamps), and a consumer of the new leader reads what the old one
# served.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $c = MqCluster->new(nodes => 3, broker_conf => "replica.fetch.max.records = 7\n");
$c->start_brokers;
$c->create_topic('cm', 1, {
	'replication.factor'        => 2,
	'cleanup.policy'            => '"compact"',
	'segment.records'           => 50,
	'min.cleanable.dirty.ratio' => 0,
	'delete.retention.ms'       => '"1d"' });
is($c->replicas('cm', 0), '1,2', 'the partition is on brokers 1 and 2');
is($c->leader('cm', 0), '1', 'broker 1 leads it');
my $ln = $c->node(1);

# 600 records over 40 keys, every 11th a tombstone, every 3rd with a
# header, every 5th with a CreateTime of its own; twelve calls of 50, each
# once the maintenance worker made the segment it needs, at or past the
# log end (a produce that makes one itself can collide with the worker's
# making it)
for my $call (0 .. 11)
{
	my ($from, $to) = ($call * 50, $call * 50 + 49);
	$ln->poll_query_until('postgres',
		"SELECT EXISTS (SELECT 1 FROM mq.segments s WHERE s.topic = 'cm' AND s.base_offset >= "
		  . "(SELECT log_end_offset FROM mq.partitions WHERE topic = 'cm'))")
	  or die 'no segment ahead of the log end';
	$ln->safe_psql('postgres', qq{
		SELECT count(*) FROM mq.send_batch('cm',
			(SELECT array_agg('k' || (i * 7 % 40) ORDER BY i) FROM generate_series($from, $to) i),
			(SELECT array_agg(CASE WHEN i % 11 = 3 THEN NULL ELSE 'v' || i END ORDER BY i)
			   FROM generate_series($from, $to) i),
			headers => (SELECT array_agg(CASE WHEN i % 3 = 0 THEN jsonb_build_object('i', i::text) END ORDER BY i)
			              FROM generate_series($from, $to) i),
			timestamps => (SELECT array_agg(CASE WHEN i % 5 = 0 THEN timestamptz '2001-01-01 00:00:00+00' + i * interval '1 s' END
			                                ORDER BY i) FROM generate_series($from, $to) i),
			partition => 0)});
}

# each replica compacts up to the segment holding the last record by itself
sub compacted
{
	my ($i, $cp) = @_;
	return $c->node($i)->poll_query_until('postgres',
		"SELECT cleaner_point = $cp AND removed_awaiting_rewrite = 0 FROM mq.compaction WHERE topic = 'cm'");
}
ok($c->wait_converged('cm', 0, 1, 2), 'replicas 1 and 2 converged');
ok(compacted($_, 550), "node$_ compacted up to 550") for 1, 2;

# A replica's log, every column a client sees, one line per record.
sub contents
{
	my ($i) = @_;
	my $node = $c->node($i);
	my $rel = $node->safe_psql('postgres',
		"SELECT p.relid FROM mq.partition_state p JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 'cm'");
	return [ split /\n/, $node->safe_psql('postgres',
			"SET TIME ZONE 'UTC'; SELECT concat_ws(' | ', msg_offset, created_at, convert_from(key, 'UTF8'), "
			  . "coalesce(convert_from(value, 'UTF8'), 'NULL'), headers, \"timestamp\", producer_id) "
			  . "FROM $rel ORDER BY msg_offset") ];
}
# What a consumer of the leader on node $i reads from offset 0.
sub consumed
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SET TIME ZONE 'UTC'; SELECT string_agg(concat_ws(' ', msg_offset, convert_from(key, 'UTF8'), "
		  . "coalesce(convert_from(value, 'UTF8'), 'NULL'), headers, \"timestamp\"), E'\\n' ORDER BY msg_offset) "
		  . "FROM mq.fetch('cm', 0, 0, 100000)");
}
my $before = contents(1);
my $served = consumed(1);
ok(@$before < 600 && $before->[0] !~ /^0 /, 'the leader\'s log has gaps: ' . scalar(@$before) . ' of 600 records kept')
  or diag($before->[0]);
is_deeply(contents(2), $before, 'the follower compacted its own copy to the same records');
is((split / /, (split /\n/, $served)[0])[0], (split / /, $before->[0])[0], 'a consumer of the leader starts at the first survivor');

# the move: broker 3 is new to the partition, broker 1 leaves
# in a directory of its own: tests run side by side (scripts/test.sh)
my $plan = PostgreSQL::Test::Utils::tempdir() . "/plan.json";
open my $fh, '>', $plan or die $!;
print $fh '{"version": 1, "partitions": [{"topic": "cm", "partition": 0, "replicas": [3, 2]}]}';
close $fh;
my ($rc, $out) = $c->mqctl('reassign', '--execute', "--file=$plan");
is($rc, 0, 'reassign --execute starts the move') or diag($out);
($rc, $out) = $c->mqctl('reassign', '--verify', "--file=$plan", '--wait', '--interval-ms=100', '--timeout-ms=120000');
if (!is($rc, 0, 'the move completes: broker 3 copied the cleaned log and joined the ISR'))
{
	diag($out);
	my @refused = grep { /refused|outside its log/ } split /\n/, $c->broker_log(3);
	# (before batches carried offsets: "leader 1 says our log end 0 is
	# outside its log: replica fetch offset 0 is below the cleaner point")
	diag($_) for @refused[ 0 .. ($#refused < 2 ? $#refused : 2) ];
	$c->teardown;
	done_testing();
	exit 1;
}
is($c->replicas('cm', 0), '3,2', 'the partition is on brokers 3 and 2');
is($c->leader('cm', 0), '3', 'broker 3, the first target replica, was handed the leadership');
is($c->isr('cm', 0), '2,3', 'both in sync');
unlike($c->broker_log(3), qr/outside its log|below the cleaner point|MQ029/,
	'broker 3 was never refused for its offsets (a fetch below the cleaner point, a batch\'s offsets)');

ok($c->wait_converged('cm', 0, 2, 3), 'replicas 2 and 3 converged');
ok(compacted(3, 550), 'node3 ran its own passes over the copy');
is_deeply(contents(3), $before,
	'the new replica\'s log is the old leader\'s: offsets, append times, keys, values, headers, timestamps');
is_deeply(contents(2), $before, 'and so is the other replica\'s');
is(consumed(3), $served, 'a consumer of the new leader reads what the old leader served, at the same offsets');
is($c->node(3)->safe_psql('postgres', "SELECT string_agg(msg_offset::text, ',') FROM mq.fetch('cm', 0, 1, 2)"),
	join(',', map { (split / /)[0] } @{$before}[ 0 .. 1 ]), 'a fetch from inside a gap starts at the next survivor');

# the new leader takes writes at the log end, and its follower copies them
$c->node(3)->poll_query_until('postgres',
	"SELECT EXISTS (SELECT 1 FROM mq.segments WHERE topic = 'cm' AND base_offset >= 600)")
  or die 'no segment ahead of the log end';
my $next = $c->node(3)->safe_psql('postgres',
	"SELECT msg_offset FROM mq.send('cm', 'k0', 'after-move', partition => 0)");
is($next, 600, 'the next record goes at offset 600');
ok($c->wait_converged('cm', 0, 2, 3), 'replica 2 has it too');

$c->teardown;
done_testing();
