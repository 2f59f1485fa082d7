# Exactly-once across nodes (issue 12): mqctl pipeline copies topic "in"
# (2 partitions) to topic "out" (3 partitions) on a 3-node cluster, running
# an application INSERT per record on the input partition's leader and
# committing the group's offsets, each step with two-phase commit across
# the nodes it touches (docs/delivery.md, "Exactly-once in a cluster").
# The input partition, the output partitions and the offsets are led by
# different nodes.  Faults, one after the other, each while records flow:
#   a. kill -9 of an input partition's leader node (restarted);
#   b. kill -9 of an output partition's leader node (restarted), once
#      anywhere in a step and once holding a prepared output part just
#      before the decision (the client stops itself there:
#      MQCTL_PIPELINE_TEST_STOP), which the client must send again to the
#      new leader (every broker is paused until the client decides, or on a
#      slow machine recovery could roll the step back first);
#   c. the client killed between prepare and decision (it stops itself
#      there: MQCTL_PIPELINE_TEST_STOP; the brokers paused while its parts
#      are counted): recovery aborts after txn.timeout.ms and rolls every
#      part back;
#   d. the client killed right after the decision: the brokers commit the
#      outputs, report them durable, then commit the offsets part;
#   d2. the same, and the node leading an output partition of the step
#      killed before that output was known durable (its broker paused
#      from before the decision, so that it cannot commit the part first):
#      the broker of the partition's new leader sends the records the
#      decision stored again, and the step completes without its client
#      (when that node also held the input part, the input's new leader
#      commits the step's offset again); a new client waits for that
#      (MQ056), then goes on (every broker is paused from the client's
#      stop before the decision until the new client says it waits: on a
#      slow machine recovery rolled the step back or completed it first);
#   e. kill -9 of the coordinator (restarted);
#   f. kill -9 of an input leader's broker (restarted).
# The checks, independent of mq's own bookkeeping: every input record is
# in "out" exactly once (read from every replica, identical below the
# high watermark) and in the application tables of the nodes exactly once;
# at each check point during the run no committed offset is ahead of the
# outputs (every input below it has its output); at the end the offsets
# equal the input's end, no prepared transaction is left on any node and
# no decision is left unfinished.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use MqCluster;

my $c = MqCluster->new(nodes => 3, node_conf => "max_prepared_transactions = 20",
	broker_conf => "txn.timeout.ms = 3000\n");
$c->start_brokers;
my %cfg = ('replication.factor' => 3, 'min.insync.replicas' => 2);
$c->create_topic('in', 2, \%cfg);
$c->create_topic('out', 3, \%cfg);
$c->node($_)->safe_psql('postgres', 'CREATE TABLE app (v text NOT NULL, part int, off bigint)')
  for 1 .. 3;
my @lead_in = map { $c->leader('in', $_) } 0 .. 1;
my @lead_out = map { $c->leader('out', $_) } 0 .. 2;
note("leaders: in @lead_in, out @lead_out");
my %nodes = map { $_ => 1 } @lead_in, @lead_out;
cmp_ok(scalar(keys %nodes), '>=', 2, 'input and output partitions have different leaders');

# ---------------------------------------------------------------------
# input: values r1, r2, ... with keys, to partition i % 2, acks=all, with
# a cluster-wide producer id so that a retry is never written twice
my $produced = 0;
my ($in_pid) = split /\|/, $c->coord->safe_psql('postgres',
	"SELECT producer_id FROM mq_coord.init_producer('test-input')");
my @in_seq = (0, 0);
sub produce_inputs
{
	my ($n) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	for my $p (0 .. 1)
	{
		my @i = grep { $_ % 2 == $p } $produced + 1 .. $produced + $n;
		my $keys = join(',', map { "'k" . ($_ % 7) . "'" } @i);
		my $vals = join(',', map { "'r$_'" } @i);
		while (1)
		{
			my $l = $c->leader('in', $p);
			my ($ok, $out) = $l > 0
			  ? MqCluster::psql_cmd($c->node($l),
				"CALL mq.produce('in', ARRAY[$keys]::bytea[], ARRAY[$vals]::bytea[], $p, 'all', "
				  . "$in_pid, 0, $in_seq[$p], 5000)", 15)
			  : (0, 'no leader');
			if ($ok) { $in_seq[$p] += @i; last; }
			die "cannot produce inputs: $out" if time > $deadline;
			usleep(100_000);
		}
	}
	$produced += $n;
}

