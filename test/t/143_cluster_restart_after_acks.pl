# Replication: the whole cluster stops at once right after an acks=all
# acknowledgement (kill -9 of every data node, the coordinator and every
# broker) and starts again (docs/replication.md, "The acknowledgement
# path").  The leader commits an acks=all write without waiting for its
# own flush; the acknowledgement waits for it and for the followers'
# flushed appends, so every acknowledged record is on disk on the leader
# and on the in-sync followers when the producer hears of it.
#
# The data nodes run with synchronous_commit = off and a 10 s
# wal_writer_delay, and their WAL writers are paused (SIGSTOP): what a
# commit leaves unflushed stays in the WAL buffers and is lost at the
# kill.  After the restart the old leader's broker starts first and leads
# again in a new epoch, with whatever its node kept; the followers follow
# it and cut what it lacks.  Had the acknowledgement not waited for the
# leader's flush, the records acknowledged just before the kill would be
# cut here.  The checker: no acknowledged record lost, none moved.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, lag_time_max_ms => 5000,
	node_conf => "synchronous_commit = off\nwal_writer_delay = 10000ms\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
# settled on its preferred leader with all three replicas in the ISR: a
# broker slow to start leaves the first leadership with another, and the
# preferred-leader handover 10 s later made the node this test crashes as
# the leader a follower, or worse, one out of the ISR that cannot lead
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = replicas[1] AND cardinality(isr) = 3 FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	'all three replicas in the ISR, the preferred one leading');

# pause every data node's WAL writer: nothing writes unflushed WAL out
for my $i (1 .. 3)
{
	my $pid = $c->node($i)->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'");
	ok($pid =~ /^\d+$/ && kill('STOP', $pid), "node$i: WAL writer $pid paused");
}

my $p = $c->start_producer('t', 0, batch => 3);
$c->wait_acks($p, count => 5) or diag('the producer made no progress');

# Right after the next acknowledgement, every server and broker dies.
$c->wait_acks($p, since => time) or diag('no acknowledgement to crash after');
$c->signal_brokers('KILL', 1 .. 3);
MqCluster::crash_servers($c->coord, map { $c->node($_) } 1 .. 3);
my $t_crash = time;
my $acked = grep { $_->{kind} eq 'ack' } @{ MqCluster::producer_lines($p->{file}) };
note("all servers and brokers killed after $acked acknowledged batches");
$_->start for $c->coord, map { $c->node($_) } 1 .. 3;

# The old leader first: it leads again with what its node kept.  The
# leader at the crash is the one the coordinator recorded: on a loaded
# machine another broker may have taken the leadership (and dropped the
# old leader from the ISR) just before the crash, after missed
# heartbeats or in the moments between the brokers' deaths, and the
# broker that led when the test began is then not electable alone.
my ($a, $epoch0) = split /\|/, $c->coord->safe_psql('postgres',
	"SELECT leader, leader_epoch FROM mq_coord.partition WHERE topic = 't' AND partition = 0");
note("broker $a led in epoch $epoch0 at the crash");
$c->start_broker($a);
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $a AND leader_epoch > $epoch0 FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	"broker $a leads again after the restart");
$c->start_broker($_) for grep { $_ != $a } 1 .. 3;
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'the followers rejoined the ISR');
$c->wait_acks($p, count => 2, since => time) or diag('no write acknowledged after the restart');
my $lines = $c->stop_producer($p);
ok(scalar(MqCluster::acks_since($lines, $t_crash)) > 0, 'writes acknowledged after the restart');
$c->check_log('t', 0, $lines, $a, grep { $_ != $a } 1 .. 3);
$c->teardown;
done_testing();
