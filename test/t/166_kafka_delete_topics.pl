# Deleting a replicated topic (docs/replication.md, "Deleting a topic";
# docs/kafka.md, "Replicated clusters"): Kafka's DeleteTopics at one
# daemon deletes a topic of replication factor 3 on the coordinator, every
# live broker drops its node's copy (the topic, its log tables, its
# committed offsets), Metadata and Produce answer
# UNKNOWN_TOPIC_OR_PARTITION, and the broker that was down during the
# deletion drops its copy when it is back; SQL's mq_coord.delete_topic
# does the same, and the name created again right away starts empty at
# offset 0 on every replica, also on the node whose broker was paused
# through it with the old incarnation's records (it drops them, then
# follows).  Before, DeleteTopics answered TOPIC_DELETION_DISABLED and
# there was no mq_coord.delete_topic.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../kafka";
use KafkaWire qw(kafka_connect kafka_request);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $c = MqCluster->new(nodes => 3);
# clients without SASL act as the daemons' role: it may write and read every topic
$c->start_kafka_brokers(transactions => 1);
my $role = $MqCluster::BROKER_ROLE;
my $cfg = { 'replication.factor' => 3, 'min.insync.replicas' => 2 };

# DeleteTopics v1 of one topic at broker $i's daemon: "name error_code"
sub delete_topic
{
	my ($i, $topic) = @_;
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$i]), 'tap', 20, 1,
		pack('l> n/a* l>', 1, $topic, 20000), 0, 30);
	my ($n, $name, $code) = defined $r ? unpack('x4 x4 l> n/a* s>', $r) : ();
	return join(' ', $name // 'none', $code // 'none');
}

# Metadata's error code for a topic at broker $i's daemon, once it is
# $want (each daemon's view of the cluster follows within its refresh, as a
# Kafka broker's metadata follows the controller's): the last one after 30 s
sub metadata_error_becomes
{
	my ($i, $topic, $want) = @_;
	my $deadline = time + 30;
	my $code = metadata_error($i, $topic);
	while ($code ne $want && time < $deadline)
	{
		usleep(100_000);
		$code = metadata_error($i, $topic);
	}
	return $code;
}

# Metadata v4 of one topic at broker $i's daemon, no auto-creation: its error code
sub metadata_error
{
	my ($i, $topic) = @_;
	my $r = kafka_request(kafka_connect($c->{kafka_port}[$i]), 'tap', 3, 4, pack('l> n/a* C', 1, $topic, 0));
	return 'none' unless defined $r;
	my $off = 8;    # correlation id, throttle
	my $nb = unpack('l>', substr($r, $off, 4));
	$off += 4;
	for (1 .. $nb)
	{
		$off += 4 + 2 + unpack('n', substr($r, $off + 4, 2)) + 4;    # id, host, port
		my $rack = unpack('s>', substr($r, $off, 2));
		$off += 2 + ($rack > 0 ? $rack : 0);
	}
	my $cluster = unpack('s>', substr($r, $off, 2));
	$off += 2 + ($cluster > 0 ? $cluster : 0) + 4 + 4;    # cluster id, controller, topic count
	return unpack('s>', substr($r, $off, 2));
}

# one Produce v3 acks=all of $value to partition 0 at broker $i's daemon:
# "error_code base_offset", sent again while NOT_LEADER_OR_FOLLOWER
sub produce
{
	my ($i, $topic, $value) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my $out = `perl $root/test/kafka/produce_acks.pl $c->{kafka_port}[$i] $topic -1 $value 2>&1`;
		chomp $out;
		return $out if $out ne '6 -1' || time > $deadline;
		usleep(100_000);
	}
}

# the topic's id on node $i (undef without it)
sub topic_id
{
	my ($i, $topic) = @_;
	my $id = $c->node($i)->safe_psql('postgres', "SELECT topic_id FROM mq.topic WHERE topic_name = '$topic'");
	return $id eq '' ? undef : $id;
}