# the group's committed offset of an input partition, on its leader
sub committed
{
	my ($p) = @_;
	my $l = $c->leader('in', $p);
	return -1 if $l < 1;
	my ($ok, $out) = MqSession::run($c->node($l),
		"SELECT coalesce(mq.committed_offset('g', 'in', $p), 0)", 5);
	chomp $out;
	return $ok && $out =~ /^\d+$/ ? $out : -1;
}

sub processed
{
	my $sum = 0;
	for my $p (0 .. 1)
	{
		my $o = committed($p);
		return -1 if $o < 0;
		$sum += $o;
	}
	return $sum;
}

sub wait_processed
{
	my ($n, $what) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if processed() >= $n;
		usleep(100_000);
	}
	diag("gave up waiting for $n processed records ($what); at " . processed());
	return 0;
}

# values of a topic partition's log on node $i (all of it)
sub log_values
{
	my ($i, $topic, $p) = @_;
	my ($log) = $c->replica_rows($i, $topic, $p);
	return @$log;
}

# Every input below each committed offset has its output (read the
# offsets first: outputs only grow).
sub check_offsets_behind_outputs
{
	my ($when) = @_;
	my @off = map { committed($_) } 0 .. 1;
	my %out;
	for my $q (0 .. 2)
	{
		my $l = $c->leader('out', $q);
		$out{$_}++ for log_values($l, 'out', $q);
	}
	my @missing;
	for my $p (0 .. 1)
	{
		my @in = log_values($c->leader('in', $p), 'in', $p);
		push @missing, grep { !$out{$_} } @in[ 0 .. $off[$p] - 1 ];
	}
	is(scalar(@missing), 0, "$when: no committed offset ahead of its outputs (offsets @off)")
	  or diag("inputs committed without output: @missing[0 .. ($#missing < 5 ? $#missing : 5)]");
}

# ---------------------------------------------------------------------
# the pipeline client
my $mqctl = ($ENV{MQ_REPO_ROOT} // '.') . '/broker/mqctl/mqctl';
my $run = 0;
sub start_pipeline
{
	my (%env) = @_;
	$run++;
	my $log = "$c->{logprefix}pipeline$run.log";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		$ENV{$_} = $env{$_} for keys %env;
		open STDOUT, '>>', $log or POSIX::_exit(1);
		open STDERR, '>>', $log or POSIX::_exit(1);
		exec $mqctl, 'pipeline', '-d', $c->coord->connstr('postgres'), '--input', 'in',
		  '--output', 'out', '--group', 'g', '--batch-size', '20', '--timeout-ms', '5000',
		  '--apply', 'INSERT INTO app VALUES (convert_from($2, \'UTF8\'), $3, $4)'
		  or POSIX::_exit(1);
	}
	$c->{children}{$pid} = 1;
	return $pid;
}

sub stop_pipeline
{
	my ($pid, $sig) = @_;
	kill $sig // 'TERM', $pid;
	waitpid($pid, 0);
	delete $c->{children}{$pid};
}

sub stopped
{
	my ($pid) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		open my $fh, '<', "/proc/$pid/stat" or return 0;
		my $stat = <$fh>;
		close $fh;
		return 1 if $stat =~ /\)\s+T\s/;
		usleep(20_000);
	}
	return 0;
}

# wait until file $f matches $re
sub wait_file
{
	my ($f, $re) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if -e $f && slurp_file($f) =~ $re;
		usleep(50_000);
	}
	diag("$f never matched $re");
	return 0;
}

sub prepared_count
{
	my $n = 0;
	$n += $c->node($_)->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts') for 1 .. 3;
	return $n;
}

sub wait_no_prepared
{
	my ($what) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if prepared_count() == 0;
		usleep(100_000);
	}
	diag("prepared transactions left ($what): " . prepared_count());
	return 0;
}

