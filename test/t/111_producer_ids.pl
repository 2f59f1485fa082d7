# Producer ids are cluster-wide (issue 12, Kafka's KIP-730): two producers
# that got their ids from different leaders around a failover never share
# an id, and neither loses an acknowledged batch.  Producer A gets its id
# from the leader, whose node is then killed before A writes; producer B
# gets its id from the new leader; A writes through the new leader (an id
# issued by another node, accepted at sequence 0), then B.  With ids
# allocated per node both got id 1 and B's first batches were taken for
# retries of A's: acknowledged, never written.  Then the old leader's node
# restarts (the ids it issued stay issued: they were flushed) and the
# coordinator crashes and restarts (no block is handed out twice); every
# node's blocks are disjoint.  The data nodes and the coordinator run with
# synchronous_commit = off, so only the flushes the scheme forces keep
# what was issued.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MqCluster;

my $c = MqCluster->new(nodes => 3, node_conf => "synchronous_commit = off\n");
$c->coord->append_conf('postgresql.conf', "synchronous_commit = off\n");
$c->coord->reload;
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);

sub init_producer
{
	my ($i) = @_;
	my ($ok, $out) = MqCluster::psql_cmd($c->node($i), 'SELECT producer_id FROM mq.init_producer()');
	die "init_producer on node$i: $out" unless $ok;
	chomp $out;
	return $out;
}

# A: an id from the leader; A writes nothing before the leader's node dies
my $id_a = init_producer($old);
$c->kill9_node($old);
$c->coord->poll_query_until('postgres',
	"SELECT leader <> $old AND NOT isr @> ARRAY[$old] FROM mq_coord.partition "
	  . "WHERE topic = 't' AND partition = 0")
  or diag('no new leader');
my $new = $c->leader('t', 0);
isnt($new, $old, "a new leader was elected (broker $new)");

# B: an id from the new leader
my $id_b = init_producer($new);
isnt($id_b, $id_a, "the producers got different ids from different leaders ($id_a, $id_b)");

# A writes first, through the new leader, then B
my $pa = $c->start_producer('t', 0, producer_id => $id_a);
ok($c->wait_acks($pa, count => 3), "producer A (id $id_a, from node$old) wrote through the new leader");
my $lines_a = $c->stop_producer($pa);
my $pb = $c->start_producer('t', 0, producer_id => $id_b, value_base => 1_000_000);
ok($c->wait_acks($pb, count => 3), "producer B (id $id_b, from node$new) wrote after it");

# the old leader's node comes back: an id it issues now is new
$c->node($old)->start;
$c->coord->poll_query_until('postgres',
	"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the old leader did not rejoin the ISR');
my $id_c = init_producer($old);
ok($id_c ne $id_a && $id_c ne $id_b, "the restarted node issued a new id ($id_c)");

my $lines_b = $c->stop_producer($pb);
$c->check_log('t', 0, [ @$lines_a, @$lines_b ], $new, grep { $_ != $new } 1 .. 3);

# The coordinator crashes and restarts; a node that uses up its ids gets a
# block cut after every block handed out before the crash.
my $before = $c->coord->safe_psql('postgres', 'SELECT max(last_id) FROM mq_coord.producer_id_block');
$c->coord->stop('immediate');
$c->coord->start;
$c->node($new)->safe_psql('postgres',
	'DO $$ BEGIN FOR i IN 1 .. 700 LOOP PERFORM mq.init_producer(); END LOOP; END $$');
$c->node($new)->poll_query_until('postgres',
	"SELECT mq.replica_producer_ids_left() >= 500 AND max(first_id) > $before FROM mq.producer_id_block")
  or diag("node$new got no new block after the coordinator restarted");
ok($c->coord->safe_psql('postgres', 'SELECT max(last_id) FROM mq_coord.producer_id_block') > $before,
	'blocks handed out after the coordinator restarted');

# what every node was given: no two blocks overlap, and the coordinator
# recorded each of them for the broker of that node
my @blocks;
for my $i (1 .. 3)
{
	for (split /\n/, $c->node($i)->safe_psql('postgres', 'SELECT first_id, last_id FROM mq.producer_id_block'))
	{
		my ($f, $l) = split /\|/;
		push @blocks, [ $i, $f, $l ];
		is($c->coord->safe_psql('postgres',
				"SELECT broker_id FROM mq_coord.producer_id_block WHERE first_id = $f AND last_id = $l"),
			$i, "node${i}'s block $f..$l is recorded for broker $i");
	}
}
my $overlaps = 0;
for my $x (0 .. $#blocks)
{
	for my $y ($x + 1 .. $#blocks)
	{
		$overlaps++ if $blocks[$x][1] <= $blocks[$y][2] && $blocks[$y][1] <= $blocks[$x][2];
	}
}
ok(@blocks >= 4, 'the nodes hold ' . scalar(@blocks) . ' blocks');
is($overlaps, 0, 'no two blocks of producer ids overlap');

$c->teardown;
done_testing();
