# Replication: committed group offsets survive the leader's loss (issue
# 12).  An idempotent producer writes throughout; a consumer group reads
# the partition on whoever leads it, one transaction per poll (poll,
# commit_polled, COMMIT), and counts a commit as acknowledged only when
# mq.await_commit returned after it.  The leader's node is killed with -9
# mid-run and restarted later.  The checks, from the consumer's own
# record of what it read and what was acknowledged:
#   - no poll ever starts below a commit acknowledged before it (nothing
#     committed is re-read: the new leader has the group's offsets);
#   - no poll starts beyond what the group had read (nothing is skipped):
#     each poll also records what it read in a table of its node, in its
#     own transaction, so a poll whose COMMIT was done when the kill came,
#     but whose output never reached the consumer, still counts as read
#     (one CI run saw that: 25 to 30 read, committed and unseen);
#   - the group read every record the producer had acknowledged;
#   - at the end every replica holds the same committed offset.
# Before offsets were replicated, the new leader had none for the group,
# and the first poll after the failover started again at offset 0.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use MqCluster;

my $c = MqCluster->new(nodes => 3);
$c->start_brokers;
# what each poll read, written in the poll's transaction on its node
$c->node($_)->safe_psql('postgres', 'CREATE TABLE polled (first bigint, stop bigint)') for 1 .. 3;
$c->create_topic('t', 1, { 'replication.factor' => 3, 'min.insync.replicas' => 2 });
my $old = $c->leader('t', 0);

# the group consumer: "read FIRST END NODE TIME ACKED" per poll that
# returned records (ACKED: 1 when its commit was acknowledged)
my $file = "$c->{logprefix}group.t.0";
my $stop = "$file.stop";
my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0)
{
	open my $out, '>', $file or POSIX::_exit(1);
	$out->autoflush(1);
	while (!-e $stop)
	{
		my $l = eval { $c->leader('t', 0) } // -1;
		if ($l < 1) { usleep(50_000); next; }
		my ($ok, $res) = MqCluster::psql_cmd($c->node($l),
			"BEGIN; CREATE TEMP TABLE p ON COMMIT DROP AS SELECT msg_offset FROM mq.poll('g', 't', 50, max_wait_ms => 200); "
			  . "INSERT INTO polled SELECT min(msg_offset), max(msg_offset) + 1 FROM p HAVING count(*) > 0; "
			  . "SELECT 'rec ' || msg_offset FROM p ORDER BY msg_offset; "
			  . "SELECT 'commit ' || mq.commit_polled('g', 't'); COMMIT; "
			  . "SELECT 'acked ' || mq.await_commit(5000);", 10);
		my @recs = $res =~ /^rec (\d+)$/mg;
		if (!@recs) { usleep(20_000) unless $ok; next; }
		printf $out "read %d %d %d %.3f %d\n", $recs[0], $recs[-1] + 1, $l, time,
		  ($ok && $res =~ /^acked \d+$/m) ? 1 : 0;
	}
	close $out;
	POSIX::_exit(0);
}
$c->{children}{$pid} = 1;

sub reads
{
	my @r;
	for (split /\n/, -e $file ? slurp_file($file) : '')
	{
		my @f = split / /;
		push @r, { first => $f[0 + 1], end => $f[2], node => $f[3], at => $f[4], acked => $f[5] }
		  if @f == 6 && $f[0] eq 'read';
	}
	return @r;
}

sub wait_reads
{
	my (%opt) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my @got = grep { $_->{acked} && $_->{at} >= ($opt{since} // 0)
			  && (!defined $opt{node} || $_->{node} == $opt{node}) } reads();
		return 1 if @got >= ($opt{count} // 1);
		usleep(20_000);
	}
	diag('gave up waiting for acknowledged group commits');
	return 0;
}

my $p = $c->start_producer('t', 0);
wait_reads(count => 5) or diag('the group committed nothing');

my $t_kill = time;
$c->kill9_node($old);
note("killed node$old (the leader) at $t_kill");
$c->coord->poll_query_until('postgres',
	"SELECT leader <> $old FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('no new leader');
my $new = $c->leader('t', 0);
wait_reads(count => 5, since => $t_kill, node => $new) or diag('the group made no progress on the new leader');
$c->node($old)->start;
$c->coord->poll_query_until('postgres',
	"SELECT isr @> ARRAY[$old] FROM mq_coord.partition WHERE topic = 't' AND partition = 0")
  or diag('the old leader did not rejoin the ISR');
wait_reads(count => 3, since => time) or diag('no progress after the rejoin');
my $lines = $c->stop_producer($p);
# let the group read what was acknowledged, then stop it
my $produced = $c->node($c->leader('t', 0))->safe_psql('postgres',
	"SELECT high_watermark FROM mq.replica_status WHERE topic = 't' AND partition = 0");
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
usleep(20_000) while time < $deadline && !grep { $_->{acked} && $_->{end} >= $produced } reads();
open my $fh, '>', $stop;
close $fh;
waitpid($pid, 0);
delete $c->{children}{$pid};

my @reads = reads();
# every poll that committed, seen by the consumer or not (the killed node is back)
my @committed = map { [ split /\|/ ] } map { split /\n/, $c->node($_)->safe_psql('postgres', 'SELECT first, stop FROM polled') } 1 .. 3;
my ($acked, $read_end, @reread, @skipped) = (0, 0);
my $across = 0;
for my $r (@reads)
{
	push @reread, "poll from $r->{first} after commit $acked was acknowledged" if $r->{first} < $acked;
	# a committed poll the consumer never saw read from where it stood
	$read_end = $_->[1] for grep { $_->[0] == $read_end && $_->[1] == $r->{first} } @committed;
	push @skipped, "poll from $r->{first} after reading up to $read_end" if $r->{first} > $read_end;
	$across++ if $r->{at} > $t_kill && $r->{node} != $old && $acked > 0 && $r->{first} >= $acked;
	$read_end = $r->{end} if $r->{end} > $read_end;
	$acked = $r->{end} if $r->{acked} && $r->{end} > $acked;
}
ok(scalar(grep { $_->{acked} && $_->{at} < $t_kill } @reads) > 0, 'commits were acknowledged before the kill');
is(join('; ', @reread), '', 'no poll re-read records below an acknowledged commit (the new leader had the offsets)');
is(join('; ', @skipped), '', 'no poll skipped records');
ok($across > 0, "the group went on from its acknowledged position on the new leader ($across polls)");
cmp_ok($read_end, '>=', $produced, "the group read every acknowledged record ($read_end >= $produced)");

# every replica ends with the leader's committed offset, which is at
# least the last acknowledged one
my $leader = $c->leader('t', 0);
my $final = $c->node($leader)->safe_psql('postgres', "SELECT next_offset FROM mq.consumer_offset WHERE group_id = 'g'");
cmp_ok($final, '>=', $acked, "the leader's committed offset ($final) is at least the last acknowledged ($acked)");
for my $i (grep { $_ != $leader } 1 .. 3)
{
	ok($c->node($i)->poll_query_until('postgres',
			"SELECT next_offset FROM mq.consumer_offset WHERE group_id = 'g'", $final),
		"node$i holds the leader's committed offset");
}
$c->check_log('t', 0, $lines, $leader, grep { $_ != $leader } 1 .. 3);
$c->teardown;
done_testing();
