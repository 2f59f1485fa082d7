# Replication: the leader's broker is killed (-9) while its node stays up,
# with an idempotent producer (acks=all, RF 3, min ISR 2) and a consumer
# reading through the leader.  The dead broker's coordinator session ends
# with it, so its liveness and leadership locks go: another broker of the
# ISR is elected, shrinks the dead one out of the ISR, and writes
# continue.  The old leader's node still has the role it had (nobody can
# tell it otherwise), but it no longer leads: its broker's session on it
# is gone, so it refuses produce, reads and acks=all waits with not_leader
# at once, and the producer moves to the new leader without waiting for a
# timeout.  When the broker restarts it resigns that leadership, truncates
# the node's divergent suffix by leader epoch, catches up and rejoins.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);
my @others = grep { $_ != $old } 1 .. 3;

my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

my $t_kill = time;
$c->signal_broker($old, 'KILL');
note("killed the broker of node$old (the leader) at $t_kill; its node stays up");
$c->coord->poll_query_until('postgres',
	"SELECT leader <> $old AND NOT isr @> ARRAY[$old] FROM mq_coord.partition "
	  . "WHERE topic = 't' AND partition = 0")
  or diag('no new leader, or the dead broker stayed in the ISR');
my $new = $c->leader('t', 0);
isnt($new, $old, "a new leader was elected (broker $new)");
is($c->isr('t', 0), join(',', @others), 'the dead broker left the ISR');
is($c->node($old)->safe_psql('postgres',
		"SELECT role FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	'leader', "node$old still has the leader role (nobody told it otherwise)");
my ($ok, $out) = MqCluster::psql_cmd($c->node($old),
	"CALL mq.produce('t', NULL, ARRAY['orphan']::bytea[], 0, 'all', timeout_ms => 2000)");
like($out, qr/ERROR:\s+MQ020: this node's broker is not running, so it no longer leads "t" partition 0/,
	'but without its broker it refuses produce with not_leader');
my $t_elected = time;
$c->wait_acks($p, count => 2, since => $t_elected)
  or diag('no write acknowledged by the new leader');

$c->start_broker($old);
note("restarted the broker of node$old");
$c->coord->poll_query_until('postgres',
	"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the old leader did not rejoin the ISR');
is($c->isr('t', 0), '1,2,3', 'the old leader rejoined the ISR');
is($c->node($old)->safe_psql('postgres',
		"SELECT role FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	'follower', "node$old follows now");
$c->wait_acks($p, since => time) or diag('no write acknowledged after the rejoin');
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

my @after = grep { $_->{at} > $t_elected } MqCluster::acks_since($lines, $t_kill);
ok(@after > 0, 'writes continued after the election (' . scalar(@after) . ' batches)');
ok(!grep({ $_->{node} != $new } @after), "all of them acknowledged by the new leader (broker $new)");
my ($first) = grep { $_->{node} != $old } MqCluster::acks_since($lines, $t_kill);
diag(sprintf('leader broker kill -9 -> first acks=all write acknowledged by the new leader: %.3f s',
		$first ? $first->{at} - $t_kill : -1));
like($c->broker_log($old), qr/resigned 1 old leadership/, 'the restarted broker resigned the old leadership first');

$c->check_log('t', 0, $lines, $new, grep { $_ != $new } 1 .. 3);
$c->teardown;
done_testing();
