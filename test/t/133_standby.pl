# mq on a hot standby (docs/operations.md, "Standbys"): a standby made
# with pg_basebackup -R has every record and committed offset; fetch,
# poll without auto_commit, the views and a long poll work read-only;
# a long poll at the log end wakes when a record is replayed (there is no
# commit on a standby to wake it: issue 21 saw mq.fetch(max_wait_ms =>
# 4000) return nothing although a record came 0.5 s in); what writes
# is refused with 25006; mq-kafka on the standby serves a Kafka consumer,
# and a Kafka producer's record, refused there as retriable, lands once
# the standby is promoted; and once promoted it produces on from what it
# replayed.
use strict;
use warnings;

use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'mq'\n");
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION mq;
	SELECT mq.create_topic('t', 2);
	SELECT mq.send('t', 'k' || g, 'v' || g, jsonb_build_object('n', g), g % 2) FROM generate_series(1, 10) g;
	SELECT mq.commit_offset('g', 't', 0, 3);
});

$primary->backup('b', backup_options => ['-R']);
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b');
$standby->start;

# the standby replayed everything the primary wrote so far
sub catch_up
{
	my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")
	  or die 'the standby does not catch up';
}
catch_up();

my $records = q{SELECT string_agg(r.partition || ':' || r.msg_offset || ':' || convert_from(r.value, 'UTF8')
	|| ':' || r.headers::text, ',' ORDER BY r.partition, r.msg_offset)
	FROM generate_series(0, 1) p, LATERAL mq.fetch('t', p, 0, 100) r};
is($standby->safe_psql('postgres', $records), $primary->safe_psql('postgres', $records),
	'the standby made by pg_basebackup -R has every record');
is($standby->safe_psql('postgres', "SELECT mq.committed_offset('g', 't', 0)"), '3',
	'and the committed offset');
is($standby->safe_psql('postgres', "SELECT string_agg(msg_offset::text, ',') FROM mq.poll('g', 't', 2, partitions => ARRAY[0])"),
	'3,4', 'poll without auto_commit reads from the committed offset');
is($standby->safe_psql('postgres', "SELECT count(*) FROM mq.partitions WHERE topic = 't'"), '2',
	'the views work');

