#!/usr/bin/perl
# Raw SASL/SCRAM exchanges against mq-kafka --sasl=scram-sha-256,scram-sha-512,plain
# on a plaintext listener (test/kafka/scram.sh runs it):
#
#   MQ_SCRAM_PASSWORD=... perl scram.pl PORT USER ITERATIONS
#   MQ_SCRAM_PASSWORD=... perl scram.pl PORT USER ITERATIONS admin [granted]
#
# The admin form runs only the checks of DescribeUserScramCredentials (50)
# and AlterUserScramCredentials (51) on a connection authenticated as USER:
# without "granted" USER has no right on the cluster (its own credential
# only); with it, USER has ALTER and DESCRIBE on the cluster.
#
# USER has SCRAM-SHA-256 and -512 credentials with that password and
# iteration count.  The client side is computed here (RFC 5802 with
# Digest::SHA), so the server's every answer is checked: the mechanisms
# offered without TLS (no PLAIN), server-first's nonce, salt and
# iterations, server-final's signature; and every refusal: a wrong
# password, an unknown user (the same answer, a stable fake salt), a
# wrong nonce, a bad proof, a replayed client-final, a wrong channel
# binding, Kafka's tokenauth extension, a malformed message, a second
# handshake.  Prints TAP; exits 1 if a check failed.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Digest::SHA qw(hmac_sha256 hmac_sha512 sha256 sha512);
use MIME::Base64 qw(encode_base64 decode_base64);
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(ok tap_done);

my ($port, $user, $iters) = @ARGV;
my $password = $ENV{MQ_SCRAM_PASSWORD} // die "MQ_SCRAM_PASSWORD not set\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';


sub str { pack('n', length $_[0]) . $_[0] }
sub b64 { encode_base64($_[0], '') }

sub connect_broker {
	IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die "connect: $!\n";
}

# one request; the response body after the correlation id, or undef if closed
sub call {
	my ($sock, $api, $ver, $body, %o) = @_;
	my $frame = pack('s> s> l>', $api, $ver, 7) . str('scram.pl') . ($o{flexible} ? "\0" : '') . $body;
	$sock->syswrite(pack('l>', length $frame) . $frame);
	my $sel = IO::Select->new($sock);
	my $buf = '';
	while (1) {
		return undef unless $sel->can_read(10);
		my $got = $sock->sysread($buf, 65536, length $buf);
		return undef unless $got;
		if (length $buf >= 4) {
			my $size = unpack('l>', $buf);
			return substr($buf, $o{flexible} ? 9 : 8, $size - ($o{flexible} ? 5 : 4)) if length $buf >= 4 + $size;
		}
	}
}

sub handshake {
	my ($sock, $mech) = @_;
	my $r = call($sock, 17, 1, str($mech));
	return undef unless defined $r;
	my ($e, $cnt) = unpack('s> l>', $r);
	my ($pos, @m) = (6);
	for (1 .. $cnt) { my $l = unpack("x$pos n", $r); push @m, substr($r, $pos + 2, $l); $pos += 2 + $l; }
	return ($e, \@m);
}

# SaslAuthenticate v1: (error, message, auth_bytes), or () when closed
sub authenticate {
	my ($sock, $token) = @_;
	my $r = call($sock, 36, 1, pack('l>', length $token) . $token);
	return () unless defined $r;
	my ($e, $ml) = unpack('s> s>', $r);
	my $msg = $ml < 0 ? undef : substr($r, 4, $ml);
	my $pos = 4 + ($ml < 0 ? 0 : $ml);
	my $bl = unpack("x$pos l>", $r);
	return ($e, $msg, $bl < 0 ? undef : substr($r, $pos + 4, $bl));
}

sub closed { my $r = call($_[0], 18, 0, ''); return !defined $r }

my %H = ('SCRAM-SHA-256' => [\&hmac_sha256, \&sha256], 'SCRAM-SHA-512' => [\&hmac_sha512, \&sha512]);