# wait until node $i holds no topic of id $id (ids are never used again),
# no log table and no committed offset of it
sub dropped
{
	my ($i, $id) = @_;
	return 0 unless defined $id;    # the node never had it: nothing to see dropped
	return $c->node($i)->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT 1 FROM mq.topic WHERE topic_id = $id) "
		  . "AND NOT EXISTS (SELECT 1 FROM pg_class WHERE relnamespace = 'mq_log'::regnamespace "
		  . "AND (relname = 'topic_$id' OR relname LIKE 'topic\\_${id}\\_%')) "
		  . "AND NOT EXISTS (SELECT 1 FROM mq.consumer_offset WHERE topic_id = $id)");
}

sub log_end_everywhere
{
	my ($topic, $end) = @_;
	for my $i (1 .. 3)
	{
		return 0 unless $c->node($i)->poll_query_until('postgres',
			"SELECT log_end_offset = $end FROM mq.partitions WHERE topic = '$topic' AND partition = 0");
	}
	return 1;
}

# whether broker $i holds its liveness lock ($want: 1 or 0)
sub broker_locked
{
	my ($i, $want) = @_;
	return $c->coord->poll_query_until('postgres',
		"SELECT count(*) = $want FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
		  . "AND classid = mq_coord.broker_lock_class()::oid AND objid = $i");
}

# --- the right to delete, checked at the daemon asked ---------------------

$c->create_topic('da', 1, { 'replication.factor' => 2 });
ok($c->wait_caught_up('da'), 'a topic of replication factor 2 is placed and led');
my %replica = map { $_ => 1 } split /,/, $c->replicas('da', 0);
my ($outside) = grep { !$replica{$_} } 1 .. 3;
is(delete_topic($outside, 'da'), 'da 29',
	'DeleteTopics without the right to delete: TOPIC_AUTHORIZATION_FAILED');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'da'"), '1',
	'and the topic stays');
$c->node($_)->safe_psql('postgres', "SELECT mq.grant('delete', 'topic', '*', '$role')") for 1 .. 3;
my %da = map { $_ => topic_id($_, 'da') } keys %replica;
is(delete_topic($outside, 'da'), 'da 0', 'with it, at a daemon whose node holds no replica, the topic is deleted');
ok(!grep({ !dropped($_, $da{$_}) } keys %replica), 'and both replicas\' nodes drop it');

# --- DeleteTopics, with broker 3 down ------------------------------------

$c->create_topic('dk', 2, $cfg);
ok($c->wait_caught_up('dk'), 'a topic of replication factor 3 is led, every follower caught up');
my $leader = $c->leader('dk', 0);
is(produce($leader, 'dk', 'k0'), '0 0', 'Produce acks=all at the leader\'s daemon is acknowledged');
$c->node($leader)->safe_psql('postgres',
	"CALL mq.produce('dk', NULL, ARRAY['k1', 'k2']::bytea[], 0, 'all'); SELECT mq.commit_offset('g', 'dk', 0, 2)");
ok(log_end_everywhere('dk', 3), 'every replica has the three records');
my %id = map { $_ => topic_id($_, 'dk') } 1 .. 3;

$c->signal_broker(3, 'TERM');
ok(broker_locked(3, 0), 'broker 3 is stopped');
is(delete_topic(1, 'dk'), 'dk 0', 'DeleteTopics at broker 1\'s daemon deletes the replicated topic');
is($c->coord->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM mq_coord.topic WHERE topic = 'dk') + "
		  . "(SELECT count(*) FROM mq_coord.partition WHERE topic = 'dk')"),
	'0', 'the coordinator has neither the topic nor its partitions');
ok(dropped(1, $id{1}) && dropped(2, $id{2}),
	'brokers 1 and 2 drop their nodes\' copies: topic, log tables and committed offsets');
