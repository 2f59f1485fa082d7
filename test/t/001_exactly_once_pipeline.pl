# Exactly-once consume-transform-produce under failures.
#
# Topic A holds numbered input records, keyed so that each key's numbers
# increase with the offset.  Several workers run pipeline_step() in a loop:
# one transaction that polls A for the group, sends each record to topic B,
# inserts it into an application table, and commits the group's offsets.
# Meanwhile a killer terminates worker backends at random and the server
# is crashed once (immediate stop) and restarted.
#
# The checks read the tables with plain SQL: every input appears exactly
# once in B and in the application table, per key the numbers in B keep
# their order, and the committed offsets equal A's end offsets.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(sleep time);

my $inputs = 3000;
my $nworkers = 4;

my $node = PostgreSQL::Test::Cluster->new('pipeline');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'mq'
fsync = on
log_statement = none
max_connections = 40
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION mq;
SELECT mq.create_topic('A', 4, '{"segment.records": 500}');
SELECT mq.create_topic('B', 4, '{"segment.records": 500}');
CREATE TABLE app (id int PRIMARY KEY, key text NOT NULL);
});
$node->safe_psql('postgres', qq{
SELECT count(*) FROM mq.send_batch('A',
    (SELECT array_agg('k' || (i % 25) ORDER BY i) FROM generate_series(1, $inputs) i),
    (SELECT array_agg(i::text ORDER BY i) FROM generate_series(1, $inputs) i));
});
$node->safe_psql('postgres', q{
CREATE FUNCTION pipeline_step() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n int := 0;
    next_offsets bigint[] := array_fill(NULL::bigint, ARRAY[4], ARRAY[0]);
BEGIN
    -- the end of the run: the step fails, so the worker's psql ends
    IF to_regclass('pipeline_stop') IS NOT NULL THEN
        RAISE EXCEPTION 'the pipeline is stopped';
    END IF;
    FOR r IN SELECT * FROM mq.poll('pipe', 'A', 10) ORDER BY partition, msg_offset LOOP
        PERFORM mq.send('B', r.key, r.value);
        INSERT INTO app VALUES (convert_from(r.value, 'UTF8')::int, convert_from(r.key, 'UTF8'));
        next_offsets[r.partition] := r.msg_offset + 1;
        n := n + 1;
    END LOOP;
    -- stay in the transaction a while, so that the killer finds workers
    -- mid-transaction however fast the rest of the step is
    PERFORM pg_sleep(0.02);
    FOR p IN 0 .. 3 LOOP
        IF next_offsets[p] IS NOT NULL THEN
            PERFORM mq.commit_offset('pipe', 'A', p, next_offsets[p]);
        END IF;
    END LOOP;
    RETURN n;
END $$;
});

my $connstr = $node->connstr('postgres') . ' application_name=pipeline-worker';
my $stopfile = PostgreSQL::Test::Utils::tempdir() . "/pipeline.stop";
unlink $stopfile;

# workers: one psql runs the step again and again (\watch, every 10 ms)
# until a step fails, as when its backend is terminated or the server
# crashes; then a fresh connection, until told to stop (the sleep is a
# retry pause while the server is down, not a wait for anything).  One
# psql and backend a step cost 47 ms of CPU on the CI machine, most of
# what the test used.
my @workers;
for my $w (1 .. $nworkers)
{
	my $script = qq{
		while [ ! -f '$stopfile' ]; do
			echo 'SELECT pipeline_step() \\watch 0.01' |
				psql -X -q -At -d '$connstr' >/dev/null 2>&1 || sleep 0.05
		done
	};
	push @workers, IPC::Run::start([ 'bash', '-c', $script ]);
}

sub consumed_total
{
	my ($ret, $out) = $node->psql('postgres', q{
		SELECT coalesce(sum(mq.committed_offset('pipe', 'A', partition)), 0)
		  FROM mq.partitions WHERE topic = 'A'});
	return $ret == 0 ? $out : -1;
}

my $kills = 0;
my $crashed = 0;
my $deadline = time + 150;
while (time < $deadline)
{
	my $done = consumed_total();
	last if $done == $inputs;
	if (!$crashed && $done >= $inputs / 3)
	{
		note "crashing the server at $done consumed";
		$node->stop('immediate');
		$node->start;
		$crashed = 1;
		next;
	}
	my ($ret, $out) = $node->psql('postgres', q{
		SELECT count(pg_terminate_backend(pid)) FROM (
			SELECT pid FROM pg_stat_activity
			 WHERE application_name = 'pipeline-worker' AND state = 'active'
			 ORDER BY random() LIMIT 1) s});
	$kills += $out if $ret == 0 && $out;
	# the pace of the fault injection, one kill every 0.2 s; the loop itself
	# ends on a condition (all of A consumed)
	sleep 0.2;
}

open my $fh, '>', $stopfile or die;
close $fh;
$node->safe_psql('postgres', 'CREATE TABLE pipeline_stop ()');
$_->finish for @workers;

note "killed $kills worker backends";
ok($crashed, 'the server was crashed and restarted mid-run');
cmp_ok($kills, '>', 0, 'worker backends were terminated mid-transaction');
is(consumed_total(), $inputs, 'committed offsets cover all of A');

is( $node->safe_psql('postgres', q{
		SELECT string_agg(partition || ':' || (mq.committed_offset('pipe', 'A', partition) = log_end_offset)::text, ',' ORDER BY partition)
		  FROM mq.partitions WHERE topic = 'A'}),
	'0:true,1:true,2:true,3:true',
	'committed offsets equal the end offsets of A');

# independent checks on the tables themselves
my $b = $node->safe_psql('postgres', q{SELECT relid FROM mq.topic WHERE topic_name = 'B'});
is( $node->safe_psql('postgres', q{SELECT count(*), count(DISTINCT id), min(id), max(id) FROM app}),
	"$inputs|$inputs|1|$inputs",
	'every input is in the application table exactly once');
is( $node->safe_psql('postgres', qq{
		SELECT count(*), count(DISTINCT convert_from(value, 'UTF8')::int) FROM $b}),
	"$inputs|$inputs",
	'every input is in topic B exactly once');
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
			SELECT convert_from(key, 'UTF8') AS k, convert_from(value, 'UTF8')::int AS id,
			       lag(convert_from(value, 'UTF8')::int) OVER (PARTITION BY partition, key ORDER BY msg_offset) AS prev
			  FROM $b) s
		 WHERE prev IS NOT NULL AND prev > id}),
	'0',
	'per key, B keeps the order of A');
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM $b b JOIN app a ON a.id = convert_from(b.value, 'UTF8')::int
		 WHERE a.key <> convert_from(b.key, 'UTF8')}),
	'0',
	'B and the application table agree on every record');
is( $node->safe_psql('postgres', qq{
		SELECT bool_and(log_end_offset = (SELECT count(*) FROM $b l WHERE l.partition = p.partition))
		  FROM mq.partitions p WHERE topic = 'B'}),
	't',
	'B is gapless in every partition');

$node->stop;
done_testing();
