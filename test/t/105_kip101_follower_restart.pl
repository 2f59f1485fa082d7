# Replication: KIP-101 scenario 1.  A follower restarts right after a
# fetch, while its own high watermark is still below records the leader
# has already acknowledged (the follower learns the high watermark only
# from its next fetch), and then the leader dies, so that the follower
# becomes the leader.  A follower that truncated to its high watermark on
# restart (Kafka before KIP-101) would lose those acknowledged records;
# mq's follower never truncates without asking a leader (leader-epoch
# truncation), so they survive.
#
# The nodes run with synchronous_commit = off and a 10 s wal_writer_delay,
# so an immediate stop loses whatever WAL was not flushed: a follower that
# acknowledged records (by fetching beyond them) before they were durable
# on its node would lose them here.  The broker's appends are committed
# with a local flush whatever the server's default, so none are lost.
#
# RF 3, min ISR 2.  The third replica is down during the scenario so that
# the restarted follower is the only replica left that can be elected.
# While the follower's broker waits on the held row lock it neither fetches
# nor heartbeats, so replica.lag.time.max.ms, session.timeout.ms and
# node.timeout.ms are long enough (60, 10 and 20 s) that the leader keeps
# it in the ISR through the scenario however slow the machine: with the
# defaults (3 s of session), a loaded CI machine once let the leader drop
# it ("its broker is not live") before the leader was frozen, and the
# follower, no longer in the ISR, could not be elected.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use MqCluster;

my $c = MqCluster->new(nodes => 3, lag_time_max_ms => 60_000,
	node_conf => "synchronous_commit = off\nwal_writer_delay = 10000ms\n",
	broker_conf => "[broker]\nsession.timeout.ms = 10000\nnode.timeout.ms = 20000\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $a = $c->leader('t', 0);    # the leader
my ($b, $x) = grep { $_ != $a } 1 .. 3;    # the follower that restarts, the third replica
my ($na, $nb) = ($c->node($a), $c->node($b));

my $p = $c->start_producer('t', 0);
my $r = $c->start_consumer('t', 0);
$c->wait_acks($p, count => 3) or diag('the producer made no progress');
$c->wait_consumed($r) or diag('the consumer read nothing');

# The third replica goes away first: the ISR is the leader and b.
$c->kill9_node($x);
ok($c->coord->poll_query_until('postgres',
		"SELECT isr = ARRAY[$a, $b] OR isr = ARRAY[$b, $a] FROM mq_coord.partition "
		  . "WHERE topic = 't' AND partition = 0"),
	"replica $x left the ISR");
my $t_shrunk = time;
# the leader acknowledges with the ISR {a, b}
$c->wait_acks($p, count => 2, since => $t_shrunk)
  or diag("no write acknowledged after replica $x left the ISR");

# Catch b right after a fetch.  b's high watermark lags by one fetch: the
# fetch that brings records carries the high watermark as it was before
# them; the next fetch (whose offset acknowledges them) returns the new
# one, which b's broker stores with its next append.  A session on b's node
# holds the partition's row lock, so that this store waits: b keeps the
# records, the leader acknowledges them, and b's high watermark stays
# below them, as long as we like.
my $q_b = "SELECT log_end_offset || ' ' || high_watermark FROM mq.replica_status "
  . "WHERE topic = 't' AND partition = 0";
my $q_a = "SELECT g.log_end_offset || ' ' || p.high_watermark FROM mq.replica_progress g "
  . "JOIN mq.partition_state p USING (topic_id, partition) JOIN mq.topic t USING (topic_id) "
  . "WHERE t.topic_name = 't' AND g.partition = 0 AND g.replica_id = $b";
my $holder = fork();
die "fork: $!" unless defined $holder;
if ($holder == 0)
{
	# holds the lock until node b is killed below (pg_sleep is the holding,
	# not a wait)
	MqCluster::psql_cmd($nb, "BEGIN; SELECT 1 FROM mq.partition_state p JOIN mq.topic t USING (topic_id) "
		  . "WHERE t.topic_name = 't' AND p.partition = 0 FOR UPDATE OF p; SELECT pg_sleep(60)", 60);
	POSIX::_exit(0);
}
# in pg_sleep: the row is locked (while the holder still waits for it, an
# append in progress can move the follower's log end after it is read)
$nb->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE OF p%' AND state = 'active' "
	  . "AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()")
  or die 'the lock holder did not start';
my ($b_leo, $b_hwm) = split / /, $nb->safe_psql('postgres', $q_b);
ok($na->poll_query_until('postgres', "SELECT split_part(($q_a), ' ', 1)::bigint > $b_hwm"),
	'the leader recorded a fetch offset above the follower\'s high watermark');
# the producer hears the acknowledgement of records above b's high watermark
$c->wait_acks($p, where => sub { $_->{base} + 5 > $b_hwm })
  or diag("no acknowledgement above the follower's high watermark $b_hwm");
($b_leo, $b_hwm) = split / /, $nb->safe_psql('postgres', $q_b);
my ($a_saw, $a_hwm) = split / /, $na->safe_psql('postgres', $q_a);
note("follower $b: log end $b_leo, high watermark $b_hwm; the leader's record of its fetch offset "
	  . "$a_saw, the leader's high watermark $a_hwm");

# The leader's broker freezes (it can no longer shrink the ISR), the
# follower restarts (broker killed, node stopped immediately and started),
# then the leader's node and broker die.
$c->signal_broker($a, 'STOP');
ok($c->coord->safe_psql('postgres',
		"SELECT $b = ANY (isr) FROM mq_coord.partition WHERE topic = 't' AND partition = 0") eq 't',
	"follower $b is still in the ISR when the leader's broker freezes");
$c->signal_broker($b, 'KILL');
$c->kill9_node($b);
waitpid($holder, 0);
$nb->start;
is($nb->safe_psql('postgres', $q_b), "$b_leo $b_hwm",
	"after its restart follower $b still has its log end $b_leo and high watermark $b_hwm");
my $t_dead = time;
$c->kill9_node($a);
$c->signal_broker($a, 'KILL');
note("follower $b restarted; leader $a dead");
$c->start_broker($b);
ok($c->coord->poll_query_until('postgres',
		"SELECT leader = $b FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	"the restarted follower $b was elected leader");
like($c->wait_broker_log($b, qr/elected leader in epoch/),
	qr/elected leader in epoch \d+ \(previous leader $a, ISR \{[\d,]+\}, log end $b_leo\)/,
	"it leads with its whole log ($b_leo records), not truncated to its high watermark $b_hwm");

# Everyone else comes back and follows b.
$na->start;
$c->start_broker($a);
$c->node($x)->start;
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'both other replicas rejoined the ISR');
$c->wait_acks($p, since => time) or diag('no write acknowledged after the rejoin');
my $lines = $c->stop_producer($p);
$c->stop_consumer($r);

my $batch = 5;
my @above = grep { $_->{kind} eq 'ack' && $_->{base} + $batch > $b_hwm && $_->{at} < $t_dead } @$lines;
ok(@above > 0, 'records above the follower\'s high watermark had been acknowledged ('
	  . join(' ', map { "$_->{base}.." . ($_->{base} + $batch - 1) } @above) . ')');
ok(scalar(MqCluster::acks_since($lines, $t_dead)) > 0, "writes acknowledged by the new leader $b");

$c->check_log('t', 0, $lines, $b, $a, $x);
$c->teardown;
done_testing();
