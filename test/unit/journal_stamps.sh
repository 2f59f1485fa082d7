#!/usr/bin/env bash
# mq-broker stamps its log lines with the time, except when its stderr is
# systemd's journal (JOURNAL_STREAM names stderr's device:inode, as the
# packaged units have it), which stamps every line itself.  No server: the
# broker is pointed at a closed port and stopped after its first lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

bin=broker/mq-broker/mq-broker
tap_tmp journal-stamps
printf '[broker]\nid = 1\nnode = host=127.0.0.1 port=1 dbname=x\ncoordinator = host=127.0.0.1 port=1 dbname=x\n' >"$tmp/b.ini"

# run_broker FILE [JOURNAL_STREAM]: the broker's first line into FILE
run_broker() {
	: >"$1"
	(
		exec 2>"$1"
		if [[ -n "${2:-}" ]]; then export JOURNAL_STREAM="$2"; fi
		timeout -s TERM 1 "$bin" -c "$tmp/b.ini" || true
	)
	head -n 1 "$1"
}

line="$(run_broker "$tmp/plain")"
rc=0
[[ "$line" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9:.]+\ mq-broker\[1\]:\ info:\ starting ]] || rc=1
ok $rc "stderr a file: lines stamped ($line)"

: >"$tmp/journal"
line="$(run_broker "$tmp/journal" "$(stat -c '%d:%i' "$tmp/journal")")"
rc=0
[[ "$line" == "mq-broker[1]: info: starting broker 1"* ]] || rc=1
ok $rc "stderr the journal (JOURNAL_STREAM matches): no stamp ($line)"

line="$(run_broker "$tmp/other" "$(stat -c '%d:%i' "$tmp/b.ini")")"
rc=0
[[ "$line" =~ ^[0-9]{4}- ]] || rc=1
ok $rc "JOURNAL_STREAM naming another file (inherited, stderr redirected): stamped"

tap_done
