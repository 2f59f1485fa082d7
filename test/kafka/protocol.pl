# Raw Kafka protocol checks against mq-kafka (run by protocol.sh with the
# broker's port as argument): well-formed requests get answers, and each
# kind of bad input gets its Kafka error code or a closed connection,
# never a crash or a hang.  Prints TAP.
#   protocol.pl PORT sasl USER OTHER  # against --sasl=plain (sasl.sh): only
#                                 # the SASL checks; USER's password in
#                                 # MQ_SASL_PASSWORD, OTHER's (a role
#                                 # without rights on topic sasl_t) in
#                                 # MQ_SASL_PASSWORD_OTHER
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(:DEFAULT ok tap_done);
use Compress::Zlib ();

my $port = shift or die "usage: protocol.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';	# a closed connection fails its check, not the script


# a record batch: records are [key, value, [header key, header value]...]
sub batch {
	my (%o) = @_;
	my $recs = '';
	my $i = 0;
	for my $r (@{ $o{records} }) {
		my ($k, $v, @h) = @$r;
		my $body = "\0" . varint(0) . varint($i++) . vbytes($k) . vbytes($v) . varint(@h / 2);
		$body .= vbytes(shift @h) . vbytes(shift @h) while @h;
		$recs .= varint(length $body) . $body;
	}
	$recs = $o{compress}->($recs) if $o{compress};
	my $rest = pack('s> l> q> q> q> s> l> l>', $o{attributes} // 0, $i - 1, 0, 0, -1, -1, -1, $i) . $recs;
	my $crc = crc32c($rest);
	$crc ^= 1 if $o{bad_crc};
	return pack('q> l> l> C N', 0, 9 + length $rest, 0, 2, $crc) . $rest;
}

sub connect_broker {
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
	  or die "connect: $!\n";
	return $sock;
}

# send one request, return the response body after the correlation id, or
# undef when the broker closed the connection
sub call {
	my ($sock, $api, $ver, $body, %o) = @_;
	my $hdr = pack('s> s> l>', $api, $ver, 7) . str('protocol.pl');
	$hdr .= "\0" if $o{flexible};
	my $frame = $hdr . $body;
	$sock->syswrite(defined $o{size} ? pack('l>', $o{size}) . $frame : pack('l>', length $frame) . $frame);
	return $o{nowait} ? '' : reply($sock);
}

# the next response's body after the correlation id; undef when the broker
# closed the connection, 'timeout' after 10 s
sub reply {
	my ($sock) = @_;
	my $sel = IO::Select->new($sock);
	my $buf = '';
	while (1) {
		return 'timeout' unless $sel->can_read(10);
		my $got = $sock->sysread($buf, 65536, length $buf);
		return undef unless $got;
		if (length $buf >= 4) {
			my $size = unpack('l>', $buf);
			return substr($buf, 8, $size - 4) if length $buf >= 4 + $size;
		}
	}
}

sub produce_body {
	my ($topic, $records) = @_;
	return str(undef) . pack('s> l> l>', 1, 5000, 1) . str($topic) . pack('l> l> l>', 1, 0, length $records) . $records;
}

# the partition error code, base offset and log_append_time of a Produce
# v3 response
sub produce_result {
	my $r = shift;
	return (undef, undef) unless defined $r && $r ne 'timeout';
	my $tlen = unpack('x4 n', $r);
	my ($err, $base, $append) = unpack("x4 x2 x$tlen x4 x4 s> q> q>", $r);
	return ($err, $base, $append);
}

# SaslHandshake v1: (error, [mechanisms]), or undef when closed
sub handshake {
	my ($sock, $mech) = @_;
	my $r = call($sock, 17, 1, str($mech));
	return undef unless defined $r && $r ne 'timeout';
	my ($e, $cnt) = unpack('s> l>', $r);
	my ($pos, @m) = (6);
	for (1 .. $cnt) { my $l = unpack("x$pos n", $r); push @m, substr($r, $pos + 2, $l); $pos += 2 + $l; }
	return ($e, \@m);
}

# SaslAuthenticate v1: (error, message, session_lifetime_ms), or () when closed
sub authenticate {
	my ($sock, $token) = @_;
	my $r = call($sock, 36, 1, pack('l>', length $token) . $token);
	return () unless defined $r && $r ne 'timeout';
	my ($e, $ml) = unpack('s> s>', $r);
	my $msg = $ml < 0 ? undef : substr($r, 4, $ml);
	my $pos = 4 + ($ml < 0 ? 0 : $ml);
	my $bl = unpack("x$pos l>", $r);
	my $life = unpack('x' . ($pos + 4 + ($bl < 0 ? 0 : $bl)) . ' q>', $r);
	return ($e, $msg, $life);
}

sub closed { my $r = call($_[0], 18, 0, ''); return !defined $r }

sub authenticated {
	my ($user, $password) = @_;
	my $s = connect_broker();
	handshake($s, 'PLAIN');
	my ($e) = authenticate($s, "\0$user\0$password");
	die "cannot authenticate as $user\n" unless defined $e && $e == 0;
	return $s;
}

# Fetch v4 of sasl_t partition 0 from an offset, 1 byte per partition (so
# at least one record, and the rest left for a read-ahead): (error, the
# offset after the last record returned)
sub fetch_one {
	my ($s, $offset) = @_;
	my $body = pack('l> l> l> l> c l>', -1, 0, 1, 1 << 20, 0, 1) . str('sasl_t') . pack('l> l> q> l>', 1, 0, $offset, 1);
	my $r = call($s, 1, 4, $body);
	return (undef, undef) unless defined $r && $r ne 'timeout';
	my $tlen = unpack('x8 n', $r);
	my $pos = 8 + 2 + $tlen + 4;
	my ($err, $naborted) = unpack("x$pos x4 s> x8 x8 l>", $r);
	$pos += 4 + 2 + 16 + 4 + ($naborted > 0 ? 16 * $naborted : 0);
	my $rlen = unpack("x$pos l>", $r);
	my $recs = $rlen > 0 ? substr($r, $pos + 4, $rlen) : '';
	my $next = $offset;
	while (length $recs >= 61) {
		my ($base, $blen) = unpack('q> l>', $recs);
		$next = $base + unpack('x23 l>', $recs) + 1;
		substr($recs, 0, 12 + $blen) = '';
	}
	return ($err, $next);
}

# more simultaneous authentications than the daemon checks at once (its
# --pool): they wait their turn, and every one succeeds
sub concurrent_check {
	my ($user, $password, $n) = @_;
	my @socks = map { my $s = connect_broker(); handshake($s, 'PLAIN'); $s } 1 .. $n;
	my $token = "\0$user\0$password";
	for my $s (@socks) {
		my $frame = pack('s> s> l>', 36, 1, 7) . str('protocol.pl') . pack('l>', length $token) . $token;
		$s->syswrite(pack('l>', length $frame) . $frame);
	}
	my $good = 0;
	for my $s (@socks) {
		my ($buf, $sel) = ('', IO::Select->new($s));
		while ($sel->can_read(20) && $s->sysread($buf, 65536, length $buf)) {
			last if length $buf >= 4 && length $buf >= 4 + unpack('l>', $buf);
		}
		$good++ if length $buf >= 10 && unpack('x8 s>', $buf) == 0;
	}
	ok($good == $n, "$n simultaneous authentications all succeed", "$good of $n");
}

# a read-ahead made for one role's Fetch is not given to another role
sub read_ahead_check {
	my ($user, $password, $other, $other_password) = @_;
	my $o = authenticated($other, $other_password);
	my $u = authenticated($user, $password);
	my ($e, $next) = fetch_one($u, 0);
	ok(defined $e && $e == 0 && $next > 0, "$user fetches from offset 0", 'got ' . ($e // 'closed'));
	my ($oe, $onext) = fetch_one($o, $next);
	ok(defined $oe && ($oe == 29 || $oe == 3) && $onext == $next,
		"$other, without rights, asking what was read ahead for $user gets no records but TOPIC_AUTHORIZATION_FAILED or UNKNOWN_TOPIC_OR_PARTITION",
		'got ' . ($oe // 'closed') . ', next offset ' . ($onext // '-'));
}

sub sasl_checks {
	my ($user, $password) = @_;
	my $s = connect_broker();
	my $r = call($s, 18, 0, '');
	my ($err, $count) = unpack('s> l>', $r);
	my %ranges = map { my ($k, $lo, $hi) = unpack('s> s> s>', substr($r, 6 + 6 * $_, 6)); ($k => "$lo-$hi") } 0 .. $count - 1;
	ok(($ranges{17} // '') eq '0-1' && ($ranges{36} // '') eq '0-2', 'ApiVersions lists SaslHandshake 0-1 and SaslAuthenticate 0-2');
	$r = call($s, 3, 1, pack('l>', -1));
	ok(!defined $r, 'a Metadata request before authentication closes the connection');

	$s = connect_broker();
	my ($e, $mechs) = handshake($s, 'SCRAM-SHA-256');
	ok(defined $e && $e == 33 && "@$mechs" eq 'PLAIN', 'an unknown mechanism gets UNSUPPORTED_SASL_MECHANISM and the list [PLAIN]',
		'got ' . ($e // 'closed'));
	ok(closed($s), 'and the connection is closed');

	# v0: the token follows as a bare frame, answered by a bare frame (kafka-python 2.0.2)
	$s = connect_broker();
	$r = call($s, 17, 0, str('PLAIN'));
	ok(defined $r && unpack('s>', $r) == 0, 'SaslHandshake v0 PLAIN is accepted');
	my $tok = "\0$user\0$password";
	$s->syswrite(pack('l>', length $tok) . $tok);
	my $got = '';
	IO::Select->new($s)->can_read(10) && $s->sysread($got, 4);
	ok($got eq pack('l>', 0), 'a bare PLAIN token is answered by an empty bare frame', 'got ' . unpack('H*', $got));
	$r = call($s, 3, 1, pack('l>', -1));
	ok(defined $r && $r ne 'timeout', 'then Metadata is answered');
	$s = connect_broker();
	call($s, 17, 0, str('PLAIN'));
	$tok = "\0$user\0$password-wrong";
	$s->syswrite(pack('l>', length $tok) . $tok);
	ok(closed($s), 'a bare token with a wrong password closes the connection');

	$s = connect_broker();
	($e) = authenticate($s, "\0$user\0$password");
	ok(!defined $e && closed($s), 'SaslAuthenticate before SaslHandshake: closed without an answer, as Kafka does');

	my %msg;
	for my $case (['no NUL', 'plainly'], ['one NUL', "$user\0$password"], ['three NULs', "\0$user\0$password\0"],
		['empty password', "\0$user\0"], ['a 300-byte user', "\0" . ('u' x 300) . "\0x"],
		['another authzid', "other\0$user\0$password"], ['wrong password', "\0$user\0$password-wrong"],
		['unknown user', "\0mq_sasl_nobody\0$password"], ['a newline in the user', "\0mq_sasl_x\nforged: line\0$password"]) {
		$s = connect_broker();
		($e) = handshake($s, 'PLAIN');
		my ($ae, $m) = authenticate($s, $case->[1]);
		ok(defined $ae && $ae == 58 && closed($s), "a token with $case->[0] gets SASL_AUTHENTICATION_FAILED, then the connection closes",
			'got ' . ($ae // 'closed'));
		$msg{ $case->[0] } = $m // '';
	}
	ok($msg{'wrong password'} eq $msg{'unknown user'} && $msg{'wrong password'} ne '',
		'a wrong password and an unknown user get the same message', "'$msg{'wrong password'}' vs '$msg{'unknown user'}'");

	$s = connect_broker();
	($e) = handshake($s, 'PLAIN');
	ok(defined $e && $e == 0, 'SaslHandshake PLAIN');
	my ($ae, $m, $life) = authenticate($s, "\0$user\0$password");
	ok(defined $ae && $ae == 0 && !defined $m && $life == 0, 'the right password authenticates, session_lifetime_ms 0',
		'got ' . ($ae // 'closed') . ' ' . ($m // ''));
	$r = call($s, 3, 1, pack('l>', -1));
	ok(defined $r && $r ne 'timeout', 'then Metadata is answered');
	($e) = handshake($s, 'PLAIN');
	ok(defined $e && $e == 34, 'a second SaslHandshake gets ILLEGAL_SASL_STATE');
}

sub bytes { defined $_[0] ? pack('l>', length $_[0]) . $_[0] : pack('l>', -1) }
sub rd_str { my ($r, $pos) = @_; my $l = unpack("x$pos s>", $r); return ($l < 0 ? undef : substr($r, $pos + 2, $l), $pos + 2 + ($l < 0 ? 0 : $l)) }

# a principal without rights on a group cannot use another's membership:
# DescribeGroups, Heartbeat, SyncGroup and LeaveGroup get
# GROUP_AUTHORIZATION_FAILED and ListGroups leaves the group out, as in
# Kafka; the member itself goes on
sub group_hijack_check {
	my ($user, $password, $other, $other_password, $group) = @_;
	my $u = authenticated($user, $password);
	my $r = call($u, 11, 0, str($group) . pack('l>', 10000) . str('') . str('consumer') . pack('l>', 1) . str('range') . bytes("\0\0\0\0\0\0\0\0\0\0"));
	my $err = defined $r && $r ne 'timeout' ? unpack('s>', $r) : undef;
	ok(defined $err && $err == 0, "$user joins group $group", 'got ' . ($err // 'closed'));
	return unless defined $err && $err == 0;
	my $gen = unpack('x2 l>', $r);
	my ($proto, $pos) = rd_str($r, 6);
	(undef, $pos) = rd_str($r, $pos);
	my ($member) = rd_str($r, $pos);
	$r = call($u, 14, 0, str($group) . pack('l>', $gen) . str($member) . pack('l>', 1) . str($member) . bytes('secret-assignment'));
	ok(defined $r && unpack('s>', $r) == 0, "$user syncs as the group's leader");

	my $o = authenticated($other, $other_password);
	$r = call($o, 15, 0, pack('l>', 1) . str($group));
	my ($de, $dg) = (unpack('x4 s>', $r), rd_str($r, 6));
	ok($de == 30, "$other describing $group gets GROUP_AUTHORIZATION_FAILED", "got $de");
	$r = call($o, 16, 0, '');
	ok(defined $r && unpack('s>', $r) == 0 && index($r, $group) < 0, "ListGroups for $other leaves $group out");
	$r = call($o, 12, 0, str($group) . pack('l>', $gen) . str($member));
	ok(defined $r && unpack('s>', $r) == 30, "${other}'s Heartbeat as ${user}'s member gets GROUP_AUTHORIZATION_FAILED",
		'got ' . (defined $r ? unpack('s>', $r) : 'closed'));
	$r = call($o, 14, 0, str($group) . pack('l>', $gen) . str($member) . pack('l>', 0));
	ok(defined $r && unpack('s>', $r) == 30 && index($r, 'secret-assignment') < 0,
		"${other}'s SyncGroup gets GROUP_AUTHORIZATION_FAILED, not the assignment");
	$r = call($o, 13, 0, str($group) . str($member));
	ok(defined $r && unpack('s>', $r) == 30, "${other}'s LeaveGroup gets GROUP_AUTHORIZATION_FAILED");

	$r = call($u, 12, 0, str($group) . pack('l>', $gen) . str($member));
	ok(defined $r && unpack('s>', $r) == 0, "$user is still a member: its Heartbeat is answered NONE");
	$r = call($u, 15, 0, pack('l>', 1) . str($group));
	ok(defined $r && unpack('x4 s>', $r) == 0 && index($r, $member) >= 0, "$user describes the group and sees its member");
	$r = call($u, 16, 0, '');
	ok(defined $r && index($r, $group) >= 0, "ListGroups for $user lists $group");
	$r = call($u, 13, 0, str($group) . str($member));
	ok(defined $r && unpack('s>', $r) == 0, "$user leaves");
}

if (($ARGV[0] // '') eq 'sasl') {
	sasl_checks($ARGV[1], $ENV{MQ_SASL_PASSWORD} // die "MQ_SASL_PASSWORD not set\n");
	read_ahead_check($ARGV[1], $ENV{MQ_SASL_PASSWORD}, $ARGV[2], $ENV{MQ_SASL_PASSWORD_OTHER});
	concurrent_check($ARGV[1], $ENV{MQ_SASL_PASSWORD}, 12);
	group_hijack_check($ARGV[1], $ENV{MQ_SASL_PASSWORD}, $ARGV[2], $ENV{MQ_SASL_PASSWORD_OTHER}, 'sasl_g');
	tap_done();
}

my $s = connect_broker();

# ApiVersions v0, v3 (flexible request header; a client software name or
# version outside KIP-511's pattern refused), and one too new
my $r = call($s, 18, 0, '');
my ($err, $count) = unpack('s> l>', $r);
my %ranges = map { my ($k, $lo, $hi) = unpack('s> s> s>', substr($r, 6 + 6 * $_, 6)); ($k => "$lo-$hi") } 0 .. $count - 1;
ok($err == 0 && $ranges{0} eq '0-11' && $ranges{1} eq '0-17', 'ApiVersions v0 lists Produce 0-11 and Fetch 0-17 (Kafka 3.9)',
	"error $err, $ranges{0}, $ranges{1}");
$r = call($s, 18, 3, "\x0Cprotocol.pl\x021\0", flexible => 1);
ok(defined $r && unpack('s>', $r) == 0 && unpack('x2 C', $r) == $count + 1, 'ApiVersions v3 answers with a compact array');
for my $id (["bad name!", '1'], ['protocol.pl', '1.0-'], ['', '1']) {
	my $body = join('', map { chr(length($_) + 1) . $_ } @$id) . "\0";
	$r = call($s, 18, 3, $body, flexible => 1);
	ok(defined $r && unpack('s>', $r) == 42 && unpack('x2 C', $r) == 1,
		"ApiVersions v3 from client software \"$id->[0]\" version \"$id->[1]\": INVALID_REQUEST, no ranges (KIP-511)",
		defined $r ? 'error ' . unpack('s>', $r) . ', ' . (unpack('x2 C', $r) - 1) . ' ranges' : 'closed');
}
$r = call($s, 18, 99, '');
ok(defined $r && unpack('s>', $r) == 35, 'ApiVersions v99 gets UNSUPPORTED_VERSION');

# produce: good, bad CRC, headers, truncated, bomb, transactional, unknown topic
($err, my $base, my $append) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'v'], [undef, 'w']]))));
ok(defined $err && $err == 0 && $base == 0, 'a valid batch is appended at offset 0', "error " . ($err // 'none'));
ok(defined $append && $append == -1, 'a CreateTime topic answers log_append_time -1', "got " . ($append // 'none'));
# a LogAppendTime topic answers the time mq stamped: protocol.sh compares
# it with the stored record's
($err, $base, $append) = produce_result(call($s, 0, 3, produce_body('plat', batch(records => [['k', 'v'], ['k', 'w']]))));
ok(defined $err && $err == 0 && defined $append && $append > 0, 'a LogAppendTime topic answers a log_append_time',
	"error " . ($err // 'none') . ", time " . ($append // 'none'));
print "log_append_time $append\n";
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'x']], bad_crc => 1))));
ok(defined $err && $err == 2, 'a wrong CRC gets CORRUPT_MESSAGE');
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'h', 'hk', 'hv', 'hk', undef]]))));
ok(defined $err && $err == 0, 'a record with headers (a repeated key, a null value) is stored');
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'u', "\xff\xfe", 'v']]))));
ok(defined $err && $err == 87, 'a header key that is not UTF-8 text gets INVALID_RECORD');
my $b = batch(records => [['k', 'truncated']]);
($err) = produce_result(call($s, 0, 3, produce_body('pt', substr($b, 0, length($b) - 3))));
ok(defined $err && $err == 2, 'a truncated batch gets CORRUPT_MESSAGE');
my $bomb = sub { Compress::Zlib::memGzip($_[0] . ("\0" x (8 * 1024 * 1024))) };
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'b']], attributes => 1, compress => $bomb))));
ok(defined $err && $err == 10, 'a gzip bomb over --max-batch-bytes gets MESSAGE_TOO_LARGE', "error " . ($err // 'none'));
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'g']], attributes => 1,
	compress => sub { Compress::Zlib::memGzip($_[0]) }))));
