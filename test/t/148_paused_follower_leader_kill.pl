# Two overlapping faults (issue 25, item 3): a follower's broker is paused
# (SIGSTOP; its node runs on) and, while it is paused, the leader's node is
# killed -9.  One partition, RF 3, min ISR 2, an idempotent acks=all
# producer and a consumer throughout.  What docs/replication.md promises:
#
#   - the third broker, the only live one in the ISR, is elected in a newer
#     epoch (the paused broker's session ages out, the dead node's broker
#     gives up its liveness);
#   - (with the paused follower out of the ISR and the old leader's node
#     dead, min ISR 2 holds acks=all back until one of them returns;)
#   - once both heal (the broker resumed, the node restarted) the follower
#     catches up and rejoins, acknowledgements resume from the new leader,
#     the old leader's node follows and the ISR is full again;
#   - every leader a data node was is one the coordinator elected for that
#     epoch, and the checker finds every acknowledged record once, at its
#     offset, on every replica.
#
# Recovery is asserted by waiting on conditions; the time without an
# acknowledgement after both healed is printed and measured against
# 2 x session.timeout.ms by test/bench/availability.pl, not asserted.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;
use MqHaCoord;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the ISR did not fill');
my $old = $c->leader('t', 0);
my ($paused, $third) = grep { $_ != $old } 1 .. 3;
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
my $roles = MqHaCoord::start_role_sampler($c, 't', 0);

my $p = $c->start_producer('t', 0, attempt_timeout => 3);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. both faults: a follower's broker paused, then the leader's node killed
$c->signal_broker($paused, 'STOP');
$c->kill9_node($old);
my $t0 = time;
note("paused broker $paused, killed node $old (the leader)");
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $third AND leader_epoch > $epoch FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	"broker $third, the live member of the ISR, was elected in a newer epoch");

# 2. both heal: acknowledgements resume from the new leader
$c->signal_broker($paused, 'CONT');
$c->node($old)->start;
my $t_heal = time;
ok($c->wait_acks($p, count => 5, since => $t_heal, node => $third),
	'the new leader acknowledges once the paused follower is back');
ok($c->wait_consumed($r, count => 5, since => $t_heal), 'and the consumer reads from it');
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	'both old replicas rejoined the ISR');
my @at = sort { $a <=> $b } map { $_->{at} }
  grep { $_->{kind} eq 'ack' && $_->{at} >= $t_heal } @{ MqCluster::producer_lines($p->{file}) };
diag(sprintf('both faults healed %.1f s after the kill; first acknowledgement %.1f s after the heal '
		  . '(session.timeout.ms 3 s)', $t_heal - $t0, ($at[0] // $t_heal) - $t_heal));
ok($c->wait_acks($p, count => 3, since => time), 'writes acknowledged at the end');

MqHaCoord::finish($c, $roles, 't', 0, $p, $r);
done_testing();
