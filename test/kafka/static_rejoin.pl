# A static leader's restart on the wire, for groups.sh (KIP-345, as
# Kafka's updateStaticMemberAndRebalance answers it): instance "lead"
# joins GROUP alone (JoinGroup v5, protocols range and roundrobin, range
# metadata "a") and syncs generation G; restarted (no member id) with
# other range metadata ("b") it keeps G, and JoinGroup v5 names its old id
# as the leader's and lists no members; its SyncGroup gets the assignment
# of G; again with v9, it is named the leader with the members (its new
# metadata "c") and skip_assignment; restarted with roundrobin only, which
# changes the group's protocol, the group rebalances.  Prints one line per
# step: "STEP error generation protocol leader-is-me members skip [metadata]".
#   static_rejoin.pl PORT GROUP
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(kafka_connect kafka_request str uvarint cstr read_varint read_cstr);

my ($port, $group) = @ARGV;
die "usage: static_rejoin.pl PORT GROUP\n" unless defined $group;
my $sock = kafka_connect($port);


# JoinGroup v5 or v9 of instance "lead" without a member id, with PROTOS
# [[name, metadata]...]: { error, generation, protocol, leader, skip, member, members => [[id, metadata]...] }
sub join_group {
	my ($ver, @protos) = @_;
	my %r;
	if ($ver < 6) {
		my $body = str($group) . pack('l> l>', 10000, 10000) . str('') . str('lead') . str('consumer')
		  . pack('l>', scalar @protos) . join('', map { str($_->[0]) . pack('l>', length $_->[1]) . $_->[1] } @protos);
		my $resp = kafka_request($sock, 'static_rejoin.pl', 11, $ver, $body, 0, 30) // die "JoinGroup: no answer\n";
		my ($err, $gen, $proto, $leader, $member, $n, $rest) = unpack('x4 x4 s> l> n/a n/a n/a l> a*', $resp);
		%r = (error => $err, generation => $gen, protocol => $proto, leader => $leader, member => $member, skip => '-');
		for (1 .. $n) {
			my ($id, $inst, $meta);
			($id, $inst, $meta, $rest) = unpack('n/a n/a l>/a a*', $rest);
			push @{ $r{members} }, [$id, $meta];
		}
		return \%r;
	}
	my $body = cstr($group) . pack('l> l>', 10000, 10000) . cstr('') . cstr('lead') . cstr('consumer')
	  . uvarint(@protos + 1) . join('', map { cstr($_->[0]) . cstr($_->[1]) . "\0" } @protos) . cstr(undef) . "\0";
	my $resp = kafka_request($sock, 'static_rejoin.pl', 11, $ver, $body, 1, 30) // die "JoinGroup: no answer\n";
	my $pos = 4 + 1 + 4;
	($r{error}, $r{generation}) = unpack("x$pos s> l>", $resp);
	$pos += 6;
	read_cstr(\$resp, \$pos);    # protocol type
	$r{protocol} = read_cstr(\$resp, \$pos);
	$r{leader} = read_cstr(\$resp, \$pos);
	$r{skip} = unpack("x$pos c", $resp);
	$pos++;
	$r{member} = read_cstr(\$resp, \$pos);
	my $n = read_varint(\$resp, \$pos) - 1;
	for (1 .. $n) {
		my $id = read_cstr(\$resp, \$pos);
		read_cstr(\$resp, \$pos);    # instance id
		push @{ $r{members} }, [$id, read_cstr(\$resp, \$pos)];
		read_varint(\$resp, \$pos);    # tags
	}
	return \%r;
}

# SyncGroup v3 of MEMBER at GEN, with ASSIGNMENTS [[id, bytes]...]: (error, assignment)
sub sync_group {
	my ($member, $gen, @assign) = @_;
	my $body = str($group) . pack('l>', $gen) . str($member) . str('lead')
	  . pack('l>', scalar @assign) . join('', map { str($_->[0]) . pack('l>', length $_->[1]) . $_->[1] } @assign);
	my $resp = kafka_request($sock, 'static_rejoin.pl', 14, 3, $body, 0, 30) // die "SyncGroup: no answer\n";
	return unpack('x4 x4 s> l>/a', $resp);
}

sub show {
	my ($step, $r) = @_;
	my @m = @{ $r->{members} // [] };
	print join(' ', $step, $r->{error}, $r->{generation}, $r->{protocol} // '-',
		($r->{leader} // '') eq $r->{member} ? 'leader' : 'follower', scalar @m, $r->{skip},
		map { $_->[1] } @m), "\n";
}

my $first = join_group(5, ['range', 'a'], ['roundrobin', 'x']);
show('first', $first);
my ($err) = sync_group($first->{member}, $first->{generation}, [$first->{member}, 'A']);
print "first-sync $err\n";

my $b = join_group(5, ['range', 'b'], ['roundrobin', 'x']);
show('restart-v5', $b);
print "restart-v5-leader-was-old ", ($b->{leader} eq $first->{member} ? 'yes' : 'no'), "\n";
my ($err2, $assign) = sync_group($b->{member}, $b->{generation});
print "restart-v5-sync $err2 $assign\n";

my $c = join_group(9, ['range', 'c'], ['roundrobin', 'x']);
show('restart-v9', $c);

my $d = join_group(5, ['roundrobin', 'y']);
show('restart-new-protocol', $d);
