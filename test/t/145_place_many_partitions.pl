# Placement: a broker places a topic of many partitions on its node in
# chunks, a transaction each (docs/replication.md, "Placement and
# reassignment"), never in one statement longer than node.timeout.ms.
# Issue 25: creating a 64-partition RF 3 topic under load took over
# node.timeout.ms (5 s) in one statement; the broker counted its node as
# lost, gave up its roles and tried again, in a loop, and no partition
# of the topic ever got a leader.
#
# The load is made deterministic: an event trigger on every data node
# sleeps 100 ms after each CREATE TABLE (three per partition: its table,
# its first segment and the one ahead), so that placing 24 partitions at
# once takes over 7 s, past node.timeout.ms (3 s here), while the first
# chunk (4) takes 1.2 s.  The first CREATE TABLE on each node sleeps 3 s
# instead: the server cancels that first chunk at half node.timeout.ms
# (the statement_timeout placement runs with), so it fails as a statement,
# not as a lost node, and the next, smaller chunk goes on.  (The sequence
# counts the calls outside the transactions that roll back.)
# Every partition must get a leader and its whole ISR, with no broker
# losing its node on the way, and an acks=all record must be acknowledged
# on the last partition.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $n = 24;
my $c = MqCluster->new(nodes => 3, broker_conf => "[broker]\nnode.timeout.ms = 3000\n");
for my $i (1 .. 3)
{
	$c->node($i)->safe_psql('postgres', q{
		CREATE SEQUENCE slow_ddl_calls;
		CREATE FUNCTION slow_ddl() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER AS
		  $$ BEGIN PERFORM pg_sleep(CASE nextval('public.slow_ddl_calls') WHEN 1 THEN 3 ELSE 0.1 END); END $$;
		CREATE EVENT TRIGGER slow_ddl ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
		  EXECUTE FUNCTION slow_ddl();});
}
$c->start_brokers;
$c->coord->safe_psql('postgres', "SELECT mq_coord.create_topic('big', $n, "
	. "'{\"replication.factor\": 3, \"min.insync.replicas\": 2}')");

# wait until every partition is led with its whole ISR, or a broker lost
# its node (the bug: then it never settles, so fail at once)
my $q_settled = "SELECT count(*) FILTER (WHERE leader IS NOT NULL AND cardinality(isr) = 3) "
  . "FROM mq_coord.partition WHERE topic = 'big'";
sub node_partitions
{
	my ($i) = @_;
	return $c->node($i)->safe_psql('postgres',
		"SELECT coalesce(max(partitions), 0) FROM mq.topics WHERE topic = 'big'");
}
my $lost_re = qr/lost the connection to the node/;
my ($settled, $lost) = (0, '');
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	$settled = $c->coord->safe_psql('postgres', $q_settled);
	# (the ISR starts whole: the nodes must hold every partition too)
	last if $settled == $n && !grep { node_partitions($_) != $n } 1 .. 3;
	($lost) = grep { $c->broker_log($_) =~ $lost_re } 1 .. 3;
	last if $lost;
	usleep(100_000);
}
is($settled, $n, "all $n partitions led, each with its whole ISR, and on every node");
ok(!$lost, 'no broker lost its node while placing the topic') or diag("broker $lost did");

for my $i (1 .. 3)
{
	my $log = $c->broker_log($i);
	my @chunks = $log =~ /placed topic "big" on the node: (\d+) of $n partitions/g;
	ok(@chunks >= 2 && $chunks[-1] == $n,
		"broker $i placed the topic in chunks (" . join(', ', @chunks) . ')');
	like($log, qr/cannot place the topic on the node: canceling statement due to statement timeout/,
		"broker $i: the slow first chunk was cancelled by the server, as a statement");
	is(node_partitions($i), $n, "node$i holds all $n partitions");
}

my $last = $n - 1;
my $l = $c->leader('big', $last);
like($c->node($l)->safe_psql('postgres',
		"CALL mq.produce('big', NULL, ARRAY['x']::bytea[], $last, 'all')"),
	qr/^0\|1$/, "an acks=all record on partition $last is acknowledged at offset 0");

done_testing();
