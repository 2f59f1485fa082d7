# Replication: a follower's broker appends on its node only the answers
# that bring the node something (docs/design.md, "acks=all: where a
# record's time goes").  A long poll that timed out, and the fetch that
# acknowledges an append while the high watermark stays, bring no records
# and the high watermark, log start and committed offsets the node has:
# the broker sends its next fetch at once.  Each such append was a round
# trip to the node and a transaction, in series before the long poll that
# waits for the next record.  An answer that brings only a new high
# watermark (the one that acknowledges the record) waits for the next
# answer, which carries it too: with the next record it is appended with
# it, so a run of acks=all records costs each follower one append per
# record; after the last, the long poll that runs out brings it again and
# it is appended then.  The followers hold every record and follow the
# high watermark.
#
# RF 3, min ISR 2; fetches wait at most 250 ms, so one idle second holds
# four timed-out long polls per follower.  The followers' nodes log every
# statement with its duration, so their appends are counted in their logs.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MqCluster;

my $c = MqCluster->new(nodes => 3, node_conf => "log_min_duration_statement = 0\n",
	broker_conf => "replica.fetch.wait.max.ms = 250\n");
$c->start_brokers;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $a = $c->leader('t', 0);
my @f = grep { $_ != $a } 1 .. 3;
ok($c->coord->poll_query_until('postgres',
		"SELECT cardinality(isr) = 3 FROM mq_coord.partition WHERE topic = 't' AND partition = 0"),
	'all three replicas in the ISR');

my $q_state = "SELECT log_end_offset || '/' || high_watermark FROM mq.replica_status "
  . "WHERE topic = 't' AND partition = 0";
sub produce
{
	$c->node($a)->safe_psql('postgres', "CALL mq.produce('t', NULL, ARRAY['x']::bytea[], 0, 'all')");
}
# the appends a follower's node ran so far (its log: one duration line each)
sub appends
{
	my ($i) = @_;
	my $log = slurp_file($c->node($i)->logfile);
	my $n = () = $log =~ /duration: [0-9.]+ ms  (?:execute [^:]*|statement): SELECT mq\.replica_append/g;
	return $n;
}
sub followed
{
	my ($want) = @_;
	for my $i (@f)
	{
		return 0 unless $c->node($i)->poll_query_until('postgres', $q_state, $want);
	}
	return 1;
}

produce() for 1 .. 2;
ok(followed('2/2'), 'both followers hold the records and the high watermark 2');
my %before = map { $_ => appends($_) } @f;
ok($before{ $f[0] } > 0 && $before{ $f[1] } > 0,
	"their appends are counted in their logs ($before{ $f[0] }, $before{ $f[1] })");

# idle: every long poll times out after 250 ms with nothing new (the one
# fixed wait, for something that must not happen)
usleep(1_200_000);
for my $i (@f)
{
	is(appends($i) - $before{$i}, 0, "node$i: no append while its broker's long polls time out idle");
}

# a record: appended, and the high watermark that acknowledges it too
%before = map { $_ => appends($_) } @f;
produce();
ok(followed('3/3'), 'both followers hold the new record and follow the high watermark to 3');
for my $i (@f)
{
	my $n = appends($i) - $before{$i};
	ok($n >= 1 && $n <= 3, "node$i: $n appends for one record (the record, the high watermark at most twice)");
}

# a run of acks=all records from one session (each well within a long
# poll): one append per record and follower, and the high watermark's
# after the last.  Appending each record's high watermark on its own made
# it 3 per record for the two followers together, 4 with the follower
# whose long poll a new high watermark ended.
my $n = 30;
%before = map { $_ => appends($_) } @f;
$c->node($a)->safe_psql('postgres',
	join('', map { "CALL mq.produce('t', NULL, ARRAY['r$_']::bytea[], 0, 'all');\n" } 1 .. $n));
my $end = 3 + $n;
ok(followed("$end/$end"), "both followers hold the $n records and follow the high watermark to $end");
my $sum = 0;
$sum += appends($_) - $before{$_} for @f;
ok($sum >= 2 * $n && $sum <= 2 * $n + 6,
	"$sum appends on the two followers for $n acks=all records (at most " . (2 * $n + 6) . ')');

done_testing();
