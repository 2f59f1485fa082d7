# A Kafka consumer's fetch parked in mq-kafka wakes when the high
# watermark of a replicated partition moves (broker/mq-kafka/
# fetch_watch.c, docs/kafka.md "Fetch"): the record becomes readable only
# when the follower's fetch advances the high watermark on the leader,
# which is not a Produce through the daemon, and the daemon's recheck is
# set to a minute.  A raw Fetch v4 waiting up to 60 s gets the record
# produced with acks=all through SQL on the leader well before that.
#
# Two nodes, RF 2, min ISR 2: the high watermark needs the follower.
use strict;
use warnings;

use IO::Socket::INET;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MqCluster;

my $root = $ENV{MQ_REPO_ROOT} // '.';
my $dir = PostgreSQL::Test::Utils::tempdir();
# the daemon with its safety-net recheck set to a minute
my $prog = "$dir/mq-kafka-slow-recheck";
open(my $fh, '>', $prog) or die $!;
print $fh "#!/bin/sh\nexec $root/broker/mq-kafka/mq-kafka --recheck-ms=60000 \"\$@\"\n";
close $fh;
chmod 0755, $prog;

my $c = MqCluster->new(nodes => 2);
$c->start_kafka_brokers(program => $prog);
$c->create_topic('hw', 1, { 'replication.factor' => 2, 'min.insync.replicas' => 2 });
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 2 FROM mq_coord.partition WHERE topic = 'hw' AND partition = 0"),
	'both replicas in the ISR');
my $a = $c->leader('hw', 0);

# Fetch v4 of hw/0 from offset 0: max_wait 60 s, min_bytes 1
my ($host, $port) = split /:/, $c->kafka_address($a);
my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Proto => 'tcp', Timeout => 10)
  or die "connect: $!";
my $body = pack('s> s> l> s>/a*', 1, 4, 7, 'tap')
  . pack('l> l> l> l> c', -1, 60000, 1, 1 << 20, 0)
  . pack('l> s>/a* l> l> q> l>', 1, 'hw', 1, 0, 0, 1 << 20);
print $sock pack('l>/a*', $body);
my $sent = time;

# the daemon parks it (nothing to read yet), which starts its watch on
# the leader's node; then a record, acks=all
ok($c->node($a)->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE state = 'active'"
		  . " AND query LIKE '%mq._await_partitions%' AND pid <> pg_backend_pid()"),
	'the fetch parked: the daemon waits in mq._await_partitions');
$c->node($a)->safe_psql('postgres', "CALL mq.produce('hw', NULL, ARRAY['x']::bytea[], 0, 'all')");

$sock->blocking(1);
my $len = '';
read($sock, $len, 4) == 4 or die 'no response';
my $resp = '';
read($sock, $resp, unpack('l>', $len)) or die 'short response';
my $took = time - $sent;
my ($corr, $throttle, $ntopics, $topic, $nparts, $p, $err, $hw, $lso, $naborted, $records) =
  unpack('l> l> l> s>/a* l> l> s> q> q> l> l>/a*', $resp);
is($err, 0, 'the fetch is answered without error');
is($hw, 1, 'with the high watermark the follower moved');
ok(length($records // '') > 0, 'and the record');
ok($took < 30, sprintf('before its 60 s wait ran out, the recheck being a minute (%.1f s)', $took));

done_testing();
