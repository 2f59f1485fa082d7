# Replication: the leader is paused past an election.  SIGSTOP of the
# leader node's postmaster and backends AND of its broker, while an
# idempotent producer writes with acks=all (RF 3, min ISR 2) and a
# consumer reads through the leader.  The paused broker keeps its
# coordinator locks (they are not leases) until another broker sees its
# heartbeat older than session.timeout.ms and ends its coordinator session;
# then a new leader is elected in a new epoch and writes continue.
#
# Then the old leader's node is resumed while its broker is still paused,
# so it still has the leader role in the old epoch; but its broker's lease
# ran out while it was paused (docs/replication.md, "The node trusts its
# broker only while it is there"), so a write sent to it is refused at
# once with MQ020, and nothing is appended there.  Once its broker resumes
# it resigns, truncates by leader epoch whatever the old epoch left
# unacknowledged, catches up from the new leader and rejoins the ISR.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);
my $old_epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");

# a producer attempt stuck on the paused node gives up after 3 s and asks
# the coordinator again
my $p = $c->start_producer('t', 0, attempt_timeout => 3);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

my $t_pause = time;
$c->pause_node($old);
$c->signal_broker($old, 'STOP');
note("paused node$old and its broker (the leader) at $t_pause");
ok($c->coord->poll_query_until('postgres',
		"SELECT leader <> $old FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'a new leader was elected while the old one was paused');
my $t_elected = time;
my $new = $c->leader('t', 0);
is($c->coord->safe_psql('postgres',
		"SELECT count(*) > 0 FROM mq_coord.event WHERE kind = 'broker_fenced' AND broker_id = $old"),
	't', "the paused broker's coordinator session was ended (fenced)");
is($c->coord->safe_psql('postgres',
		"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	$old_epoch + 1, 'in a new leader epoch');
$c->coord->poll_query_until('postgres',
	"SELECT NOT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the paused leader stayed in the ISR');
is($c->isr('t', 0), join(',', sort grep { $_ != $old } 1 .. 3), 'the paused leader left the ISR');
# the new leader takes writes before the old one wakes up
$c->wait_acks($p, count => 2, since => $t_elected, node => $new)
  or diag("no write acknowledged by the new leader $new");

# The node wakes up first: it still leads the old epoch as far as it knows.
$c->resume_node($old);
my $on = $c->node($old);
is($on->safe_psql('postgres', "SELECT role || ' ' || leader_epoch FROM mq.replica_status "
		  . "WHERE topic = 't' AND partition = 0"),
	"leader $old_epoch", "node$old resumed and still believes it leads epoch $old_epoch");
my ($zok, $z) = MqCluster::psql_cmd($on,
	"CALL mq.produce('t', NULL, ARRAY['zombie']::bytea[], 0, 'all', timeout_ms => 10000)", 15);
ok(!$zok && $z =~ /ERROR:\s+MQ020.*has not renewed its lease/s,
	'the deposed leader refuses a write at once: its broker\'s lease ran out') or diag($z);

# (read from the table: mq.fetch stops at the high watermark)
sub zombies
{
	my ($node) = @_;
	my $rel = $node->safe_psql('postgres', "SELECT p.relid FROM mq.partition_state p JOIN mq.topic t "
		  . "USING (topic_id) WHERE t.topic_name = 't' AND p.partition = 0");
	return "SELECT count(*) FROM $rel WHERE value = 'zombie'";
}

# Now its broker wakes up: it has lost its coordinator session.
$c->signal_broker($old, 'CONT');
ok($c->coord->poll_query_until('postgres',
		"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'the old leader rejoined the ISR');
is($on->safe_psql('postgres', "SELECT role FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	'follower', "node$old follows now");
$c->wait_acks($p, since => time) or diag('no write acknowledged after the rejoin');
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

my @after = grep { $_->{at} > $t_elected } MqCluster::acks_since($lines, $t_pause);
ok(@after > 0, 'writes continued on the new leader (' . scalar(@after) . ' batches)');
my ($first) = grep { $_->{node} == $new } MqCluster::acks_since($lines, $t_pause);
diag(sprintf('leader paused -> first acks=all write acknowledged by the new leader: %.3f s',
		$first ? $first->{at} - $t_pause : -1));

for my $i (1 .. 3)
{
	is($c->node($i)->safe_psql('postgres', zombies($c->node($i))),
		0, "the refused write is on no node (node$i)");
}
$c->check_log('t', 0, $lines, $new, grep { $_ != $new } 1 .. 3);
$c->teardown;
done_testing();
