# Replication with a highly available coordinator (MqHaCoord.pm): its
# primary is paused (pg_autoctl and PostgreSQL: SIGSTOP) past the session
# timeout and past a failover, then resumes as a zombie: its PostgreSQL
# runs on, still read-write and sure it is the primary, while its
# pg_autoctl, which would demote it, stays stopped.  A broker restarted
# meanwhile connects to it (the first host of its multi-host conninfo).
# Every commit there waits for a synchronous standby that follows the new
# primary now; the broker's deadline (coordinator.timeout.ms) cancels the
# wait, which leaves the commit visible on the zombie alone.  The broker
# must act on none of it (docs/replication.md, "A highly available
# coordinator"): it neither registers, nor follows the zombie's stale
# view, nor leads an epoch elected there.  The zombie is then demoted and
# rejoins as the standby.
#
# No two leaders acknowledge in one partition at any time: a sampler reads
# every data node's role and epoch throughout, and each leader it saw must
# have been elected for that epoch by the coordinator (no epoch handed out
# twice, or acted on when a failover took it back); every acknowledgement
# came from the leader of the epoch its records were written in; and the
# checker finds nothing acknowledged lost or displaced.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, coord_ha => 1);
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $leader = $c->leader('t', 0);
my $roles = MqHaCoord::start_role_sampler($c, 't', 0);
my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');

# 1. the primary pauses past the session timeout and past a failover
my $old = $c->coord->primary;
$c->coord->pause_node($old);
note("paused coordinator node $old");
like($c->wait_broker_log($leader, qr/serving 1 leadership\(s\) on in their epochs without the coordinator/),
	qr/serving 1 leadership/, 'the leader gave up on the paused coordinator and serves on');
ok($c->wait_acks($p, count => 5, since => time, node => $leader),
	'writes are acknowledged while the coordinator is paused');
ok($c->coord->wait_writable, 'the standby was promoted and takes writes');
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM mq_coord.broker WHERE mq_coord.broker_alive(broker_id, 3000)")
  or diag('the brokers did not reach the new primary');

# 2. the old primary's PostgreSQL resumes (its pg_autoctl does not) and a
# restarted follower broker reaches it first
my $x = (grep { $_ != $leader } 1 .. 3)[0];
$c->coord->resume_node($old, 'postgres');
# the broker passes over a node that does not answer within connect_timeout
# (2 s): on a loaded machine the resumed zombie took longer once, and the
# broker went to the new primary instead
my $zport = $c->coord->{ports}[ $old - 1 ];
my $zombie = "host=127.0.0.1 port=$zport dbname=postgres connect_timeout=2";
ok(MqCluster::poll_conninfo_until($zombie, 'SELECT NOT pg_catalog.pg_is_in_recovery()', 't', 3),
	"the zombie (coordinator node $old) answers as a primary");
$c->signal_broker($x, 'KILL');
my $off = length($c->broker_log($x));
my $since_restart = sub { substr($c->broker_log($x), $off) };
$c->start_broker($x);
note("resumed the PostgreSQL of coordinator node $old alone; restarted broker $x");
# each statement's deadline, or a WARNING that a commit's wait was cut
# short.  Or none: when the broker's session of before the pause was in a
# commit waiting for the standby then, it waits on in the zombie (a wait
# for synchronous replication does not see its client go) and holds the
# broker's id there, so the restarted broker is refused its id over and
# over and never gets as far as a commit; it acts on nothing either way.
my $cut = qr/the server did not answer in time|coordinator: canceling (the )?wait for synchronous replication/;
my $held = qr/broker id $x is held by another session/;
my $count = sub { my $re = shift; return scalar(() = $since_restart->() =~ /$re/g) };
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
usleep(100_000) while time < $deadline && $count->($cut) < 4 && $count->($held) < 30;
my ($n, $refused) = ($count->($cut), $count->($held));
note("broker $x: $n commits cut short, refused its id $refused times on the zombie");
ok($n >= 4 || $refused >= 30, "broker $x had $n commits on the zombie primary cut short, or was refused its id there");
unlike($since_restart->(), qr/registered as broker $x/, 'and acted on none of them');
ok($c->wait_acks($p, count => 5, since => time, node => $leader),
	'the leader acknowledges on meanwhile');

# 3. the zombie's pg_autoctl resumes: demoted, it rejoins as the standby
$c->coord->resume_node($old);
ok($c->coord->wait_ready, 'the old primary rejoined as the standby');
$c->coord->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM mq_coord.broker WHERE mq_coord.broker_alive(broker_id, 3000)")
  or diag('the brokers did not all come back');
$c->coord->poll_query_until('postgres',
	"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag("broker $x did not rejoin the ISR");
ok($c->wait_acks($p, count => 5, since => time), 'writes acknowledged at the end');

MqHaCoord::finish($c, $roles, 't', 0, $p, $r);
done_testing();