sub wait_leader_change
{
	my ($topic, $p, $old) = @_;
	$c->coord->poll_query_until('postgres',
		"SELECT leader IS NOT NULL AND leader <> $old FROM mq_coord.partition "
		  . "WHERE topic = '$topic' AND partition = $p")
	  or diag("no new leader of $topic/$p");
}

sub wait_isr_full
{
	$c->coord->poll_query_until('postgres',
		"SELECT bool_and(cardinality(isr) = 3) FROM mq_coord.partition")
	  or diag('the ISR did not recover');
}

produce_inputs(200);
my $pipe = start_pipeline();
ok(wait_processed(100, 'start'), 'the pipeline runs');

# a. the leader of input partition 0
my $victim = $c->leader('in', 0);
produce_inputs(100);
$c->kill9_node($victim);
wait_leader_change('in', 0, $victim);
produce_inputs(100);
ok(wait_processed($produced, 'input leader killed'), 'the pipeline went on after the input leader died');
check_offsets_behind_outputs('after the input leader died');
$c->node($victim)->start;
wait_isr_full();

# b. an output leader that leads no input partition, if there is one
my %in_leaders = map { $c->leader('in', $_) => 1 } 0 .. 1;
my ($q) = grep { !$in_leaders{ $c->leader('out', $_) } } 0 .. 2;
$q //= 0;
$victim = $c->leader('out', $q);
produce_inputs(100);
$c->kill9_node($victim);
wait_leader_change('out', $q, $victim);
produce_inputs(100);
ok(wait_processed($produced, 'output leader killed'), 'the pipeline went on after an output leader died');
check_offsets_behind_outputs('after an output leader died');
$c->node($victim)->start;
wait_isr_full();

