# mq-broker's watchdog over its mq-kafka ([kafka] watchdog.ms, here 3 s):
# the audit's hung daemon.  The mq-kafka of the node leading a partition
# is stopped (SIGSTOP) while its PostgreSQL and mq-broker stay healthy,
# so the cluster still names it (leadership is mq-broker's) and clients
# keep sending it requests: a producer that bootstraps through the other
# daemon sends its Produce to the stopped one, times out and gives up.
# mq-broker must notice that the daemon's loop no longer turns (no
# heartbeat on its pipe), kill it with SIGKILL and start a new one on the
# same port; so within 3 times the timeout of the stop:
#   - the stopped process is gone, and the broker logged why;
#   - a new mq-kafka serves the port, and a Produce through it to the
#     partition is acknowledged;
#   - the stale Produce queued on the stopped daemon's socket died with
#     it: the partition holds the new record only (a daemon resumed
#     instead would have written the record its producer had given up).
# The other node's daemon, healthy, is never killed.  Without the
# watchdog the stopped daemon stays as it is and no new one starts.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MqCluster;

my $timeout_ms = 3000;
my $c = MqCluster->new(nodes => 2);
$c->start_kafka_brokers(section => "[kafka]\nlisten = 127.0.0.1:9092\nwatchdog.ms = $timeout_ms\n");
$c->create_topic('hung', 1, { 'replication.factor' => 2, 'min.insync.replicas' => 1 });
my $victim = $c->leader('hung', 0);
my $other = 3 - $victim;
my $old = $c->kafka_pid($victim);
my $healthy = $c->kafka_pid($other);
ok($old && $healthy, "each broker runs its mq-kafka (node$victim leads the partition)");

sub hwm
{
	return $c->node($victim)->safe_psql('postgres',
		"SELECT high_watermark FROM mq.partitions WHERE topic = 'hung' AND partition = 0");
}

# one record to partition 0 with kcat; its exit status (0: acknowledged)
sub kcat_produce
{
	my ($bootstrap, $value, @conf) = @_;
	my $cmd = join ' ', 'timeout 30 kcat -P -b', $bootstrap, '-t hung -p 0', (map { "-X $_" } @conf),
	  "2>>$PostgreSQL::Test::Utils::log_path/163_kcat.err";
	open(my $in, '|-', $cmd) or die "kcat: $!";
	print $in "$value\n";
	close $in;
	return $? >> 8;
}

my $before = hwm();
kill 'STOP', $old;
my $stopped_at = time;
note("stopped mq-kafka pid $old of node$victim");

# the audit's client: Metadata from the healthy daemon names the stopped
# one as the leader, so the Produce goes there (straight away: no
# ApiVersions first), and is given up after 2 s, before the watchdog fires
isnt(kcat_produce($c->kafka_address($other), 'stale', 'api.version.request=false',
		'broker.version.fallback=2.1.0', 'message.timeout.ms=2000', 'acks=1'),
	0, 'a Produce to the stopped daemon is not acknowledged');

# the broker kills the daemon and starts another (a condition, not a sleep)
my $deadline = $stopped_at + 6 * $timeout_ms / 1000;
my $new;
while (time < $deadline)
{
	$new = $c->kafka_pid($victim);
	last if $new != $old && !MqCluster::pid_alive($old);
	usleep(50_000);
}
my $killed_at = time;
isnt($new, $old, 'mq-broker started a new mq-kafka');
ok(!MqCluster::pid_alive($old), 'the stopped mq-kafka is gone');
like($c->broker_log($victim), qr/mq-kafka \(pid $old\) has not turned its loop for [\d.]+ s: killing it/,
	'the broker says why it killed it');
note(sprintf('stop to new daemon: %.2f s', $killed_at - $stopped_at));

# the new daemon serves the port: a Produce through it is acknowledged
my $served;
while (!$served && time < $deadline)
{
	$served = kcat_produce($c->kafka_address($victim), 'fresh', 'message.timeout.ms=3000') == 0;
	usleep(100_000) unless $served;
}
my $elapsed = time - $stopped_at;
ok($served, 'a Produce through the restarted daemon is acknowledged');
note(sprintf('stop to acknowledged produce: %.2f s (watchdog.ms %d)', $elapsed, $timeout_ms));
cmp_ok($elapsed, '<', 3 * $timeout_ms / 1000, 'all within 3 times the watchdog timeout');
is(hwm(), $before + 1, 'the partition holds the new record and not the stale one');

is($c->kafka_pid($other), $healthy, "node${other}'s healthy mq-kafka was never restarted");
unlike($c->broker_log($other), qr/has not turned its loop/, 'nor suspected');
kill 'CONT', $old;    # in case it still runs (a failure above)

done_testing();
