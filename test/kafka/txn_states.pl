# InitProducerId's producer id and epoch check (KIP-360) and EndTxn's
# transaction states, on the wire, as Kafka 3.9's transaction coordinator
# answers them (TAP output):
#   InitProducerId v3+ with the id's current pair bumps the epoch, its
#   retry (the pair it replaced) gets the same pair again, any other pair
#   is PRODUCER_FENCED (v4+; INVALID_PRODUCER_EPOCH on v3), and a new
#   instance's call (no pair) closes the retry window;
#   EndTxn with no transaction begun (Empty), or ending the last one the
#   other way, is INVALID_TXN_STATE, and ending it the same way again
#   succeeds (a retry);
#   AddPartitionsToTxn adds a transaction's partitions all or none: an
#   unknown one is refused, the others OPERATION_NOT_ATTEMPTED.
#   txn_states.pl PORT TXN TOPIC    (TOPIC: an existing topic, partition 0)
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(kafka_connect kafka_call str cstr ok tap_done);

my ($port, $txn, $topic) = @ARGV;
die "usage: txn_states.pl PORT TXN TOPIC\n" unless defined $topic;
my $sock = kafka_connect($port);

sub call { return kafka_call($sock, 'txn_states.pl', @_) }

# InitProducerId v3+ (flexible) with the client's pair, asked again while
# the coordinator loads or the id is busy: (error, producer id, epoch)
sub init_pid {
	my ($ver, $pid, $epoch) = @_;
	my @r;
	for (1 .. 50) {
		@r = unpack('x4 x1 x4 s> q> s>', call(22, $ver, cstr($txn) . pack('l> q> s>', 60000, $pid, $epoch) . "\0", 1));
		last unless $r[0] == 14 || $r[0] == 15 || $r[0] == 51;
		select(undef, undef, undef, 0.2);
	}
	return @r;
}

# EndTxn v1: its error
sub end_txn {
	my ($pid, $epoch, $commit) = @_;
	return unpack('x4 x4 s>', call(26, 1, str($txn) . pack('q> s> c', $pid, $epoch, $commit)));
}

my ($err, $pid, $e0) = init_pid(4, -1, -1);
ok($err == 0 && $pid >= 0 && $e0 >= 0, 'InitProducerId v4 of a new id', "error $err");
exit 1 if $err;
ok(end_txn($pid, $e0, 0) == 48, 'EndTxn abort with no transaction begun: INVALID_TXN_STATE (48)');
ok(end_txn($pid, $e0, 1) == 48, 'EndTxn commit with no transaction begun: INVALID_TXN_STATE (48)');

my @r = init_pid(4, $pid, $e0);
ok($r[0] == 0 && $r[1] == $pid && $r[2] == $e0 + 1, 'InitProducerId v4 with the id\'s pair: the next epoch',
	"@r");
@r = init_pid(4, $pid, $e0);
ok($r[0] == 0 && $r[1] == $pid && $r[2] == $e0 + 1, 'its retry (the pair it replaced): the same pair again',
	"@r");
@r = init_pid(4, $pid, $e0 + 5);
ok($r[0] == 90 && $r[1] == -1, 'an epoch the id never had: PRODUCER_FENCED (90)', "@r");
@r = init_pid(3, $pid, $e0 + 5);
ok($r[0] == 47, 'the same on v3: INVALID_PRODUCER_EPOCH (47)', "@r");
@r = init_pid(4, $pid + 1000, $e0 + 1);
ok($r[0] == 90, 'another producer id: PRODUCER_FENCED (90)', "@r");
@r = init_pid(4, 0, 0);
ok($r[0] == 0 && $r[1] == $pid && $r[2] == $e0 + 2,
	'a new instance (producer id 0, which mq never issues: no pair, as @platformatic/kafka sends it): the next epoch', "@r");
@r = init_pid(4, $pid, $e0);
ok($r[0] == 90, 'then the older instance\'s retry is fenced, not the new instance', "@r");
my $e = $e0 + 2;

# a transaction: AddPartitionsToTxn v1 of TOPIC partition 0, committed
my $add = str($txn) . pack('q> s> l>', $pid, $e, 1) . str($topic) . pack('l> l>', 1, 0);
my $r = call(24, 1, $add);
ok(unpack('x' . (4 + 4 + 4 + 2 + length($topic) + 4 + 4) . ' s>', $r) == 0, 'AddPartitionsToTxn adds the partition');
ok(end_txn($pid, $e, 1) == 0, 'EndTxn commits it');
ok(end_txn($pid, $e, 1) == 0, 'a retried commit succeeds');
ok(end_txn($pid, $e, 0) == 48, 'an abort after the commit: INVALID_TXN_STATE (48)');

# AddPartitionsToTxn v1 adds all or none: "topic partition error" of each
sub add_partitions {
	my (@tp) = @_;
	my $body = str($txn) . pack('q> s> l>', $pid, $e, scalar @tp);
	$body .= str($_->[0]) . pack('l> l>', 1, $_->[1]) for @tp;
	my $r = call(24, 1, $body);
	my ($n, $pos, @out) = (unpack('x8 l>', $r), 12);
	for (1 .. $n) {
		my $len = unpack('n', substr($r, $pos, 2));
		my $name = substr($r, $pos + 2, $len);
		my $np = unpack('l>', substr($r, $pos + 2 + $len, 4));
		$pos += 2 + $len + 4;
		for (1 .. $np) {
			push @out, "$name " . join(' ', unpack('l> s>', substr($r, $pos, 6)));
			$pos += 6;
		}
	}
	return join(', ', sort @out);
}
my $got = add_partitions([$topic, 0], ['no-such-topic', 0]);
ok($got eq join(', ', sort("$topic 0 55", 'no-such-topic 0 3')),
	'an unknown topic: UNKNOWN_TOPIC_OR_PARTITION (3), the other OPERATION_NOT_ATTEMPTED (55)', $got);
$got = add_partitions([$topic, 0], [$topic, 99]);
ok($got eq "$topic 0 55, $topic 99 3", 'an unknown partition: the same', $got);
ok(end_txn($pid, $e, 0) == 48, 'nothing was added: no transaction is open to abort (48)');
ok(add_partitions([$topic, 0]) eq "$topic 0 0", 'the partition alone is added');
ok(end_txn($pid, $e, 0) == 0, 'and that transaction aborts');
tap_done();
