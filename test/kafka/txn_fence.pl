# TxnOffsetCommit's member checks (KIP-447) on the wire, for
# txn_fence.sh: a member joins GROUP (JoinGroup v1, SyncGroup v1), a
# static member joins GROUP-static (v5, instance id "inst-1"), a
# transactional producer (InitProducerId v1, transactional id TXN) adds
# the group's offsets to its transaction (AddOffsetsToTxn v1), and
# TxnOffsetCommit v3 commits TOPIC partition 0 with a member id the group
# does not have, the member's id with a wrong generation, the member's
# id and generation (offset 7), no member at all (-1, ""), then v2
# (which carries no member), the static instance with another member id,
# and, after the member left the group, its old id (a zombie whose
# session ended); then EndTxn v1 commits.  Prints one line per step,
# "STEP ERROR".
#   txn_fence.pl PORT GROUP TOPIC TXN
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(kafka_connect kafka_call str uvarint cstr);

my ($port, $group, $topic, $txn) = @ARGV;
die "usage: txn_fence.pl PORT GROUP TOPIC TXN\n" unless defined $txn;
my $sock = kafka_connect($port);

sub call { return kafka_call($sock, 'txn_fence.pl', @_) }

# a consumer subscription (ConsumerProtocol v0) to TOPIC, and an
# assignment of its partition 0
my $subscription = pack('s> l>', 0, 1) . str($topic) . pack('l>', -1);
my $assignment = pack('s> l>', 0, 1) . str($topic) . pack('l> l> l>', 1, 0, -1);

# JoinGroup v1 (v5 with an instance id), then SyncGroup v1 as the leader
# with the partition for itself: (member id, generation)
sub join_group {
	my ($g, $instance) = @_;
	my $ver = defined $instance ? 5 : 1;
	my $body = str($g) . pack('l> l>', 10000, 10000) . str('')
	  . (defined $instance ? str($instance) : '') . str('consumer')
	  . pack('l>', 1) . str('range') . pack('l>', length $subscription) . $subscription;
	my $r = call(11, $ver, $body);
	my ($err, $gen, $proto, $leader, $member) = unpack('x4 ' . ($ver >= 2 ? 'x4 ' : '') . 's> l> n/a n/a n/a', $r);
	die "JoinGroup v$ver: error $err\n" if $err;
	$body = str($g) . pack('l>', $gen) . str($member) . (defined $instance ? str($instance) : '')
	  . pack('l>', 1) . str($member) . pack('l>', length $assignment) . $assignment;
	$err = unpack('x4 x4 s>', call(14, defined $instance ? 3 : 1, $body));
	die "SyncGroup: error $err\n" if $err;
	return ($member, $gen);
}

my ($member, $gen) = join_group($group);
my ($smember, $sgen) = join_group("$group-static", 'inst-1');

# InitProducerId v1, asked again while the coordinator loads or the id is busy
my ($err, $pid, $epoch);
for (1 .. 50) {
	($err, $pid, $epoch) = unpack('x4 x4 s> q> s>', call(22, 1, str($txn) . pack('l>', 60000)));
	last unless $err == 14 || $err == 51;
	select(undef, undef, undef, 0.2);
}
die "InitProducerId: error $err\n" if $err;
my $ids = str($txn) . pack('q> s>', $pid, $epoch);
for my $g ($group, "$group-static") {
	$err = unpack('x4 x4 s>', call(25, 1, $ids . str($g)));
	die "AddOffsetsToTxn $g: error $err\n" if $err;
}

# TxnOffsetCommit of partition 0 at OFFSET: the partition's error
sub txn_commit {
	my ($ver, $g, $gen, $member, $instance, $offset) = @_;
	my $body;
	if ($ver >= 3) {
		$body = cstr($txn) . cstr($g) . pack('q> s> l>', $pid, $epoch, $gen) . cstr($member) . cstr($instance)
		  . uvarint(2) . cstr($topic) . uvarint(2) . pack('l> q> l>', 0, $offset, -1) . cstr(undef) . "\0\0\0";
		my $r = call(28, $ver, $body, 1);
		# correlation id, header tags, throttle time, topics: 1, the name, partitions: 1, its index
		return unpack('x' . (4 + 1 + 4 + 1 + 1 + length($topic) + 1 + 4) . ' s>', $r);
	}
	$body = str($txn) . str($g) . pack('q> s>', $pid, $epoch) . pack('l>', 1) . str($topic)
	  . pack('l> l> q> l>', 1, 0, $offset, -1) . str(undef);
	my $r = call(28, $ver, $body);
	return unpack('x' . (4 + 4 + 4 + 2 + length($topic) + 4 + 4) . ' s>', $r);
}

print "unknown-member ", txn_commit(3, $group, $gen + 1, 'no-such-member', undef, 3), "\n";
print "wrong-generation ", txn_commit(3, $group, $gen + 1, $member, undef, 4), "\n";
print "member ", txn_commit(3, $group, $gen, $member, undef, 7), "\n";
print "no-member ", txn_commit(3, $group, -1, '', undef, 7), "\n";
print "v2 ", txn_commit(2, $group, -1, '', undef, 7), "\n";
print "fenced-instance ", txn_commit(3, "$group-static", $sgen, 'another-id', 'inst-1', 5), "\n";
print "static ", txn_commit(3, "$group-static", $sgen, $smember, 'inst-1', 6), "\n";

# LeaveGroup v1: the member is gone, as after its session expired
$err = unpack('x4 x4 s>', call(13, 1, str($group) . str($member)));
die "LeaveGroup: error $err\n" if $err;
print "zombie ", txn_commit(3, $group, $gen, $member, undef, 9), "\n";

$err = unpack('x4 x4 s>', call(26, 1, $ids . pack('c', 1)));
print "end-txn $err\n";
