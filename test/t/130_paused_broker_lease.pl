# A leader's broker paused while its node runs on (docs/replication.md,
# "The node trusts its broker only while it is there"): the broker's node
# session lives, so the node would go on leading in the old epoch, taking
# acks=1 writes that the new leader never sees, beside the leader the
# coordinator elects once the paused broker's heartbeats stop.  The broker
# renews a lease on its node every tick for session.timeout.ms, the time
# after which another broker may be elected, so by the election the old
# node refuses produce and reads (MQ020) and acknowledges nothing.  Once
# the broker resumes it learns it was deposed, follows the new leader, and
# the replicas converge with nothing acknowledged lost.
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
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
my ($ok, $out) = MqCluster::psql_cmd($c->node($old),
	"CALL mq.produce('t', NULL, ARRAY['before']::bytea[], 0, 'all', timeout_ms => 5000)", 15);
ok($ok, 'the leader acknowledges an acks=all write') or diag($out);

$c->signal_broker($old, 'STOP');
note("paused broker $old");
$c->coord->poll_query_until('postgres',
	"SELECT leader <> $old AND leader_epoch > $epoch FROM mq_coord.partition "
	  . "WHERE topic = 't' AND partition = 0")
  or diag('no new leader was elected');
my $new = $c->leader('t', 0);
isnt($new, $old, "broker $new was elected in a new epoch");

# the old node, its broker paused, still believes it leads its epoch
is($c->node($old)->safe_psql('postgres',
		"SELECT role || ' ' || leader_epoch FROM mq.replica_status WHERE topic = 't' AND partition = 0"),
	"leader $epoch", 'the old node still has the leader role in the old epoch');
($ok, $out) = MqCluster::psql_cmd($c->node($old),
	"CALL mq.produce('t', NULL, ARRAY['zombie']::bytea[], 0, '1')", 15);
ok(!$ok, 'it refuses an acks=1 write once another broker leads') or diag($out);
like($out, qr/has not renewed its lease/, 'because its broker\'s lease ran out');
($ok, $out) = MqCluster::psql_cmd($c->node($old), "SELECT count(*) FROM mq.fetch('t', 0, 0)", 15);
ok(!$ok && $out =~ /has not renewed its lease/, 'and reads');
($ok, $out) = MqCluster::psql_cmd($c->node($new),
	"CALL mq.produce('t', NULL, ARRAY['after']::bytea[], 0, 'all', timeout_ms => 10000)", 20);
ok($ok, 'the new leader acknowledges acks=all writes') or diag($out);

# the broker resumes: deposed, it follows the new leader
$c->signal_broker($old, 'CONT');
$c->node($old)->poll_query_until('postgres',
	"SELECT role = 'follower' AND leader_epoch > $epoch FROM mq.replica_status "
	  . "WHERE topic = 't' AND partition = 0")
  or diag('the old node did not follow the new leader');
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the ISR did not recover');
my ($new_log) = $c->replica_rows($new, 't', 0);
is_deeply($new_log, [ 'before', 'after' ], 'the new leader holds what was acknowledged, and no zombie write');
my ($old_log) = $c->replica_rows($old, 't', 0);
is_deeply($old_log, $new_log, 'the old leader\'s log equals the new leader\'s');
$c->teardown;
done_testing();
