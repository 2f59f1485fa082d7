# Replication: one fetch connection per leader's node and follower
# (broker/mq-broker/fetch_session.c, mq.replica_fetch_commit running
# mq.replica_fetch_many), as Kafka's
# replica fetcher.  A 24-partition topic with RF 3 on three nodes: each
# node leads 8 partitions and follows 16, yet each node serves two
# follower connections, one per other broker (with a connection per
# partition it served 16).  acks=all writes to every partition are
# acknowledged, every follower holds every record and the high
# watermarks, and a partition whose leader moves (a broker killed) is
# fetched from its new leader over that node's session.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $n = 24;
my $c = MqCluster->new(nodes => 3, node_conf => "track_functions = all\nlog_connections = on");
$c->start_brokers;
$c->create_topic('fs', $n, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = $n FROM mq_coord.partition WHERE topic = 'fs' AND cardinality(isr) = 3"),
	"all $n partitions have their three replicas in the ISR");
ok($c->wait_preferred_leaders('fs'), 'the partitions are led by all three nodes, their preferred leaders');
# an election lists every replica in the ISR before any follower fetched:
# the acks=all writes below need followers that did
ok($c->wait_caught_up('fs'), 'every follower caught up with its leader');
# A follower whose log is empty has no epoch to compare: it fetches from
# offset 0 without asking the leader where its epoch ends
# (broker/mq-broker/follower.c), so no truncation connection was made;
# followers that hold records do ask (after the kill below): the
# connections the nodes logged for it, shared by the partitions of a
# leader's node.
my $truncations = sub {
	my $n = 0;
	$n += () = slurp_file($c->node($_)->logfile) =~ /connection authorized: .*application_name=mq-broker truncation/g
	  for 1 .. 3;
	return $n;
};
is($truncations->(), 0, 'empty followers fetched without a connection to ask their leaders where an epoch ends');

# the followers' fetch connections on a node: the sessions that fetch
my $followers = "SELECT count(*) FROM pg_stat_activity "
  . "WHERE query LIKE 'CALL mq.replica_fetch_commit(%' AND pid <> pg_backend_pid()";
for my $i (1 .. 3)
{
	ok($c->node($i)->poll_query_until('postgres', $followers, '2'),
		"node$i serves two follower connections, one per other broker");
}

# an acks=all write to every partition, each from its leader
for my $p (0 .. $n - 1)
{
	$c->node($c->leader('fs', $p))->safe_psql('postgres',
		"CALL mq.produce('fs', NULL, ARRAY['r$p']::bytea[], $p, 'all')");
}
my $state = "SELECT string_agg(partition || ':' || log_end_offset || '/' || high_watermark, ',' ORDER BY partition) "
  . "FROM mq.replica_status WHERE topic = 'fs'";
my $want = join ',', map { "$_:1/1" } 0 .. $n - 1;
for my $i (1 .. 3)
{
	ok($c->node($i)->poll_query_until('postgres', $state, $want),
		"node$i holds every partition's record and high watermark");
}

# steady and idle, node 1's broker reads the state of the partitions it
# leads in one statement per tick (mq.replica_leader_states), not one
# per partition (mq.replica_leader_state, for a high watermark that
# moves): function calls counted from here on
my $calls = "SELECT coalesce(sum(calls) FILTER (WHERE funcname = 'replica_leader_states'), 0) || ' ' || "
  . "coalesce(sum(calls) FILTER (WHERE funcname = 'replica_leader_state'), 0) "
  . "FROM pg_stat_user_functions WHERE schemaname = 'mq'";
my ($many0, $one0) = split ' ', $c->node(1)->safe_psql('postgres', $calls);
ok($c->node(1)->poll_query_until('postgres',
		"SELECT sum(calls) >= $many0 + 10 FROM pg_stat_user_functions "
		  . "WHERE schemaname = 'mq' AND funcname = 'replica_leader_states'"),
	'node 1: its broker reads its leaders\' state in one statement a tick');
my ($many1, $one1) = split ' ', $c->node(1)->safe_psql('postgres', $calls);
my $led1 = grep { $c->leader('fs', $_) == 1 } 0 .. $n - 1;
cmp_ok($one1 - $one0, '<', $many1 - $many0,
	"and reads none of its $led1 idle partitions alone ("
	  . ($one1 - $one0) . ' single reads in ' . ($many1 - $many0) . ' ticks)');

# kill broker 3: its partitions get new leaders, whose sessions fetch them
my @led3 = grep { $c->leader('fs', $_) == 3 } 0 .. $n - 1;
$c->signal_broker(3, 'KILL');
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM mq_coord.partition WHERE topic = 'fs' AND leader = 3"),
	'broker 3 killed: its ' . scalar(@led3) . ' partitions have new leaders');
ok($c->wait_caught_up('fs'), 'and their followers caught up with them');
# ... each follower's broker on one connection per leader's node for all
# the partitions it leads (one a partition before)
my $asked = $truncations->();
ok($asked >= 1 && $asked < @led3,
	"their followers, which hold records, asked the new leaders where their epoch ends, "
	  . "on connections shared by the partitions ($asked for " . scalar(@led3) . ' partitions)');
for my $p (@led3)
{
	$c->node($c->leader('fs', $p))->safe_psql('postgres',
		"CALL mq.produce('fs', NULL, ARRAY['s$p']::bytea[], $p, 'all')");
}
my $moved = join ',', @led3;
my $other = "SELECT string_agg(partition || ':' || log_end_offset, ',' ORDER BY partition) FROM mq.replica_status "
  . "WHERE topic = 'fs' AND partition IN ($moved)";
ok($c->node($_)->poll_query_until('postgres', $other, join ',', map { "$_:2" } @led3),
	"node$_ holds the new leaders' acks=all records") for 1, 2;
ok($c->node($_)->poll_query_until('postgres', $followers, '1'), "node$_ serves one follower connection now")
  for 1, 2;

$c->teardown;
done_testing();