# b2. an output leader killed holding a prepared output part, just before
# the decision (within txn.timeout.ms): the client decides, cannot commit
# that part, and sends its records again to the new leader (same producer
# id, epoch and sequence); the node's broker rolls the old part back when
# the node returns (its partitions have a new leader epoch)
stop_pipeline($pipe);
produce_inputs(100);
$pipe = start_pipeline(MQCTL_PIPELINE_TEST_STOP => 'prepared:2');
ok(stopped($pipe), 'the client stopped itself with its parts prepared');
# Every broker stays paused until the client decided: on a slow machine
# finding and killing the node took longer than txn.timeout.ms, and the
# brokers' recovery rolled the step back before the client could decide.
$c->signal_broker($_, 'STOP') for 1 .. 3;
my %prepared = map {
	my $i = $_;
	map { $_ => $i } split /\n/, $c->node($i)->safe_psql('postgres',
		"SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'mq:%' AND gid NOT LIKE '%:0'")
} 1 .. 3;
my ($out_gid) = sort { $prepared{$a} <=> $prepared{$b} or $a cmp $b } keys %prepared;
ok(defined $out_gid, 'an output part is prepared on a node');
my $out_node = defined $out_gid ? $prepared{$out_gid} : 1;
my ($step) = ($out_gid // '') =~ /^mq:(.*):\d+$/;
$c->kill9_node($out_node);
kill 'CONT', $pipe;
ok($c->coord->poll_query_until('postgres',
		"SELECT mq_coord.txn_state('" . ($step // '') . "') IN ('commit', 'outputs_durable', 'done')"),
	'the client decided the step');
$c->signal_broker($_, 'CONT') for 1 .. 3;
produce_inputs(100);
ok(wait_processed($produced, 'output leader killed holding a prepared part'),
	'the pipeline went on after an output leader died holding a prepared part');
like(slurp_file("$c->{logprefix}pipeline$run.log"), qr/sending it again/,
	'the client sent the lost part again');
check_offsets_behind_outputs('after an output leader died holding a prepared part');
$c->node($out_node)->start;
wait_isr_full();

# c. the client killed between prepare and decision
stop_pipeline($pipe);
produce_inputs(100);
$pipe = start_pipeline(MQCTL_PIPELINE_TEST_STOP => 'prepared:2');
ok(stopped($pipe), 'the client stopped itself with its parts prepared');
# (the brokers paused while the parts are counted: on a slow machine
# txn.timeout.ms passed before, and recovery had rolled them back)
$c->signal_broker($_, 'STOP') for 1 .. 3;
cmp_ok(prepared_count(), '>', 0, 'parts are prepared on the nodes');
stop_pipeline($pipe, 'KILL');
$c->signal_broker($_, 'CONT') for 1 .. 3;
ok(wait_no_prepared('client killed before the decision'), 'recovery rolled back the undecided parts');
is($c->coord->safe_psql('postgres', "SELECT count(*) > 0 FROM mq_coord.txn WHERE state = 'abort' AND reason LIKE '%without a decision'"),
	't', 'recovery recorded the abort on the coordinator');
check_offsets_behind_outputs('after the rollback of an undecided step');

# d. the client killed right after the decision
$pipe = start_pipeline(MQCTL_PIPELINE_TEST_STOP => 'decided:2');
ok(stopped($pipe), 'the client stopped itself after the decision');
stop_pipeline($pipe, 'KILL');
ok(wait_no_prepared('client killed after the decision'), 'recovery committed the decided parts');
ok($c->coord->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM mq_coord.txn WHERE state = 'commit'"),
	'the brokers found the outputs durable');
check_offsets_behind_outputs('after recovery committed a decided step');
$pipe = start_pipeline();
ok(wait_processed($produced, 'client restarted'), 'a new client went on');

# d2. the client killed after the decision and an output leader killed
# before that output was durable: nobody but recovery can finish the step.
# Its broker is paused from before the decision so that it cannot commit
# the part first.  An output part on a node that is not the input's is
# chosen if there is one; otherwise the input's node dies too, and the
# input's new leader commits the step's offset again.
stop_pipeline($pipe);
produce_inputs(100);
$pipe = start_pipeline(MQCTL_PIPELINE_TEST_STOP => 'prepared+decided:2');
ok(stopped($pipe), 'the client stopped itself with its parts prepared');
# Every broker stays paused from here until the new client has met the
# step: on a slow machine their recovery rolled the parts back
# (txn.timeout.ms) before the client decided, or completed the step
# before the new client started, and it did not wait.
$c->signal_broker($_, 'STOP') for 1 .. 3;
my %gids = map {
	my $i = $_;
	map { $_ => $i } split /\n/, $c->node($i)->safe_psql('postgres',
		"SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'mq:%'")
} 1 .. 3;
my ($in_gid) = grep { /:0$/ } keys %gids;
my ($txn) = ($in_gid // '') =~ /^mq:(.*):0$/;
my ($lost) = sort { ($gids{$a} == $gids{$in_gid}) <=> ($gids{$b} == $gids{$in_gid}) or $a cmp $b }
  grep { /:[1-9]\d*$/ } keys %gids;
ok(defined $txn && defined $lost, 'the step has an output part prepared')
  or diag('prepared: ' . join(', ', map { "$_ on node$gids{$_}" } sort keys %gids));
$out_node = $gids{ $lost // '' } // 1;
my $with_input = $out_node == ($gids{ $in_gid // '' } // 0);
note("output part $lost on node$out_node" . ($with_input ? ', with the input part' : ''));
kill 'CONT', $pipe;
ok($c->coord->poll_query_until('postgres', "SELECT mq_coord.txn_state('$txn') = 'commit'"),
	'the step is decided');
ok(stopped($pipe), 'the client stopped itself after the decision');
ok($c->coord->safe_psql('postgres',
		"SELECT count(*) FROM mq_coord.txn_output WHERE txn_id = '$txn' AND gid = '$lost'") > 0,
	'the decision stored the records of the part');
my @live = grep { $_ != $out_node } 1 .. 3;
$c->kill9_node($out_node);
stop_pipeline($pipe, 'KILL');
$pipe = start_pipeline();
ok(wait_file("$c->{logprefix}pipeline$run.log", qr/waiting for the previous run's step/),
	'the new client waits for the step to complete');
$c->signal_broker($_, 'CONT') for 1 .. 3;
ok($c->coord->poll_query_until('postgres', "SELECT mq_coord.txn_state('$txn') = 'done'"),
	'recovery completed the step without its client');
like(join('', map { $c->broker_log($_) } @live), qr/sent out partition \d+ of step \Q$txn\E again/,
	'a new leader\'s broker sent the lost output again');
like(join('', map { $c->broker_log($_) } @live), qr/committed the offset \d+ of in partition \d+ for step \Q$txn\E again/,
	'the input\'s new leader committed the step\'s offset again')
  if $with_input;
# done means every part is durable; a live node's broker finishes its
# prepared part (COMMIT PREPARED) at its next tick, so wait for that
ok(!grep({ !$c->node($_)->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'mq:$txn:%'") } @live),
	'nothing of the step is left prepared on the live nodes');
$c->node($out_node)->start;
ok(wait_no_prepared('old output leader back'), 'its prepared parts were finished on its return');
wait_isr_full();
ok(wait_processed($produced, 'client after recovery'), 'the new client went on');
check_offsets_behind_outputs('after recovery sent a lost output again');

# e. the coordinator
produce_inputs(100);
$c->kill9_coord;
$c->coord->start;
produce_inputs(100);
ok(wait_processed($produced, 'coordinator restarted'), 'the pipeline went on after the coordinator restarted');

# f. the broker of an input leader
my $b = $c->leader('in', 1);
$c->signal_broker($b, 'KILL');
produce_inputs(100);
wait_leader_change('in', 1, $b);
$c->start_broker($b);
produce_inputs(100);
ok(wait_processed($produced, 'broker killed'), 'the pipeline went on after a broker died');
wait_isr_full();
stop_pipeline($pipe);

# ---------------------------------------------------------------------
# the end state
ok(wait_no_prepared('end'), 'no prepared transaction left on any node');
is($c->coord->safe_psql('postgres', "SELECT count(*) FROM mq_coord.txn WHERE state = 'commit'"),
	'0', 'no decision left with outputs not durable');
my @ends = map { my $p = $_; scalar(grep { $_ % 2 == $p } 1 .. $produced) } 0 .. 1;
is(join(',', map { committed($_) } 0 .. 1), join(',', @ends),
	"the committed offsets are the input's end ($produced records)");
my %seen;
for my $q (0 .. 2)
{
	ok($c->wait_converged('out', $q, 1 .. 3), "out/$q: replicas converged");
	my ($ref, $hwm) = $c->replica_rows($c->leader('out', $q), 'out', $q);
	$seen{$_}++ for @$ref;
	for my $i (1 .. 3)
	{
		my ($log) = $c->replica_rows($i, 'out', $q);
		is_deeply($log, $ref, "out/$q: node$i holds the leader's log");
	}
}
my @twice = grep { $seen{$_} > 1 } sort keys %seen;
my @lost = grep { !$seen{"r$_"} } 1 .. $produced;
is(scalar(@twice), 0, 'no input is in "out" twice') or diag("twice: @twice[0 .. ($#twice < 5 ? $#twice : 5)]");
is(scalar(@lost), 0, 'every input is in "out"') or diag("missing: r@lost[0 .. ($#lost < 5 ? $#lost : 5)]");
is(scalar(keys %seen), $produced, "\"out\" holds exactly the $produced inputs");
my (%app, %where);
for my $i (1 .. 3)
{
	for (split /\n/, $c->node($i)->safe_psql('postgres', "SELECT v || ' ' || part || ' ' || off FROM app"))
	{
		my ($v, $part, $off) = split / /;
		$app{$v}++;
		push @{ $where{$v} }, "node$i in/$part\@$off";
	}
}
my @app_twice = grep { $app{$_} > 1 } sort keys %app;
is(scalar(@app_twice), 0, 'no input has two application rows (all nodes)')
  or diag(join('; ', map { "$_: @{ $where{$_} }" } @app_twice[0 .. ($#app_twice < 5 ? $#app_twice : 5)]));
is(scalar(keys %app), $produced, 'every input has its application row on some node');
$c->teardown;
done_testing();
