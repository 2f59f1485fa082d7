# Replication with a highly available coordinator (pg_auto_failover: a
# primary and a synchronous standby, MqHaCoord.pm): the coordinator's
# primary is killed -9 (pg_autoctl and PostgreSQL, as a machine lost)
# while an idempotent acks=all producer writes and a consumer reads.
# During the failover the leader serves on in its epoch: writes are
# acknowledged and records consumed before the standby takes writes.  The
# brokers find the new primary through their multi-host conninfo
# (target_session_attrs=read-write), take their locks again (every
# advisory lock was lost) and keep the leader in its epoch.  Then
# elections work again: the leader's node is killed and another broker is
# elected in a new epoch.  The old primary rejoins as the standby.  A
# partition whose ISR is its leader alone (replication.factor 1) takes
# acks=all writes during the failover too.  The
# checker finds nothing acknowledged lost; every node that led, led an
# epoch the coordinator elected it for, and no epoch was handed out twice
# (docs/replication.md, "A highly available coordinator").
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, coord_ha => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
# a partition whose ISR is its leader alone: no follower fetch moves its
# high watermark, the leader's broker does, with or without the coordinator
$c->create_topic('solo', 1, { 'replication.factor' => 1, 'min.insync.replicas' => 1 });
my $solo = $c->leader('solo', 0);
my $leader = $c->leader('t', 0);
my $epoch = $c->coord->safe_psql('postgres',
	"SELECT leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
my $roles = MqHaCoord::start_role_sampler($c, 't', 0);

my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. the coordinator's primary is lost: writes and reads go on meanwhile
my $t_kill = time;
my $dead = $c->coord->kill9_primary;
note("killed coordinator node $dead at $t_kill");
my $serving = qr/serving [1-9]\d* leadership\(s\) on in their epochs without the coordinator/;
like($c->wait_broker_log($leader, $serving), $serving, 'the leader noticed the loss and serves on');
ok($c->wait_acks($p, count => 5, since => time, node => $leader),
	'acks=all writes are acknowledged by the leader during the failover');
ok($c->wait_consumed($r, count => 5, since => time), 'and the consumer reads on');
like($c->wait_broker_log($solo, $serving), $serving, "broker $solo noticed it too");
my ($sok, $sout) = MqCluster::psql_cmd($c->node($solo),
	"CALL mq.produce('solo', NULL, ARRAY['s']::bytea[], 0, 'all', timeout_ms => 5000)", 15);
my $t_solo = time;
ok($sok, 'acks=all on a leader alone in its ISR is acknowledged without the coordinator')
  or diag($sout);
ok($c->coord->wait_writable, 'the standby was promoted and takes writes');
my $t_up = time;
note(sprintf('the coordinator took writes again %.1f s after the kill', $t_up - $t_kill));
my @during = grep { $_->{kind} eq 'ack' && $_->{at} > $t_kill && $_->{at} < $t_up }
  @{ MqCluster::producer_lines($p->{file}) };
ok(@during >= 5, scalar(@during) . ' writes acknowledged while no coordinator took writes');
ok($t_solo < $t_up, 'the lone leader\'s write too');

# the brokers reach the new primary, every lock lost with the old one
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM mq_coord.broker WHERE mq_coord.broker_alive(broker_id, 3000)")
  or diag('the brokers did not come back');
like($c->wait_broker_log($leader, qr/leadership lock taken back; still leading epoch $epoch/),
	qr/lock taken back/, 'the leader took its lock back on the new primary');
is($c->coord->safe_psql('postgres',
		"SELECT leader || ' ' || leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"$leader $epoch", 'nobody was elected: the same leader in the same epoch');
ok($c->wait_acks($p, count => 3, since => time), 'writes acknowledged after the failover');

# 2. elections after the failover: the leader's node dies, another is elected
MqHaCoord::elect_after_kill($c, 't', 0, $leader, $epoch, $p, $r);

# 3. the killed node and coordinator node come back; everything converges
$c->node($leader)->start;
$c->coord->restart_node($dead);
ok($c->coord->wait_ready, 'the old coordinator primary rejoined as the standby');
$c->wait_acks($p, count => 3, since => time) or diag('no write acknowledged at the end');

MqHaCoord::finish($c, $roles, 't', 0, $p, $r);
done_testing();