sub hi {
	my ($mech, $pw, $salt, $i) = @_;
	my $hmac = $H{$mech}[0];
	my $u = $hmac->($salt . pack('N', 1), $pw);
	my $out = $u;
	for (2 .. $i) { $u = $hmac->($u, $pw); $out ^= $u; }
	return $out;
}

# start an exchange: (socket, client-first-bare, server-first, error)
sub start {
	my ($mech, $name, %o) = @_;
	my $s = connect_broker();
	my ($e) = handshake($s, $mech);
	die "handshake $mech: " . ($e // 'closed') . "\n" unless defined $e && $e == 0;
	my $bare = "n=$name,r=" . ($o{cnonce} // 'cl13nt' . int(rand(1e9))) . ($o{ext} // '');
	my ($ae, $m, $sf) = authenticate($s, ($o{gs2} // 'n,,') . $bare);
	return ($s, $bare, $sf, $ae);
}

# the client-final message for an exchange, and the expected server signature
sub final {
	my ($mech, $pw, $bare, $sf, %o) = @_;
	my ($nonce, $salt, $i) = $sf =~ /^r=([^,]+),s=([^,]+),i=(\d+)$/ or return ('', '');
	my ($hmac, $hash) = @{ $H{$mech} };
	my $salted = hi($mech, $pw, decode_base64($salt), $i);
	my $without = 'c=' . ($o{cbind} // 'biws') . ',r=' . ($o{nonce} // $nonce);
	my $auth = "$bare,$sf,$without";
	my $ckey = $hmac->('Client Key', $salted);
	my $proof = $ckey ^ $hmac->($auth, $hash->($ckey));
	my $ssig = $hmac->($auth, $hmac->('Server Key', $salted));
	return ("$without,p=" . b64($proof), 'v=' . b64($ssig));
}

if (($ARGV[3] // '') eq 'admin') {
	admin_checks($ARGV[4] // '');
} else {
	exchange_checks();
}
tap_done();

# a refusal: SASL_AUTHENTICATION_FAILED, then closed; its message kept
my %msg;
sub refused {
	my ($what, $s, $ae, $m) = @_;
	ok(defined $ae && $ae == 58 && closed($s), "$what gets SASL_AUTHENTICATION_FAILED, then the connection closes",
		'got ' . ($ae // 'closed'));
	$msg{$what} = $m // '';
}

sub exchange_checks {
	# offered mechanisms without TLS
	my $s = connect_broker();
	my ($e, $mechs) = handshake($s, 'PLAIN');
	ok(defined $e && $e == 33 && "@$mechs" eq 'SCRAM-SHA-256 SCRAM-SHA-512',
		'PLAIN on a plaintext connection gets UNSUPPORTED_SASL_MECHANISM; SCRAM-SHA-256 and -512 are offered',
		'got ' . ($e // 'closed') . ' [' . join(' ', @{ $mechs // [] }) . ']');
	ok(closed($s), 'and the connection is closed');

	# both mechanisms succeed, and the server proves it knows the verifier
	for my $mech ('SCRAM-SHA-256', 'SCRAM-SHA-512') {
		my ($s, $bare, $sf, $ae) = start($mech, $user, cnonce => 'fyko+d2lbbFgONRv9qkxdawL');
		my ($salt) = ($sf // '') =~ /,s=([^,]+),/;
		ok(defined $ae && $ae == 0 && $sf =~ /^r=fyko\+d2lbbFgONRv9qkxdawL[A-Za-z0-9+\/=]{32},s=[^,]+,i=$iters$/
			  && length(decode_base64($salt)) == 32,
			"$mech server-first: the client's nonce and 32 more characters, a 32-byte salt, $iters iterations", "got '" . ($sf // '') . "'");
		my ($cf, $ssig) = final($mech, $password, $bare, $sf);
		my ($fe, $fm, $sfinal) = authenticate($s, $cf);
		ok(defined $fe && $fe == 0 && ($sfinal // '') eq $ssig, "$mech: the right proof authenticates; server-final carries the server's signature",
			'got ' . ($fe // 'closed') . " '" . ($sfinal // '') . "' want '$ssig'");
		my $r = call($s, 3, 1, pack('l>', -1));
		ok(defined $r, "$mech: then Metadata is answered");
		($e) = handshake($s, $mech);
		ok(defined $e && $e == 34, "$mech: a second SaslHandshake gets ILLEGAL_SASL_STATE");
		my ($ae2) = authenticate($s, 'n,,n=x,r=y');
		ok(defined $ae2 && $ae2 == 34, "$mech: so does a SaslAuthenticate after the login");
		$r = call($s, 3, 1, pack('l>', -1));
		ok(defined $r, "$mech: and the connection goes on, as Kafka keeps it");
	}

	# refusals: each SASL_AUTHENTICATION_FAILED, then closed
	my ($bare, $sf, $ae);
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user);
	refused('a wrong password', $s, authenticate($s, (final('SCRAM-SHA-256', "$password-wrong", $bare, $sf))[0]));

	my @salts;
	for (1 .. 2) {
		($s, $bare, $sf, $ae) = start('SCRAM-SHA-512', 'mq_scram_nobody');
		push @salts, ($sf // '') =~ /,s=([^,]+),/;
		ok(defined $ae && $ae == 0 && ($sf // '') =~ /,i=4096$/ && length(decode_base64($salts[-1] // '')) == 32,
			'an unknown user gets a server-first shaped like a known one\'s', "got '" . ($sf // '') . "'");
		refused('an unknown user', $s, authenticate($s, (final('SCRAM-SHA-512', $password, $bare, $sf))[0]));
	}
	ok(@salts == 2 && $salts[0] eq $salts[1], 'and the same salt each time');
	ok($msg{'a wrong password'} eq $msg{'an unknown user'} && $msg{'a wrong password'} ne '',
		'a wrong password and an unknown user get the same message');

	($s, $bare, $sf) = start('SCRAM-SHA-256', $user);
	refused('a client-final with another nonce', $s,
		authenticate($s, (final('SCRAM-SHA-256', $password, $bare, $sf, nonce => 'x' . (($sf =~ /^r=([^,]+)/)[0])))[0]));
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user);
	my ($good) = final('SCRAM-SHA-256', $password, $bare, $sf);
	(my $bad = $good) =~ s/p=(.)/'p=' . ($1 eq 'A' ? 'B' : 'A')/e;
	refused('a wrong proof', $s, authenticate($s, $bad));
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user);
	refused('a channel binding that is not the gs2 header', $s,
		authenticate($s, (final('SCRAM-SHA-256', $password, $bare, $sf, cbind => 'eSws'))[0]));

	# a replay: the whole exchange of a success, sent again on a new connection
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user, cnonce => 'replayed');
	my ($cf) = final('SCRAM-SHA-256', $password, $bare, $sf);
	($ae) = authenticate($s, $cf);
	ok(defined $ae && $ae == 0, 'an exchange succeeds');
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user, cnonce => 'replayed');
	refused('its client-final replayed on a new connection', $s, authenticate($s, $cf));

	($s, $bare, $sf, $ae) = start('SCRAM-SHA-256', $user, ext => ',tokenauth=true');
	refused('a delegation token (tokenauth=true)', $s, $ae, undef);
	($s, $bare, $sf, $ae) = start('SCRAM-SHA-256', $user, gs2 => 'p=tls-unique,,');
	refused('a channel binding request (p=)', $s, $ae, undef);
	$s = connect_broker();
	handshake($s, 'SCRAM-SHA-256');
	refused('a malformed client-first', $s, authenticate($s, "n,,r=abc,n=$user"));
	($s, $bare, $sf) = start('SCRAM-SHA-256', $user);
	refused('a second client-first instead of the final', $s, authenticate($s, "n,,$bare"));
}

# ---- the admin APIs (KIP-554), flexible v0 ---------------------------------
sub uv { my $v = shift; my $o = ''; while ($v >= 0x80) { $o .= chr(($v & 0x7f) | 0x80); $v >>= 7 } $o . chr($v) }
sub cstr { defined $_[0] ? uv(length($_[0]) + 1) . $_[0] : "\0" }
sub rd_uv { my ($r, $pos) = @_; my ($v, $sh) = (0, 0); while (1) { my $b = ord substr($r, $$pos++, 1); $v |= ($b & 0x7f) << $sh; last unless $b & 0x80; $sh += 7 } $v }
sub rd_cstr { my ($r, $pos) = @_; my $l = rd_uv($r, $pos); return undef unless $l; my $s = substr($r, $$pos, $l - 1); $$pos += $l - 1; $s }

sub login {
	my ($mech, $pw) = @_;
	my ($s, $bare, $sf) = start($mech, $user);
	my ($e) = authenticate($s, (final($mech, $pw, $bare, $sf))[0]);
	return defined $e && $e == 0 ? $s : undef;
}

# DescribeUserScramCredentials: (error, {user => [error, "mech/iterations"...]})
sub describe {
	my ($s, @users) = @_;
	my $body = (@users ? uv(@users + 1) . join('', map { cstr($_) . "\0" } @users) : "\0") . "\0";
	my $r = call($s, 50, 0, $body, flexible => 1) // return (undef, {});
	my $pos = 4;
	my $e = unpack("x$pos s>", $r); $pos += 2;
	rd_cstr($r, \$pos);
	my %res;
	for (1 .. rd_uv($r, \$pos) - 1) {
		my $u = rd_cstr($r, \$pos);
		my $ue = unpack("x$pos s>", $r); $pos += 2;
		rd_cstr($r, \$pos);
		my @c = ($ue);
		for (1 .. rd_uv($r, \$pos) - 1) {
			my ($m, $i) = unpack("x$pos c l>", $r); $pos += 5;
			rd_uv($r, \$pos);
			push @c, "$m/$i";
		}
		rd_uv($r, \$pos);
		$res{$u} = \@c;
	}
	return ($e, \%res);
}

# AlterUserScramCredentials: {user => error}; ops are [user, mech] deletions
# and [user, mech, iterations, salt, password] upsertions
sub alter {
	my ($s, $del, $up) = @_;
	my $body = uv(@$del + 1) . join('', map { cstr($_->[0]) . pack('c', $_->[1]) . "\0" } @$del);
	$body .= uv(@$up + 1) . join('', map {
		my ($u, $m, $i, $salt, $pw) = @$_;
		my $name = $m == 1 ? 'SCRAM-SHA-256' : 'SCRAM-SHA-512';
		my $salted = $H{$name} ? hi($name, $pw, $salt, $i) : 'x' x 32;
		# for scram.sh, which looks for it in PostgreSQL's log
		print '# salted-sent ', unpack('H*', $salted), "\n";
		cstr($u) . pack('c l>', $m, $i) . cstr($salt) . cstr($salted) . "\0"
	} @$up) . "\0";
	my $r = call($s, 51, 0, $body, flexible => 1) // return {};
	my $pos = 4;
	my %res;
	for (1 .. rd_uv($r, \$pos) - 1) {
		my $u = rd_cstr($r, \$pos);
		$res{$u} = unpack("x$pos s>", $r); $pos += 2;
		rd_cstr($r, \$pos);
		rd_uv($r, \$pos);
	}
	return \%res;
}

sub admin_checks {
	my ($granted) = @_;
	my $s = login('SCRAM-SHA-256', $password) or die "cannot log in as $user\n";
	my $salt = join '', map { chr int rand 256 } 1 .. 24;
	if (!$granted) {
		# Kafka's rule: DESCRIBE on the cluster to describe, ALTER to alter,
		# one's own credentials included (SQL lets a role see and change its own)
		my ($e, $res) = describe($s);
		ok(defined $e && $e == 31 && !%$res,
			'DescribeUserScramCredentials of every user without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED, none listed',
			($e // 'closed') . ' ' . join(',', sort keys %$res));
		($e, $res) = describe($s, $user);
		ok(defined $e && $e == 31 && !%$res, 'and of its own: the same', $e // 'closed');
		my $a = alter($s, [], [['mq_scram_bob', 2, 4096, $salt, 'stolen']]);
		ok(($a->{mq_scram_bob} // -1) == 31, 'AlterUserScramCredentials of another user: CLUSTER_AUTHORIZATION_FAILED', $a->{mq_scram_bob});
		$a = alter($s, [], [[$user, 2, 4096, $salt, "$password-new"]]);
		ok(($a->{$user} // -1) == 31, 'of its own without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED too', $a->{$user});
		ok(!defined login('SCRAM-SHA-512', "$password-new") && defined login('SCRAM-SHA-512', $password),
			'and nothing changed: the old password logs in, the new does not');
		ok(defined login('SCRAM-SHA-256', $password), 'nor was its other mechanism touched');
		return;
	}
	my $a = alter($s, [['mq_scram_bob', 2]], [['mq_scram_dora', 1, 8192, $salt, 'dora-pw'], ['mq_scram_dora', 2, 4096, $salt, 'dora-pw'],
		['mq_scram_eve', 3, 4096, $salt, 'x'], ['mq_scram_fay', 1, 100, $salt, 'x'], ['mq_scram_gus', 1, 4096, $salt, 'x'],
		['mq_scram_gus', 1, 4096, $salt, 'y'], ['mq_scram_hal', 1, 4096, 'short', 'x']]);
	ok(($a->{mq_scram_bob} // -1) == 0 && ($a->{mq_scram_dora} // -1) == 0, 'an administrator deletes and upserts credentials', join(' ', map { "$_=$a->{$_}" } sort keys %$a));
	ok(($a->{mq_scram_eve} // -1) == 33, 'an unknown mechanism: UNSUPPORTED_SASL_MECHANISM');
	ok(($a->{mq_scram_fay} // -1) == 93 && ($a->{mq_scram_hal} // -1) == 93, 'too few iterations, a short salt: UNACCEPTABLE_CREDENTIAL');
	ok(($a->{mq_scram_gus} // -1) == 92, 'the same user and mechanism twice: DUPLICATE_RESOURCE');
	$a = alter($s, [['mq_scram_bob', 2]], []);
	ok(($a->{mq_scram_bob} // -1) == 91, 'deleting a credential that is not there: RESOURCE_NOT_FOUND');
	$a = alter($s, [['mq_scram_dora', 1]], [['mq_scram_dora', 2, 4096, $salt, 'x'], ['mq_scram_dora', 1, 4096, $salt, 'x']]);
	ok(($a->{mq_scram_dora} // -1) == 92, 'deleting and upserting one mechanism at once: DUPLICATE_RESOURCE');
	my ($e, $res) = describe($s);
	ok($e == 0 && join(' ', map { "$_=@{$res->{$_}}" } sort keys %$res) eq "mq_scram_alice=0 1/$iters 2/$iters mq_scram_dora=0 1/8192 2/4096",
		'DescribeUserScramCredentials of every user lists every user (and nothing of the refused ones)',
		join(' ', map { "$_=@{$res->{$_}}" } sort keys %$res));
	($e, $res) = describe($s, 'mq_scram_dora', 'mq_scram_dora');
	ok(($res->{mq_scram_dora}[0] // -1) == 92, 'a user named twice: DUPLICATE_RESOURCE');
}