# run SQL on NODE in the background: returns the harness and its output
sub start_sql
{
	my ($node, $sql) = @_;
	my %r = (out => '', err => '');
	$r{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$r{out}, '2>', \$r{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return \%r;
}

# wait until a statement like PATTERN waits on the standby
sub wait_waiting
{
	my ($pattern) = @_;
	return $standby->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '$pattern'");
}

# long polls at the log end, waiting much longer than the test does: only
# a wake-up on replay brings them back
my $end = $primary->safe_psql('postgres', "SELECT log_end_offset FROM mq.partitions WHERE topic = 't' AND partition = 1");
my $fetch = start_sql($standby,
	"SELECT msg_offset || ':' || convert_from(value, 'UTF8') FROM mq.fetch('t', 1, $end, 10, max_wait_ms => 600000)");
my $poll = start_sql($standby,
	"SELECT count(*) FROM mq.poll('g2', 't', 10, max_wait_ms => 600000, auto_offset_reset => 'latest')");
ok(wait_waiting('%mq.fetch%'), 'a long fetch at the log end waits on the standby');
ok(wait_waiting('%mq.poll%'), 'so does a long poll of a group');
$primary->safe_psql('postgres', "SELECT mq.send('t', 'k', 'late', partition => 1)");
ok(eval { $fetch->{h}->finish; 1 }, 'the fetch returns once the record is replayed') or diag($@);
is($fetch->{out}, "$end:late\n", 'with the record');
ok(eval { $poll->{h}->finish; 1 }, 'the poll returns too') or diag($@);
is($poll->{out}, "1\n", 'with the record');

# nothing replayed: the wait ends at its deadline with nothing
is($standby->safe_psql('postgres', "SELECT count(*) FROM mq.fetch('t', 0, 5, 10, max_wait_ms => 200)"),
	'0', 'a long fetch with nothing to read ends at its deadline');

# what writes is refused: 25006, read-only transaction
for my $w (
	[ 'send', "SELECT mq.send('t', 'k', 'v')" ],
	[ 'create_topic', "SELECT mq.create_topic('u')" ],
	[ 'commit_offset', "SELECT mq.commit_offset('g', 't', 0, 4)" ],
	[ 'init_producer', "SELECT mq.init_producer()" ])
{
	my ($ret, $out, $err) = $standby->psql('postgres', $w->[1], extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  25006: cannot execute [\w ]+ in a read-only transaction/, "$w->[0] on the standby is 25006");
}
# auto_commit: the first poll reads, the next would commit it and is refused
my ($ret, $out, $err) = $standby->psql('postgres',
	"SELECT count(*) FROM mq.poll('g', 't', 1, true, partitions => ARRAY[0]);"
	  . "SELECT count(*) FROM mq.poll('g', 't', 1, true, partitions => ARRAY[0])",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  25006: cannot execute \w+ in a read-only transaction/,
	'a poll with auto_commit is refused when it has a batch to commit');
# and a group member's the same: its batch, kept in mq.poll_pending on a
# primary, stays in the session on a standby, which writes nothing
my $member = $primary->safe_psql('postgres', "SELECT member FROM mq.join_group('gm', ARRAY['t'])");
catch_up();
($ret, $out, $err) = $standby->psql('postgres',
	"SELECT count(*) FROM mq.poll('gm', 't', 1, true, member_id => '$member');"
	  . "SELECT count(*) FROM mq.poll('gm', 't', 1, true, member_id => '$member')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
is($out, '1', "a member's first auto_commit poll reads on the standby");
like($err, qr/ERROR:  25006: cannot execute \w+ in a read-only transaction/,
	'the next, with a batch to commit, is refused');

# so a consumer that reads on the standby commits on the primary, and its
# next poll on the standby starts there once the commit is replayed
my $read = $standby->safe_psql('postgres',
	"SELECT max(msg_offset) + 1 FROM mq.poll('g', 't', 2, partitions => ARRAY[0])");
$primary->safe_psql('postgres', "SELECT mq.commit_offset('g', 't', 0, $read)");
$primary->safe_psql('postgres', "SELECT mq.send('t', 'k', 'more', partition => 0) FROM generate_series(1, 2)");
catch_up();
is($standby->safe_psql('postgres', "SELECT min(msg_offset) FROM mq.poll('g', 't', 2, partitions => ARRAY[0])"),
	$read, 'an offset read on the standby and committed on the primary is where the next poll on the standby starts');

# mq-kafka on the standby: Kafka consumers read there; a produce is
# refused as PostgreSQL refuses it (25006), which is transient
# (mq_error_is_transient: the same session writes once the standby is
# promoted), so kcat at its defaults sends again, and its record lands
# after the promotion below
$primary->safe_psql('postgres', "SELECT mq.create_topic('kp', 1)");
catch_up();
my $kafka_port = PostgreSQL::Test::Cluster::get_free_port();
my $kafka_log = $standby->basedir . '/mq-kafka.log';
my $kafka = IPC::Run::start(
	[ "$ENV{MQ_REPO_ROOT}/broker/mq-kafka/mq-kafka", '--listen', "127.0.0.1:$kafka_port",
	  '-d', $standby->connstr('postgres') ],
	'>', $kafka_log, '2>&1');
my $consumed = '';
for (1 .. 100)
{
	$consumed = join(',', split /\n/,
		`timeout 60 kcat -b 127.0.0.1:$kafka_port -C -t t -p 0 -o beginning -e -f '%o:%s\n' 2>/dev/null`);
	last if $consumed ne '';
	select undef, undef, undef, 0.1;
}
is($consumed, $standby->safe_psql('postgres',
		"SELECT string_agg(msg_offset || ':' || convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('t', 0, 0, 100)"),
	'a Kafka consumer reads the records through mq-kafka on the standby');
my $kp_in = $standby->basedir . '/kcat.in';
my $log_at = -s $standby->logfile;
PostgreSQL::Test::Utils::append_to_file($kp_in, "during\n");
my %kp = (out => '', err => '');
$kp{h} = IPC::Run::start([ 'kcat', '-b', "127.0.0.1:$kafka_port", '-P', '-t', 'kp', '-p', '0' ],
	'<', $kp_in, '>', \$kp{out}, '2>', \$kp{err});
ok($standby->wait_for_log(qr/ERROR:  cannot execute a produce to a topic in a read-only transaction/, $log_at),
	'kcat produces to the standby and is refused there (read-only)');
ok($kp{h}->pumpable, 'kcat sends again rather than failing its record');

# Failover: the primary dies and the standby is promoted (pg_ctl promote),
# as a DBA or a failover manager does.  mq keeps no counter of its own
# (offsets come from the segments' indexes, producer state from its
# table), so the promoted node goes on from what it replayed, even after
# its sessions read on the standby.
my ($pid, $epoch) = split /\|/, $primary->safe_psql('postgres', 'SELECT producer_id, producer_epoch FROM mq.init_producer()');
my $batch = "SELECT string_agg(msg_offset::text, ',') FROM mq.send_batch('t', ARRAY['a', 'b'], ARRAY['1', '2'], NULL, 1, $pid, $epoch, %d)";
my $acked = $primary->safe_psql('postgres', sprintf($batch, 0));
$primary->safe_psql('postgres', "SELECT mq.send('t', 'k', 'last', partition => 1)");
my $ends = q{SELECT string_agg(log_end_offset::text, ',' ORDER BY partition) FROM mq.partitions WHERE topic = 't'};
my $ends_before = $primary->safe_psql('postgres', $ends);
my $max_topic = $primary->safe_psql('postgres', 'SELECT max(topic_id) FROM mq.topic');
catch_up();
# a session that read on the standby before the promotion, and stays
my $session = $standby->background_psql('postgres');
$session->query_safe("SELECT count(*) FROM mq.fetch('t', 1, 0, 100)");
$primary->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', $ends), $ends_before, 'the promoted standby has the primary\'s log ends');
is($session->query_safe("SELECT msg_offset FROM mq.send('t', 'k', 'after', partition => 1)"),
	(split /,/, $ends_before)[1], 'a send after the promotion gets the next offset, in a session that read before it');
is($standby->safe_psql('postgres', sprintf($batch, 0)), $acked,
	'an idempotent producer\'s batch retried after the failover is found (same offsets)');
my $end1 = $standby->safe_psql('postgres', "SELECT log_end_offset FROM mq.partitions WHERE topic = 't' AND partition = 1");
is($standby->safe_psql('postgres', sprintf($batch, 2)), $end1 . ',' . ($end1 + 1),
	'and its next sequence appends at the log end');
my ($r2, $o2, $e2) = $standby->psql('postgres', sprintf($batch, 7));
like($e2, qr/sequence/, 'a gap in its sequence is still refused');
is($standby->safe_psql('postgres', "SELECT count(*) FROM mq.poll('g', 't', 2, true, partitions => ARRAY[0])"),
	'2', 'a group polls with auto_commit (a write) from its committed offset');
ok($standby->safe_psql('postgres', "SELECT mq.create_topic('u', 1)") > $max_topic, 'a new topic gets a new id');
ok($standby->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'mq maintenance' AND datname = 'postgres'"),
	'the maintenance worker starts on the promoted node');
$session->quit;
ok(eval { $kp{h}->finish; 1 } && $kp{h}->result == 0, "kcat's record is delivered after the promotion") or diag($kp{err});
is($standby->safe_psql('postgres', "SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.fetch('kp', 0, 0, 100)"),
	'during', 'once');
$kafka->kill_kill;

done_testing();
