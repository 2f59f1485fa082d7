#!/usr/bin/perl
# cpu-time.pl CMD...: run CMD, then print to stderr its wall time and the
# CPU time (user, system) of everything it started, the servers that
# pg_ctl detached included.  /usr/bin/time misses those: pg_ctl's
# postmaster leaves its parent, so its CPU time (and its backends') goes
# to whoever reaps it, init.  Here this process makes itself their
# subreaper (prctl PR_SET_CHILD_SUBREAPER), so orphans below it are
# reparented to it, reaped by it, and counted in its children's times.
# scripts/test.sh runs each multi-node TAP test under it; to measure a
# whole run (docs/design.md, "The test command's time"):
#   perl scripts/cpu-time.pl bash scripts/test.sh
# Exits with CMD's status.  Linux only.
use strict;
use warnings;
use POSIX qw(WNOHANG);
use Time::HiRes qw(time usleep);

die "usage: cpu-time.pl CMD...\n" unless @ARGV;
my $sys_prctl = eval { require 'syscall.ph'; &SYS_prctl } // 157;    # x86_64
my $PR_SET_CHILD_SUBREAPER = 36;
syscall($sys_prctl, $PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
  or die "cpu-time.pl: prctl(PR_SET_CHILD_SUBREAPER): $!\n";

my $t0 = time;
my $pid = fork // die "cpu-time.pl: fork: $!\n";
if ($pid == 0) { exec @ARGV or die "cpu-time.pl: $ARGV[0]: $!\n"; }
my $rc;
while (1)
{
	my $p = waitpid(-1, 0);
	last if $p < 0;
	if ($p == $pid) { $rc = $?; last; }
}
my $wall = time - $t0;
# orphans that end now (a server stopping as the command ends): two
# seconds at most; one that runs on (left behind) is not counted
my $until = time + 2;
while (time < $until)
{
	my $p = waitpid(-1, WNOHANG);
	last if $p < 0;
	usleep(100_000) if $p == 0;
}
my (undef, undef, $cu, $cs) = times;
printf STDERR "cpu-time: wall %.1f s, cpu %.1f s (user %.1f, system %.1f), cpu/wall %.2f: %s\n",
  $wall, $cu + $cs, $cu, $cs, ($cu + $cs) / ($wall || 1), join(' ', @ARGV);
exit($rc & 127 ? 128 + ($rc & 127) : $rc >> 8);
