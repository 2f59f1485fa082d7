# test/unit/tap.bash: the TAP counter of the test/unit/*.sh checks,
# sourced by them (its name does not end in .sh: it is no check itself).
#
#   ok RC DESCRIPTION   "ok N - DESCRIPTION" when RC is 0, else "not ok N"
#                       (and the script will exit 1)
#   tap_tmp PREFIX      a fresh directory $tmp (mode 755, so that the
#                       postgres user can read it) under ${TMPDIR:-/tmp},
#                       removed at exit; for a script that sources
#                       scripts/lib.sh, use mq_on_exit instead (it owns the
#                       EXIT trap there)
#   tap_none_left DIR PATTERN
#                       ok if no process pgrep PATTERN finds names DIR in
#                       its command line or runs in it (a benchmark's
#                       servers, left running after its short run)
#   tap_done            prints the plan "1..N" and exits with the status
status=0
n=0
ok() {
	n=$((n + 1))
	if [[ "$1" == 0 ]]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		status=1
	fi
}

tap_tmp() {
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
	chmod 755 "$tmp"
	# shellcheck disable=SC2064 # $tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
}

tap_none_left() {
	local dir="$1" p left=""
	# without pgrep (procps) nothing would be found, and the check would pass
	command -v pgrep >/dev/null || { ok 1 "pgrep (procps) is installed"; return; }
	for p in $(pgrep "$2" 2>/dev/null || true); do
		if grep -qaF "$dir" "/proc/$p/cmdline" 2>/dev/null ||
			[[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" == "$dir"* ]]; then
			left+=" $p"
		fi
	done
	ok "$([[ -z "$left" ]] && echo 0 || echo 1)" "no server of the run is left running${left:+:$left}"
}

tap_done() {
	echo "1..$n"
	exit "$status"
}