is(topic_id(3, 'dk'), $id{3}, 'node 3, whose broker is down, still has its copy');
is(metadata_error_becomes($_, 'dk', 3), 3, "Metadata at broker $_\'s daemon: UNKNOWN_TOPIC_OR_PARTITION") for 1, 2;
is(produce(1, 'dk', 'late'), '3 -1', 'Produce: UNKNOWN_TOPIC_OR_PARTITION');
is(delete_topic(2, 'dk'), 'dk 3', 'DeleteTopics of it again: UNKNOWN_TOPIC_OR_PARTITION');

$c->start_kafka_brokers(brokers => [3]);
ok(dropped(3, $id{3}), 'broker 3, back, drops its node\'s copy');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.topic WHERE topic = 'dk'"), '0',
	'and does not bring the topic back');
is(metadata_error_becomes(3, 'dk', 3), 3, 'Metadata at broker 3\'s daemon: UNKNOWN_TOPIC_OR_PARTITION');

# --- SQL, and the name created again at once, broker 3 paused ------------

$c->create_topic('ds', 1, $cfg);
ok($c->wait_caught_up('ds'), 'a second topic, every follower caught up');
$leader = $c->leader('ds', 0);
$c->node($leader)->safe_psql('postgres', "CALL mq.produce('ds', NULL, ARRAY['o0', 'o1', 'o2']::bytea[], 0, 'all')");
ok(log_end_everywhere('ds', 3), 'every replica has the old incarnation\'s three records');
my $old_epoch = $c->coord->safe_psql('postgres', "SELECT leader_epoch FROM mq_coord.partition WHERE topic = 'ds'");
%id = map { $_ => topic_id($_, 'ds') } 1 .. 3;

$c->signal_broker(3, 'STOP');
$c->coord->safe_psql('postgres',
	"SELECT mq_coord.delete_topic('ds'); "
	  . "SELECT mq_coord.create_topic('ds', 1, '{\"replication.factor\": 3, \"min.insync.replicas\": 2}')");
ok(dropped(1, $id{1}) && dropped(2, $id{2}), 'mq_coord.delete_topic: brokers 1 and 2 drop the old copy');
ok($c->coord->poll_query_until('postgres',
		"SELECT leader IN (1, 2) FROM mq_coord.partition WHERE topic = 'ds' AND partition = 0"),
	'the new incarnation gets a leader among the running brokers');
cmp_ok($c->coord->safe_psql('postgres', "SELECT leader_epoch FROM mq_coord.partition WHERE topic = 'ds'"),
	'>', $old_epoch, 'in an epoch above the old incarnation\'s');
$leader = $c->leader('ds', 0);
ok($c->node($leader)->poll_query_until('postgres',
		"SELECT log_start_offset = 0 AND log_end_offset = 0 FROM mq.partitions WHERE topic = 'ds'"),
	'the new leader starts empty at offset 0');
$c->node($leader)->safe_psql('postgres', "CALL mq.produce('ds', NULL, ARRAY['n0']::bytea[], 0, 'all')");
is(topic_id(3, 'ds'), $id{3}, 'node 3 still holds the old incarnation while its broker is paused');

$c->signal_broker(3, 'CONT');
ok(broker_locked(3, 1), 'broker 3 is back');
ok($c->wait_caught_up('ds'), 'and caught up in the new incarnation');
ok(log_end_everywhere('ds', 1), 'every replica has the one record of the new incarnation');
for my $i (1 .. 3)
{
	my $tid = topic_id($i, 'ds');
	is($c->node($i)->safe_psql('postgres',
			"SELECT string_agg(msg_offset || ':' || convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) "
			  . "FROM mq_log.topic_$tid"),
		'0:n0', "node $i: its log holds the new record at offset 0, no old one");
}
isnt(topic_id(3, 'ds'), $id{3}, 'node 3 dropped its old copy and created the topic afresh');

$c->teardown;
done_testing();
