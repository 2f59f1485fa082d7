# Idempotent producers through a leader cut from the coordinator.  Two
# idempotent acks=all producers write one partition (RF 3, min ISR 2) in
# batches of 50 while followers fetch at most 3 records at a time, so a
# follower often holds part of a batch; a consumer reads through the
# leader.  The leader's broker is cut from the coordinator silently
# (MqCluster's coord_proxy: packets go nowhere, no reset), its node and
# the other brokers stay connected.  What docs/replication.md promises:
#
#   - after session.timeout.ms another broker fences the silent broker's
#     coordinator session (its heartbeat is too old) and is elected in a
#     new leader epoch;
#   - the cut broker serves on without the coordinator: its node keeps
#     leading the old epoch ("Serving without the coordinator");
#   - but acks=all on the old leader is never acknowledged after the
#     election: the new leader no longer fetches in the old epoch, so the
#     old leader's high watermark stops (MQ023, or MQ020 once it hears of
#     the new epoch);
#   - once healed the broker registers again, finds another broker named
#     leader in a newer epoch, steps down, and its node follows the new
#     leader, truncating what the old epoch appended there (the refused
#     write), and rejoins the ISR.
#
# Both producers retry each batch with its sequence until acknowledged:
# every acknowledged batch must be in the log exactly once, at the offset
# it was acknowledged with (check_log).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;

my $c = MqCluster->new(nodes => 3, coord_proxy => 1,
	broker_conf => "replica.fetch.max.records = 3\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);
my $old_epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");

# an attempt stuck on the silent leader gives up after 3 s and asks the
# coordinator again
my @p = map { $c->start_producer('t', 0, tag => $_, batch => 50, attempt_timeout => 3) } 'v', 'w';
my $r = $c->start_consumer('t', 0);
$c->wait_acks($_, count => 3) or diag("producer $_->{tag} made no progress") for @p;
$c->wait_consumed($r) or diag('the consumer read nothing');

my $t_cut = time;
$c->cut_coordinator($old);
note("cut broker $old (the leader) from the coordinator at $t_cut");
ok($c->coord->poll_query_until('postgres',
		"SELECT leader <> $old FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'another broker was elected while the leader was cut from the coordinator');
my $t_elected = time;
my $new = $c->leader('t', 0);
diag(sprintf('leader cut from the coordinator -> new leader on the coordinator: %.3f s',
		$t_elected - $t_cut));
is($c->coord->safe_psql('postgres',
		"SELECT count(*) > 0 FROM mq_coord.event WHERE kind = 'broker_fenced' AND broker_id = $old"),
	't', "the silent broker's coordinator session was ended once its heartbeat aged (fenced)");
is($c->coord->safe_psql('postgres',
		"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	$old_epoch + 1, 'in a new leader epoch');

# still cut, the old leader serves on in its epoch
my $on = $c->node($old);
is($on->safe_psql('postgres', "SELECT role || ' ' || leader_epoch FROM mq.replica_status "
		  . "WHERE topic = 't' AND partition = 0"),
	"leader $old_epoch", "node$old still leads epoch $old_epoch while its broker is cut");

# acks=all on the old leader, sent once the new one is elected: written
# there, never acknowledged
my ($zok, $zout) = MqCluster::psql_cmd($on,
	"CALL mq.produce('t', NULL, ARRAY['zombie']::bytea[], 0, 'all', timeout_ms => 3000)", 20);
ok(!$zok, 'acks=all on the old leader was not acknowledged');
like($zout, qr/ERROR:\s+MQ02[03]/, 'it was refused (timed out, or not_leader)');
note($zout);
my $orel = $on->safe_psql('postgres', "SELECT p.relid FROM mq.partition_state p "
	  . "JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 't' AND p.partition = 0");
is($on->safe_psql('postgres', "SELECT count(*) FROM $orel WHERE value = 'zombie'"),
	1, "the refused write was appended on node$old, in the epoch that is over");

# the new leader takes both producers' writes meanwhile
$c->wait_acks($_, since => $t_elected, node => $new)
  or diag("producer $_->{tag}: nothing acknowledged by the new leader $new") for @p;

$c->heal_coordinator($old);
my $t_heal = time;
note("healed broker ${old}'s coordinator link at $t_heal");
my $new_epoch = $old_epoch + 1;
ok($on->poll_query_until('postgres', "SELECT role || ' ' || leader_epoch || ' ' || leader_id "
		  . "FROM mq.replica_status WHERE topic = 't' AND partition = 0", "follower $new_epoch $new"),
	"after the heal node$old follows broker $new in epoch $new_epoch");
is($c->leader('t', 0), $new, 'the new leader kept its leadership through the heal');
$c->wait_acks($_, since => time) or diag("producer $_->{tag}: nothing acknowledged after the heal")
  for @p;
my @lines = map { @{ $c->stop_producer($_) } } @p;
$c->stop_consumer($r);
# (after the producers: fetching at most one batch at a time, a follower a
# batch behind cannot overtake the in-sync one while acks=all producers keep
# the partition busy)
ok($c->coord->poll_query_until('postgres',
		"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'the old leader rejoined the ISR');

for my $p (@p)
{
	my @after = grep { $_->{tag} eq $p->{tag} && $_->{at} > $t_elected }
	  MqCluster::acks_since(\@lines, $t_cut);
	ok(@after > 0, "producer $p->{tag}: writes continued on the new leader (" . scalar(@after)
		  . ' batches)');
}
for my $i (1 .. 3)
{
	my $rel = $c->node($i)->safe_psql('postgres', "SELECT p.relid FROM mq.partition_state p "
		  . "JOIN mq.topic t USING (topic_id) WHERE t.topic_name = 't' AND p.partition = 0");
	is($c->node($i)->safe_psql('postgres', "SELECT count(*) FROM $rel WHERE value = 'zombie'"),
		0, "the refused write is not on node$i");
}
$c->check_log('t', 0, \@lines, $new, grep { $_ != $new } 1 .. 3);
$c->teardown;
done_testing();