ok(defined $err && $err == 0, 'a small gzip batch is accepted');
# max.message.bytes limits the batch as sent, as Kafka's broker does (pbig: 300)
my @three = map { ['k', chr(ord('a') + $_) x 100] } 0 .. 2;
($err) = produce_result(call($s, 0, 3, produce_body('pbig', batch(records => \@three))));
ok(defined $err && $err == 10, 'a batch over max.message.bytes of records each under it gets MESSAGE_TOO_LARGE',
	"error " . ($err // 'none'));
($err) = produce_result(call($s, 0, 3, produce_body('pbig', batch(records => [$three[0]]))));
ok(defined $err && $err == 0, 'one of its records alone is accepted', "error " . ($err // 'none'));
($err) = produce_result(call($s, 0, 3, produce_body('pbig', batch(records => \@three, attributes => 1,
	compress => sub { Compress::Zlib::memGzip($_[0]) }))));
ok(defined $err && $err == 0, 'the three gzipped, under the limit as sent, are accepted', "error " . ($err // 'none'));
($err) = produce_result(call($s, 0, 3, produce_body('pbig', batch(records => [['k', 'd' x 1000]], attributes => 1,
	compress => sub { Compress::Zlib::memGzip($_[0]) }))));
ok(defined $err && $err == 0, 'so is a record over the limit, gzipped under it', "error " . ($err // 'none'));
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 't']], attributes => 0x10))));
ok(defined $err && $err == 87, 'a transactional batch without a transactional id gets INVALID_RECORD');
($err) = produce_result(call($s, 0, 3, produce_body('nosuchtopic', batch(records => [['k', 'v']]))));
ok(defined $err && $err == 3, 'an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION');
($err) = produce_result(call($s, 0, 3, produce_body('pt', batch(records => [['k', 'c']], attributes => 7))));
ok(defined $err && $err == 76, 'an unknown codec gets UNSUPPORTED_COMPRESSION_TYPE');

# fetch beyond the high watermark: OFFSET_OUT_OF_RANGE
$r = call($s, 1, 4, pack('l> l> l> l> C', -1, 0, 1, 1048576, 0) . pack('l>', 1) . str('pt')
	  . pack('l> l> q> l>', 1, 0, 1000, 1048576));
my $tl = length 'pt';
ok(defined $r && unpack("x4 x4 x2 x$tl x4 x4 s>", $r) == 1, 'a fetch beyond the log end gets OFFSET_OUT_OF_RANGE');
# phw: 3 records, high watermark 0 (protocol.sh).  Between the high
# watermark and the log end: no error and no records, as Kafka answers a
# new leader's consumers before its high watermark catches up; beyond the
# log end: OFFSET_OUT_OF_RANGE
for my $case ([2, 0, 'between the high watermark and the log end: no error'],
	[4, 1, 'beyond the log end of a partition whose high watermark lags: OFFSET_OUT_OF_RANGE'])
{
	my ($offset, $want, $what) = @$case;
	$r = call($s, 1, 4, pack('l> l> l> l> C', -1, 0, 1, 1048576, 0) . pack('l>', 1) . str('phw')
		  . pack('l> l> q> l>', 1, 0, $offset, 1048576));
	my $hl = length 'phw';
	my ($e, $hw, $lso, $naborted, $rlen) =
	  defined $r ? unpack("x4 x4 x2 x$hl x4 x4 s> q> q> l> l>", $r) : (-1, -1, -1, -1, -1);
	ok($e == $want && $hw == 0 && $rlen <= 0, "Fetch v4 at $offset $what",
		"error $e, high watermark $hw, records $rlen bytes");
}

# DeleteRecords v1 on topic pdel (3 records): the new low watermark, or
# the error of each partition
sub delete_records {
	my ($sock, @parts) = @_;
	my $body = pack('l>', 1) . str('pdel') . pack('l>', scalar @parts);
	$body .= pack('l> q>', @$_) for @parts;
	my $r = call($sock, 21, 1, $body . pack('l>', 5000));
	return () unless defined $r && $r ne 'timeout';
	my @out;
	my $np = unpack('x4 x4 x2 x4 l>', $r);
	push @out, [unpack('l> q> s>', substr($r, 18 + 14 * $_, 14))] for 0 .. $np - 1;
	return @out;
}
my @dr = delete_records($s, [0, 2], [7, 1], [0, 99]);
ok(@dr == 3 && $dr[0][1] == 2 && $dr[0][2] == 0, 'DeleteRecords up to 2 answers the low watermark 2',
	join(' ', map { "@$_" } @dr));
ok(@dr == 3 && $dr[1][0] == 7 && $dr[1][2] == 3, 'DeleteRecords of an unknown partition: UNKNOWN_TOPIC_OR_PARTITION');
ok(@dr == 3 && $dr[2][1] == -1 && $dr[2][2] == 1, 'DeleteRecords beyond the high watermark: OFFSET_OUT_OF_RANGE');
ok(!defined call(connect_broker(), 21, 1, pack('l>', 1) . str('pdel') . pack('l>', 100000)),
	'a DeleteRecords whose partition count exceeds its bytes closes the connection');

# DescribeGroups v0 of one group: its state, protocol and members
# ([id, metadata, assignment, client host]...)
sub describe_group {
	my ($sock, $group) = @_;
	my $r = call($sock, 15, 0, pack('l>', 1) . str($group));
	return () unless defined $r && $r ne 'timeout';
	my ($state, $proto, $pos, @members);
	($state, $pos) = rd_str($r, 4 + 2 + 2 + length $group);
	(undef, $pos) = rd_str($r, $pos);
	($proto, $pos) = rd_str($r, $pos);
	my $count = unpack("x$pos l>", $r);
	$pos += 4;
	for (1 .. $count) {
		my ($id, $host, $meta, $asg);
		($id, $pos) = rd_str($r, $pos);
		(undef, $pos) = rd_str($r, $pos);
		($host, $pos) = rd_str($r, $pos);
		($meta, $asg) = unpack("x$pos l>/a l>/a", $r);
		$pos += 8 + length($meta) + length($asg);
		push @members, [$id, $meta, $asg, $host];
	}
	return ($state, $proto, @members);
}

# DescribeGroups as Kafka's coordinator summarizes a group: the protocol
# and each member's metadata and assignment only while it is Stable;
# during a rebalance the protocol is "" and both are empty
{
	my $meta = "\0\0\0\0\0\0\0\0\0\0";
	my $join = str('dg') . pack('l>', 10000) . str('') . str('consumer') . pack('l>', 1) . str('range') . bytes($meta);
	my $a = connect_broker();
	my $j = call($a, 11, 0, $join);
	my ($gen, $member) = (unpack('x2 l>', $j), undef);
	my (undef, $pos) = rd_str($j, 6);
	(undef, $pos) = rd_str($j, $pos);
	($member) = rd_str($j, $pos);
	call($a, 14, 0, str('dg') . pack('l>', $gen) . str($member) . pack('l>', 1) . str($member) . bytes('asg'));
	my ($state, $proto, @m) = describe_group($s, 'dg');
	ok(($state // '') eq 'Stable' && $proto eq 'range' && @m == 1 && $m[0][1] eq $meta && $m[0][2] eq 'asg',
		'DescribeGroups of a stable group: its protocol, the member\'s metadata and assignment',
		"state " . ($state // 'none') . ", protocol " . ($proto // 'none'));
	ok(@m == 1 && $m[0][3] eq '/127.0.0.1', 'the member\'s client host in Kafka\'s form', 'got ' . ($m[0][3] // 'none'));
	my $b = connect_broker();
	call($b, 11, 0, $join, nowait => 1);	# parks until the group rebalances
	my $deadline = time + 10;
	do { ($state, $proto, @m) = describe_group($s, 'dg') } while (($state // '') ne 'PreparingRebalance' && time < $deadline);
	ok(($state // '') eq 'PreparingRebalance' && $proto eq '' && @m == 2 && !grep({ $_->[1] ne '' || $_->[2] ne '' } @m),
		'DescribeGroups during a rebalance: no protocol, members without metadata or assignment (as Kafka)',
		"state " . ($state // 'none') . ", protocol '" . ($proto // '') . "', " . scalar(@m) . ' members');

	# the leader rejoins, the rebalance completes, both sync: stable again
	my $rejoin = sub { str('dg') . pack('l>', 10000) . str($_[0]) . str('consumer') . pack('l>', 1) . str('range') . bytes($_[1] // $meta) };
	$j = call($a, 11, 0, $rejoin->($member));
	my $bj = reply($b);
	$gen = unpack('x2 l>', $j);
	(undef, $pos) = rd_str($bj, 6);
	(undef, $pos) = rd_str($bj, $pos);
	my ($follower) = rd_str($bj, $pos);
	call($b, 14, 0, str('dg') . pack('l>', $gen) . str($follower) . pack('l>', 0), nowait => 1);
	call($a, 14, 0, str('dg') . pack('l>', $gen) . str($member) . pack('l>', 2) . str($member) . bytes('a1') . str($follower) . bytes('b1'));
	my $bs = reply($b);
	ok(defined $bs && unpack('s>', $bs) == 0 && unpack('x2 l>/a', $bs) eq 'b1', 'the rebalance completes: the follower gets its assignment');

	# a follower that joins again with the same protocols gets the current
	# generation, and the group stays stable (Kafka's coordinator); new
	# metadata rebalances it
	my $again = call($b, 11, 0, $rejoin->($follower));
	($state) = describe_group($s, 'dg');
	ok(defined $again && $again ne 'timeout' && unpack('s>', $again) == 0 && unpack('x2 l>', $again) == $gen && $state eq 'Stable',
		'a follower joining again unchanged gets the current generation, no rebalance',
		'error ' . (defined $again && $again ne 'timeout' ? unpack('s>', $again) : 'none') . ", state $state");
	call($b, 11, 0, $rejoin->($follower, "\0\0\0\0\0\0\0\0\0\1"), nowait => 1);
	$deadline = time + 10;
	do { ($state) = describe_group($s, 'dg') } while ($state ne 'PreparingRebalance' && time < $deadline);
	ok($state eq 'PreparingRebalance', 'a follower joining with new metadata starts a rebalance', "state $state");
	close $a;
	close $b;
}

# SyncGroup v5 names the group's protocol type and protocol: ones the
# group does not have are INCONSISTENT_GROUP_PROTOCOL, as in Kafka
{
	my $c = connect_broker();
	my $j = call($c, 11, 0, str('sp') . pack('l>', 10000) . str('') . str('consumer') . pack('l>', 1) . str('range') . bytes("\0\0\0\0\0\0\0\0\0\0"));
	my $gen = unpack('x2 l>', $j);
	my (undef, $pos) = rd_str($j, 6);
	(undef, $pos) = rd_str($j, $pos);
	my ($member) = rd_str($j, $pos);
	my $cs = \&KafkaWire::cstr;
	my $sync5 = sub {
		my ($type, $name) = @_;
		my $r = call($c, 14, 5, $cs->('sp') . pack('l>', $gen) . $cs->($member) . $cs->(undef) . $cs->($type) . $cs->($name)
			  . "\x02" . $cs->($member) . "\x02a" . "\0" . "\0", flexible => 1);
		return defined $r && $r ne 'timeout' ? unpack('x5 s>', $r) : 'none';	# past throttle and the header's tags
	};
	my $e = $sync5->('consumer', 'roundrobin');
	ok($e eq '23', 'SyncGroup v5 naming a protocol the group does not use: INCONSISTENT_GROUP_PROTOCOL', "error $e");
	$e = $sync5->('connect', 'range');
	ok($e eq '23', 'and a protocol type it does not have', "error $e");
	$e = $sync5->('consumer', 'range');
	ok($e eq '0', 'the group\'s own protocol type and protocol sync', "error $e");
	close $c;
}

# KIP-394: a JoinGroup v4+ without a member id gets one and
# MEMBER_ID_REQUIRED, then joins with it; an id mq did not hand out, or
# one not claimed within its session timeout, is UNKNOWN_MEMBER_ID
{
	my $c = connect_broker();
	my $join4 = sub { str('kip394') . pack('l> l>', $_[1] // 10000, 10000) . str($_[0]) . str('consumer') . pack('l>', 1) . str('range') . bytes('m') };
	# error and member id of a JoinGroup v4 answer
	my $answer = sub {
		my ($r) = @_;
		return (undef, undef) unless defined $r && $r ne 'timeout';
		my (undef, $pos) = rd_str($r, 10);
		(undef, $pos) = rd_str($r, $pos);
		my ($id) = rd_str($r, $pos);
		return (unpack('x4 s>', $r), $id);
	};
	my ($e, $id) = $answer->(call($c, 11, 4, $join4->('')));
	ok(($e // -1) == 79 && length($id // ''), 'JoinGroup v4 without a member id: MEMBER_ID_REQUIRED with an id', 'error ' . ($e // 'none'));
	my ($e2, $id2) = $answer->(call($c, 11, 4, $join4->($id)));
	ok(($e2 // -1) == 0 && ($id2 // '') eq $id, 'joining again with that id joins the group under it', 'error ' . ($e2 // 'none'));
	($e) = $answer->(call($c, 11, 4, $join4->('made-up-id')));
	ok(($e // -1) == 25, 'an id the coordinator did not hand out: UNKNOWN_MEMBER_ID', 'error ' . ($e // 'none'));
	($e) = $answer->(call($c, 11, 4, $join4->('', 999)));
	ok(($e // -1) == 26, 'a session timeout below the daemon\'s minimum: INVALID_SESSION_TIMEOUT', 'error ' . ($e // 'none'));
	($e) = $answer->(call($c, 11, 4, $join4->('', 1800001)));
	ok(($e // -1) == 26, 'and above its maximum (Kafka\'s 30 minutes)', 'error ' . ($e // 'none'));
	(undef, $id) = $answer->(call($c, 11, 4, $join4->('', 1000)));
	select(undef, undef, undef, 1.5);	# past the pending id's session timeout
	($e) = $answer->(call($c, 11, 4, $join4->($id, 1000)));
	ok(($e // -1) == 25, 'an id not claimed within its session timeout: UNKNOWN_MEMBER_ID', 'error ' . ($e // 'none'));
	close $c;
}

# DescribeConfigs v0 of broker resources "", another broker's id and this
# one's (1), as Kafka answers them: no configs (the cluster's dynamic
# defaults, none here), INVALID_REQUEST with a message, this broker's
# configs; (error, message, name, count) each
$r = call($s, 32, 0, pack('l>', 3) . join('', map { pack('c', 4) . str($_) . pack('l>', -1) } ('', '7', '1')));
my @dc;
if (defined $r && $r ne 'timeout') {
	my $pos = 8;
	for (1 .. 3) {
		my $err = unpack("x$pos s>", $r);
		my ($msg, $p1) = rd_str($r, $pos + 2);
		my ($name, $p2) = rd_str($r, $p1 + 1);
		my $n = unpack("x$p2 l>", $r);
		push @dc, [$err, $msg // '', $name, $n];
		$pos = $p2 + 4;
		last if $n > 0;	# this broker's configs end the answer
	}
}
ok(@dc == 3 && "@{ $dc[0] }[0,2,3]" eq '0  0' && $dc[1][0] == 42 && $dc[1][1] =~ /unexpected broker id/ && $dc[1][3] == 0
	&& $dc[2][0] == 0 && $dc[2][2] eq '1' && $dc[2][3] > 0,
	'DescribeConfigs of broker "": no configs; of another broker: INVALID_REQUEST; of this one: its configs',
	join(' | ', map { "@$_" } @dc));

# DeleteGroups v1: an empty and an unknown group id
$r = call($s, 42, 1, pack('l>', 2) . str('') . str('nosuchgroup'));
my @dg = defined $r ? unpack('x4 l> n/a s> n/a s>', $r) : ();
ok(@dg == 5 && $dg[2] == 69 && $dg[4] == 69, 'DeleteGroups: GROUP_ID_NOT_FOUND for "" and for an unknown group, as from Kafka',
	"@dg");
ok(!defined call(connect_broker(), 42, 1, pack('l>', 3) . str('g')), 'a truncated DeleteGroups closes the connection');

# IncrementalAlterConfigs v0 of one resource: [name, op, value]...; the
# resource's error code
sub incremental_alter {
	my ($type, $name, $validate, @configs) = @_;
	my $body = pack('l> c', 1, $type) . str($name) . pack('l>', scalar @configs);
	$body .= str($_->[0]) . pack('c', $_->[1]) . str($_->[2]) for @configs;
	my $r = call($s, 44, 0, $body . pack('c', $validate));
	return undef unless defined $r && $r ne 'timeout' && unpack('x4 l>', $r) == 1;
	return unpack('x8 s>', $r);
}
ok((incremental_alter(2, 'pdel', 0, ['retention.ms', 0, '1h'], ['cleanup.policy', 2, 'compact']) // -99) == 0,
	'IncrementalAlterConfigs: SET a key and APPEND to cleanup.policy');
ok((incremental_alter(2, 'pdel', 1, ['retention.ms', 1, undef]) // -99) == 0,
	'IncrementalAlterConfigs validate_only: DELETE accepted (and undone)');
ok((incremental_alter(2, 'pdel', 0, ['retention.ms', 2, '5']) // -99) == 40,
	'IncrementalAlterConfigs APPEND to a key that is not a list: INVALID_CONFIG, as Kafka');
ok((incremental_alter(2, 'pdel', 0, ['retention.ms', 0, 'soon']) // -99) == 40,
	'IncrementalAlterConfigs of a bad value: INVALID_CONFIG');
ok((incremental_alter(2, 'nosuchtopic', 0, ['retention.ms', 0, '1']) // -99) == 3,
	'IncrementalAlterConfigs of an unknown topic: UNKNOWN_TOPIC_OR_PARTITION');
ok((incremental_alter(4, '1', 0, ['log.retention.ms', 0, '1']) // -99) == 42,
	'IncrementalAlterConfigs of a broker: INVALID_REQUEST');
ok(!defined call(connect_broker(), 44, 0, pack('l> c', 1, 2) . str('pdel') . pack('l>', 50000)),
	'a truncated IncrementalAlterConfigs closes the connection');
ok(!defined call(connect_broker(), 44, 2, ''), 'IncrementalAlterConfigs v2 (newer than Kafka 3.9) is not served: closed');

# the old versions default clients send (issue 23): Metadata v0,
# OffsetCommit v0 and v1, OffsetFetch v0, ListOffsets v0; each response
# parsed field by field to its last byte; on a connection of their own,
# so that one closed does not fail the checks after them
$s = connect_broker();
ok(join(' ', map { $ranges{$_} } 2, 3, 8, 9) eq '0-9 0-12 0-9 0-9',
	'ApiVersions: ListOffsets 0-9, Metadata 0-12, OffsetCommit 0-9, OffsetFetch 0-9',
	join(' ', map { $ranges{$_} } 2, 3, 8, 9));
sub int_array { my ($r, $pos) = @_; my $c = unpack("x$pos l>", $r); return ([unpack("x" . ($pos + 4) . " (l>)$c", $r)], $pos + 4 + 4 * $c) }
# Metadata v0 of these topics (none: every topic): (brokers as [id, host,
# port], {topic => [error, [partition, error, leader, [replicas], [isr]]...]},
# bytes left over), or () when closed
sub metadata_v0 {
	my $r = call($s, 3, 0, pack('l>', scalar @_) . join('', map { str($_) } @_));
	return () unless defined $r && $r ne 'timeout';
	my ($pos, @brokers, %topics) = (4);
	for (1 .. unpack('l>', $r)) {
		my $id = unpack("x$pos l>", $r);
		(my $host, $pos) = rd_str($r, $pos + 4);
		push @brokers, [$id, $host, unpack("x$pos l>", $r)];
		$pos += 4;
	}
	my $nt = unpack("x$pos l>", $r);
	$pos += 4;
	for (1 .. $nt) {
		my $err = unpack("x$pos s>", $r);
		(my $name, $pos) = rd_str($r, $pos + 2);
		my ($np, @parts) = unpack("x$pos l>", $r);
		$pos += 4;
		for (1 .. $np) {
			my ($perr, $idx, $leader) = unpack("x$pos s> l> l>", $r);
			(my $rep, $pos) = int_array($r, $pos + 10);
			(my $isr, $pos) = int_array($r, $pos);
			push @parts, [$idx, $perr, $leader, $rep, $isr];
		}
		$topics{$name} = [$err, @parts];
	}
	return (\@brokers, \%topics, length($r) - $pos);
}
my ($brokers, $topics, $left) = metadata_v0();
ok(defined $left && $left == 0 && @$brokers == 1 && $brokers->[0][1] eq '127.0.0.1' && $brokers->[0][2] == $port,
	'Metadata v0: brokers without rack, no controller id, nothing left over',
	defined $left ? "left $left, brokers " . join(' ', map { "@$_" } @$brokers) : 'closed');
ok($topics && $topics->{pt} && $topics->{pdel} && $topics->{pt}[0] == 0,
	'Metadata v0 with an empty topic array lists every topic', $topics ? join(' ', sort keys %$topics) : 'closed');
($brokers, $topics, $left) = metadata_v0('pt');
my $p0 = $topics ? $topics->{pt}[1] : undef;
ok(defined $left && $left == 0 && keys %$topics == 1 && $p0 && $p0->[0] == 0 && $p0->[1] == 0
	&& $p0->[2] == $brokers->[0][0] && "@{ $p0->[3] }" eq "$brokers->[0][0]" && "@{ $p0->[4] }" eq "$brokers->[0][0]",
	'Metadata v0 of one topic: its partition led by this broker, no is_internal');
# OffsetCommit v0 (group, [topic, [partition, offset, metadata]]) and v1
# (group, generation, member, [topic, [partition, offset, timestamp,
# metadata]]): (topic, partition, error, bytes left over)
sub commit_old {
	my ($ver, $group, $offset, $meta) = @_;
	my $head = $ver == 0 ? str($group) : str($group) . pack('l>', -1) . str('');
	my $part = pack('l> q>', 0, $offset) . ($ver == 1 ? pack('q>', time * 1000) : '') . str($meta);
	my $r = call($s, 8, $ver, $head . pack('l>', 1) . str('pt') . pack('l>', 1) . $part);
	return () unless defined $r && $r ne 'timeout' && unpack('l>', $r) == 1;
	my ($name, $pos) = rd_str($r, 4);
	my ($np, $partition, $err) = unpack("x$pos l> l> s>", $r);
	return ($name, $partition, $err, length($r) - $pos - 10);
}
# OffsetFetch v0 of pt partition 0: (offset, metadata, error, bytes left over)
sub fetch_committed_v0 {
	my $r = call($s, 9, 0, str($_[0]) . pack('l>', 1) . str('pt') . pack('l> l>', 1, 0));
	return () unless defined $r && $r ne 'timeout' && unpack('l>', $r) == 1;
	my (undef, $pos) = rd_str($r, 4);
	my ($np, $partition, $offset) = unpack("x$pos l> l> q>", $r);
	my ($meta, $p2) = rd_str($r, $pos + 16);
	return ($offset, $meta, unpack("x$p2 s>", $r), length($r) - $p2 - 2);
}
my @c = commit_old(0, 'oldg', 2, 'm0');
ok(@c && $c[0] eq 'pt' && $c[1] == 0 && $c[2] == 0 && $c[3] == 0, 'OffsetCommit v0 commits offset 2',
	@c ? "@c" : 'closed');
my @f = fetch_committed_v0('oldg');
ok(@f && $f[0] == 2 && $f[1] eq 'm0' && $f[2] == 0 && $f[3] == 0, 'OffsetFetch v0 reads offset 2 and its metadata back',
	@f ? "@f" : 'closed');
@c = commit_old(1, 'oldg', 3, 'm1');
ok(@c && $c[0] eq 'pt' && $c[2] == 0 && $c[3] == 0, 'OffsetCommit v1 (a commit timestamp per partition) commits offset 3',
	@c ? "@c" : 'closed');
@f = fetch_committed_v0('oldg');
ok(@f && $f[0] == 3 && $f[1] eq 'm1', 'OffsetFetch v0 reads the v1 commit back', @f ? "@f" : 'closed');
@f = fetch_committed_v0('nosuchgroup');
ok(@f && $f[0] == -1 && $f[2] == 0, 'OffsetFetch v0 of a group without commits: offset -1', @f ? "@f" : 'closed');
@f = fetch_committed_v0('');
ok(@f && $f[0] == -1 && $f[2] == 0, 'OffsetFetch of group "": offset -1, no error, as from Kafka', @f ? "@f" : 'closed');
# ListOffsets v0 of pdel partition 0 (log start 2, high watermark 3):
# ([offsets], error, bytes left over)
sub list_offsets_v0 {
	my ($time, $max) = @_;
	my $r = call($s, 2, 0, pack('l> l>', -1, 1) . str('pdel') . pack('l> l> q> l>', 1, 0, $time, $max));
	return () unless defined $r && $r ne 'timeout' && unpack('l>', $r) == 1;
	my (undef, $pos) = rd_str($r, 4);
	my ($np, $partition, $err) = unpack("x$pos l> l> s>", $r);
	my ($n, @offs) = unpack('x' . ($pos + 10) . ' l>', $r);
	@offs = unpack('x' . ($pos + 14) . " (q>)$n", $r);
	return (\@offs, $err, length($r) - $pos - 14 - 8 * $n);
}
my @lo = list_offsets_v0(-2, 1);
ok(@lo && "@{ $lo[0] }" eq '2' && $lo[1] == 0 && $lo[2] == 0, 'ListOffsets v0 earliest: [2]', @lo ? "@{ $lo[0] } $lo[1] $lo[2]" : 'closed');
@lo = list_offsets_v0(-1, 10);
ok(@lo && "@{ $lo[0] }" eq '3' && $lo[1] == 0 && $lo[2] == 0, 'ListOffsets v0 latest: [3]', @lo ? "@{ $lo[0] } $lo[1] $lo[2]" : 'closed');
@lo = list_offsets_v0(-1, 0);
ok(@lo && @{ $lo[0] } == 0 && $lo[1] == 0, 'ListOffsets v0 with max_num_offsets 0: no offsets', @lo ? "@{ $lo[0] }" : 'closed');
ok(!defined call(connect_broker(), 3, 13, "\1\0\0"), 'Metadata v13 (newer than Kafka 3.9) closes the connection');

# connection-level errors: the broker closes, and keeps serving others
ok(!defined call(connect_broker(), 999, 0, ''), 'an unknown api key closes the connection');
ok(!defined call(connect_broker(), 1, 4, pack('l> l> l> l> C', -1, 0, 1, 1048576, 0) . pack('l>', 1)
	  . str(undef) . pack('l> l> q> l>', 1, 0, 0, 1048576)),
	'a fetch of a null topic name closes the connection (found by fuzzing)');
ok(!defined call(connect_broker(), 0, 99, ''), 'an unsupported Produce version closes the connection');
ok(!defined call(connect_broker(), 18, 0, '', size => 0x7fffffff), 'an oversized frame closes the connection');
ok(!defined call(connect_broker(), 18, 0, '', size => 2), 'an undersized frame closes the connection');
ok(!defined call(connect_broker(), 0, 3, str(undef) . pack('s> l> l>', 1, 5000, 100000)),
	'a request whose array count exceeds its bytes closes the connection');
# many pipelined requests are answered in order (and do not grow the stack)
{
	my $p = connect_broker();
	my $count = 50000;
	my $frames = join '', map {
		my $f = pack('s> s> l>', 18, 0, $_) . str('p');
		pack('l>', length $f) . $f;
	} 1 .. $count;
	my $sel = IO::Select->new($p);
	my ($buf, $sent, $next, $in_order) = ('', 0, 1, 1);
	while ($next <= $count) {
		my ($r, $w) = IO::Select->select($sel, $sent < length $frames ? $sel : undef, undef, 10);
		last unless $r || $w;
		$sent += $p->syswrite($frames, 65536, $sent) if $w && @$w;
		if ($r && @$r) {
			last unless $p->sysread($buf, 1 << 20, length $buf);
			while (length $buf >= 8 && length $buf >= 4 + unpack('l>', $buf)) {
				my ($size, $corr) = unpack('l> l>', $buf);
				$in_order = 0 if $corr != $next;
				$next++;
				substr($buf, 0, 4 + $size) = '';
			}
		}
	}
	ok($next == $count + 1 && $in_order, "$count pipelined requests answered in order", "got " . ($next - 1));
}

$r = call(connect_broker(), 18, 0, '');
ok(defined $r && unpack('s>', $r) == 0, 'the broker still answers afterwards');

tap_done();
