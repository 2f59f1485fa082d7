#!/usr/bin/env bash
# README.md's "Quick start with mqctl", as a new user follows it: every
# "$ " line of its console block runs in a shell, in order, against a fresh
# database with the extension, with `mqctl` found on PATH; what it prints
# (standard output and error, as a terminal shows them) must be what the
# README shows under it.  The README cannot drift from what mqctl does.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

readme=README.md

# The console block of the quick start section.
block="$(awk '
	/^## Quick start with mqctl/ { section = 1; next }
	section && /^## / { exit }
	section && /^```console$/ { inside = 1; next }
	inside && /^```/ { exit }
	inside { print }' "$readme")"
check_match "$block" '^\$ mqctl ' "$readme has a quick start with mqctl"

# mqctl on PATH, as `make install` puts it in /usr/local/bin
bindir="$(tmpdir)/bin"
mkdir -p "$bindir"
ln -s "$MQCTL" "$bindir/mqctl"

# step COMMAND EXPECTED: run it as the user would, compare
step() {
	local got rc=0
	got="$(cd "$(tmpdir)" && PATH="$bindir:$PATH" bash -c "$1" 2>&1)" || rc=$?
	if [[ "$rc" != 0 ]]; then
		fail "\$ $1: exit $rc" "output: $got"
	else
		check_eq "$got" "$2" "\$ $1"
	fi
}

command=""
expected=""
steps=0
while IFS= read -r line; do
	if [[ "$line" == '$ '* ]]; then
		if [[ -n "$command" ]]; then
			step "$command" "$expected"
			steps=$((steps + 1))
		fi
		command="${line#\$ }"
		expected=""
	else
		expected+="${expected:+$'\n'}$line"
	fi
done <<<"$block"
if [[ -n "$command" ]]; then
	step "$command" "$expected"
	steps=$((steps + 1))
fi
check_match "$steps" '^[4-9]$' "the quick start has its steps ($steps)"

# what the user has made, seen from SQL
check_eq "$(sql "SELECT mq.committed_offset('readers', 'greetings', 0)")" 3 "the group read all three lines"

finish
