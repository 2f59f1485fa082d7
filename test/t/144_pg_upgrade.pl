# pg_upgrade of a cluster that holds mq (docs/operations.md, "Upgrading
# PostgreSQL"): the new cluster has every record, header and offset, the
# compaction's gaps, the log start retention left, committed offsets,
# grants, SCRAM credentials and an idempotent producer's state, and goes
# on from them.  pg_upgrade starts both servers in binary upgrade mode;
# mq's launcher stays down there (a maintenance pass would change the old
# cluster under pg_upgrade's feet, or run against the new one's
# half-restored catalog), so their log shows no mq worker, and the
# upgraded server starts its maintenance as usual.
use strict;
use warnings;

use Cwd ();
use File::Find ();
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\nmq.maintenance_interval = 100\n");
$old->start;
$old->safe_psql('postgres', q{
	CREATE EXTENSION mq;
	CREATE ROLE reader LOGIN;
	SELECT mq.create_topic('t', 2, '{"segment.records": "40"}');
	SELECT mq.send('t', 'k' || g, 'v' || g, jsonb_build_object('n', g), g % 2) FROM generate_series(1, 100) g;
	SELECT mq.commit_offset('g', 't', 0, 10);
	SELECT mq.delete_records('t', 1, 20);
	SELECT mq.create_topic('c', 1, '{"cleanup.policy": "compact", "segment.records": "10"}');
	SELECT mq.send('c', 'k' || (g % 3), 'v' || g, NULL::jsonb, 0) FROM generate_series(1, 30) g;
	SELECT mq.compact('c');
	SELECT mq.grant('read', 'topic', 't', 'reader');
	SELECT mq.set_scram_credential('reader', 'SCRAM-SHA-256', 'secret', 4096);
});
my $pid = $old->safe_psql('postgres', 'SELECT producer_id FROM mq.init_producer()');
my $batch = "SELECT string_agg(msg_offset::text, ',') FROM mq.send_batch('t', ARRAY['a','b']::bytea[],
	ARRAY['1','2']::bytea[], partition => 0, producer_id => $pid, producer_epoch => 0, base_sequence => %d)";
$old->safe_psql('postgres', sprintf($batch, 0));
my $last_batch = $old->safe_psql('postgres', sprintf($batch, 2));

my $state = q{SELECT (SELECT string_agg(x.topic || ':' || x.partition || ':' || x.msg_offset || ':'
		|| encode(x.key, 'escape') || ':' || encode(x.value, 'escape') || ':' || coalesce(x.headers::text, '-'),
		',' ORDER BY x.topic, x.partition, x.msg_offset)
		FROM mq.partitions p, LATERAL mq.fetch(p.topic, p.partition, p.log_start_offset, 1000) x)
	|| ' | ' || (SELECT string_agg(topic || ':' || partition || ':' || log_start_offset || ':' || log_end_offset
		|| ':' || high_watermark || ':' || relid::text, ',' ORDER BY topic, partition) FROM mq.partitions)
	|| ' | ' || (SELECT string_agg(s.topic || ':' || s.partition || ':' || s.base_offset || ':' || s.relid::text,
		',' ORDER BY s.relid::text)
		FROM mq.segments s JOIN mq.partitions p USING (topic, partition) WHERE s.base_offset < p.log_end_offset)
	|| ' | ' || mq.committed_offset('g', 't', 0)
	|| ' | ' || (SELECT string_agg(g::text, ',' ORDER BY g::text) FROM mq.grants g)
	|| ' | ' || (SELECT string_agg(user_name || ':' || mechanism || ':' || iterations, ',') FROM mq.scram_credentials)};
my $before = $old->safe_psql('postgres', $state);
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\nmq.maintenance_interval = 100\n");

# docs/operations.md's command, run as written, in a directory of its own
# (pg_upgrade writes its scripts there, and its sockets by default)
my ($doc_block) = slurp_file("$ENV{MQ_REPO_ROOT}/docs/operations.md")
  =~ /^<!-- pg-upgrade-test -->\n```sh\n(.*?)^```$/ms
  or die 'docs/operations.md has no pg-upgrade-test block';
my $bindir = $new->config_data('--bindir');
local $ENV{PGBINOLD} = $bindir;
local $ENV{PGBINNEW} = $bindir;
local $ENV{PGDATAOLD} = $old->data_dir;
local $ENV{PGDATANEW} = $new->data_dir;
local $ENV{PGPORTOLD} = $old->port;
local $ENV{PGPORTNEW} = $new->port;
my $cwd = Cwd::getcwd();
my $work = PostgreSQL::Test::Utils::tempdir_short();
chdir $work or die "chdir $work: $!";
my ($out, $err);
my $upgraded = IPC::Run::run([ 'bash', '-euo', 'pipefail', '-c', "pg_upgrade() { command pg_upgrade --no-sync \"\$@\"; }\n$doc_block" ],
	'>', \$out, '2>', \$err);
chdir $cwd or die "chdir $cwd: $!";
ok($upgraded, "docs/operations.md's pg_upgrade of a cluster holding mq") or diag("$out\n$err");
like($out, qr/mq launcher not started: the server runs in binary upgrade mode/,
	'its grep shows the servers pg_upgrade started saying why mq maintenance stays down');

# the whole log of those servers (the old one, for its checks and schema
# dump, and the new one, for the restore)
my @logs;
File::Find::find(sub { push @logs, $File::Find::name if $_ eq 'pg_upgrade_server.log' },
	$new->data_dir . '/pg_upgrade_output.d');
is(scalar @logs, 1, 'pg_upgrade kept its server log');
my @started = slurp_file($logs[0]) =~ /^.*(?:mq launcher started|mq maintenance worker started).*$/mg;
is(scalar @started, 0, 'no mq worker ran in them') or diag(join("\n", @started));

$new->start;
is($new->safe_psql('postgres', $state), $before,
	'the upgraded cluster has the records, offsets, segments, grants and credentials');
is($new->safe_psql('postgres', sprintf($batch, 2)), $last_batch,
	"the idempotent producer's retry of its last batch is answered with its offsets");
is($new->safe_psql('postgres', sprintf($batch, 4)), '54,55', 'its next batch goes on after it');
is($new->safe_psql('postgres', "SELECT msg_offset FROM mq.send('t', 'x', 'y', NULL, 1)"), '50',
	'a send appends at the log end');
is($new->safe_psql('postgres', "SELECT string_agg(msg_offset::text, ',') FROM mq.poll('g', 't', 2, partitions => ARRAY[0])"),
	'10,11', 'a group polls on from its committed offset');
is($new->safe_psql('postgres', "SELECT producer_id > $pid FROM mq.init_producer()"), 't',
	'new producer ids come after the upgraded ones');
ok($new->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'mq maintenance'}),
	'the upgraded server runs mq maintenance');
my $rc;
($rc, $out, $err) = $new->psql('postgres', 'ALTER EXTENSION mq UPDATE');
is($rc, 0, 'ALTER EXTENSION mq UPDATE after it') or diag($err);

$new->stop;
done_testing();
