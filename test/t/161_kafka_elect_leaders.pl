# ElectLeaders through the Kafka protocol (docs/replication.md, "Preferred
# leaders"; kafka-leader-election.sh's request) at a daemon of a
# three-node cluster whose brokers never rebalance leaders by themselves
# (auto.leader.rebalance.enable = false).  Without ALTER on the cluster
# the client is refused.  With it: every partition led by its preferred
# replica needs no election; an unknown partition is unknown.  After a
# broker is killed and comes back in the ISR, its partition stays with
# the broker that took it over, until a preferred election of every
# partition (null topic_partitions) gives it back, answered once done and
# naming that partition alone, as Kafka's controller does.  A partition
# whose preferred broker is stopped is PREFERRED_LEADER_NOT_AVAILABLE; an
# unclean election of a partition with a leader is not needed.  mqctl
# leader-election does the same from the command line: not available
# while that broker is down, elected once it is back in the ISR.
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $c = MqCluster->new(nodes => 3, broker_conf => "auto.leader.rebalance.enable = false\n");
$c->start_kafka_brokers;
$c->create_topic('el', 3, { 'replication.factor' => 3, 'min.insync.replicas' => 1 });
ok($c->wait_preferred_leaders('el'), 'each partition is led by its preferred replica');
my %pref = map { split /\|/ } split /\n/,
  $c->coord->safe_psql('postgres', "SELECT partition, replicas[1] FROM mq_coord.partition WHERE topic = 'el'");

# ElectLeaders v1 at broker 2's daemon: "error; topic:partition=code ..."
sub elect
{
	my ($type, $timeout, @parts) = @_;
	my ($port) = $c->kafka_address(2) =~ /:(\d+)$/;
	my $out = `PYTHONPATH=$root/test/kafka/py /usr/bin/python3 $root/test/kafka/py/elect.py $port $type $timeout @parts`;
	my $j = eval { decode_json($out) } or return "no answer: $out";
	return "$j->{error};" . join(' ', map { "$_->[0]:$_->[1]=$_->[2]" } sort { $a->[1] <=> $b->[1] } @{ $j->{results} });
}

is(elect(0, 5000, 'el:0'), '31;el:0=31', 'without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED');
$c->node(2)->safe_psql('postgres', "SELECT mq.grant('alter', 'cluster', 'kafka-cluster', '$MqCluster::BROKER_ROLE')");
is(elect(0, 5000, 'el:0', 'el:1', 'el:2', 'el:9'), '0;el:0=84 el:1=84 el:2=84 el:9=3',
	'preferred: ELECTION_NOT_NEEDED where the preferred replica leads, UNKNOWN_TOPIC_OR_PARTITION for a partition el lacks');
is(elect(0, 5000), '0;', 'every partition (null): none needed an election, none listed');
is(elect(1, 5000, 'el:0', 'el:1'), '0;el:0=84 el:1=84', 'unclean: ELECTION_NOT_NEEDED where a leader leads');

# broker 1 dies: another takes its partition; back in the ISR it does not lead it
my ($p1) = grep { $pref{$_} == 1 } keys %pref;
$c->signal_broker(1, 'KILL');
$c->coord->poll_query_until('postgres',
	"SELECT leader IS NOT NULL AND leader <> 1 FROM mq_coord.partition WHERE topic = 'el' AND partition = $p1")
  or diag('partition el:' . $p1 . ' still led by broker 1');
$c->start_kafka_brokers(brokers => [1]);
$c->coord->poll_query_until('postgres',
	"SELECT 1 = ANY (isr) FROM mq_coord.partition WHERE topic = 'el' AND partition = $p1")
  or diag('broker 1 is not back in the ISR');
isnt($c->leader('el', $p1), 1, "el:$p1 is led by another broker after broker 1 came back (no automatic rebalance)");
is(elect(0, 10000), "0;el:$p1=0", "every partition (null): el:$p1 elected, the others not listed");
is($c->leader('el', $p1), 1, "broker 1, its preferred replica, leads el:$p1 again once answered");
like($c->coord->safe_psql('postgres',
	"SELECT string_agg(kind, ',' ORDER BY event_id) FROM mq_coord.event WHERE topic = 'el' AND partition = $p1"),
	qr/preferred_election_requested,leader_elected$/, 'the coordinator recorded the request, then the election');

# broker 3 stops: its partition moves, and its preferred replica is not available
my ($p3) = grep { $pref{$_} == 3 } keys %pref;
$c->signal_broker(3, 'TERM');
$c->coord->poll_query_until('postgres',
	"SELECT leader IS NOT NULL AND leader <> 3 FROM mq_coord.partition WHERE topic = 'el' AND partition = $p3")
  or diag('partition el:' . $p3 . ' still led by broker 3');
is(elect(0, 5000, "el:$p3"), "0;el:$p3=80", 'the preferred broker down: PREFERRED_LEADER_NOT_AVAILABLE');
is(elect(1, 5000, "el:$p3"), "0;el:$p3=84", 'unclean with a leader: ELECTION_NOT_NEEDED');

# mqctl leader-election asks the coordinator the same
sub mqctl_elect
{
	my ($rc, $out) = $c->mqctl('leader-election', @_, '--format=json');
	my $rows = eval { decode_json($out) } or return "$rc: $out";
	return "$rc " . join(' ', map { "$_->{topic}:$_->{partition}=$_->{result}" } @$rows);
}
is(mqctl_elect("el:$p3"), "1 el:$p3=not available", 'mqctl leader-election: not available, exit status 1');
$c->start_kafka_brokers(brokers => [3]);
$c->coord->poll_query_until('postgres',
	"SELECT 3 = ANY (isr) FROM mq_coord.partition WHERE topic = 'el' AND partition = $p3")
  or diag('broker 3 is not back in the ISR');
isnt($c->leader('el', $p3), 3, "el:$p3 stays with the broker that took it over");
is(mqctl_elect("el:$p3", 'el:9', '--timeout-ms=20000'), "1 el:$p3=elected el:9=unknown",
	'mqctl leader-election: elected, an unknown partition unknown (exit status 1)');
is($c->leader('el', $p3), 3, "broker 3 leads el:$p3 again");
is(mqctl_elect('--all-topic-partitions'), '0 ' . join(' ', map { "el:$_=not needed" } 0 .. 2),
	'mqctl leader-election --all-topic-partitions: none needed, exit status 0');

done_testing();
