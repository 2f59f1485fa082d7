#!/usr/bin/env bash
# The README's commands work from a checkout only root can read (a clone
# in /root, mode 700): what runs repo files as the postgres user must not
# read them from the checkout.  From such a copy of this checkout:
#   1. scripts/coord-ha.sh, which root runs as postgres, starts the highly
#      available coordinator (pg_auto_failover) and stops it;
#   2. mq_postgres_repo (scripts/lib.sh; the TAP phase runs test/t/*.pl as
#      postgres through it) gives a copy postgres can read, and
#   3. the checkout's and /root's permissions are what they were.
# Needs root (it is skipped, and says so, otherwise).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

# shellcheck source=test/unit/tap.bash
source test/unit/tap.bash

if ! mq_is_root || ! getent passwd postgres >/dev/null; then
	echo "1..0 # skip: needs root and the postgres user"
	exit 0
fi

home="$(getent passwd root | cut -d: -f6)"
clone="$(mktemp -d "$home/mq-clone.XXXXXX")"
run="$(mktemp -d "${TMPDIR:-/tmp}/mq-clone-run.XXXXXX")"
chmod 755 "$run"
chown postgres:postgres "$run"
mq_on_exit "bash '$clone/scripts/coord-ha.sh' stop '$run/ha' >/dev/null 2>&1; rm -rf '$clone' '$run'"
chmod 700 "$clone"
# the checkout's files, with the tools built here
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$clone"
else
	tar --exclude=./.git -cf - . | tar -C "$clone" -xf -
fi
before="$(stat -c '%a %U' "$home" "$clone")"

! (cd / && runuser -u postgres -- test -r "$clone/scripts/coord-ha.sh") 2>/dev/null
ok $? "postgres cannot read the clone"

# 1. the coordinator, from the clone, as root; pg_auto_failover runs as postgres
rc=0
ports=("$(free_port)" "$(free_port)" "$(free_port)")
conninfo="$(cd "$clone" && timeout 180 bash scripts/coord-ha.sh start "$run/ha" "${ports[@]}" 2>"$run/start.log")" || rc=$?
if ((rc != 0)); then tail -n 20 "$run/start.log" >&2; fi
ok "$rc" "scripts/coord-ha.sh start from the clone (root runs it as postgres)"
rc=0
[[ "$(psql -X -At -d "$conninfo user=postgres" -c "SELECT extname FROM pg_extension WHERE extname = 'mq'" 2>&1)" == mq ]] || rc=1
ok "$rc" "the coordinator's primary has the mq extension"
rc=0
(cd "$clone" && bash scripts/coord-ha.sh stop "$run/ha") >/dev/null 2>&1 || rc=$?
ok "$rc" "scripts/coord-ha.sh stop from the clone"
rc=0
[[ -z "$(pgrep -u postgres -f "$run/ha" || true)" ]] || rc=1
ok "$rc" "nothing of the coordinator runs after stop"

# 2. the TAP phase's copy
rc=0
out="$(cd "$clone" && bash -c 'source scripts/lib.sh; mq_postgres_repo >/dev/null 2>&1
	[[ "$MQ_PG_REPO" != "$MQ_REPO_ROOT" ]] || exit 1
	f="$(ls "$MQ_PG_REPO"/test/t/*.pl | head -n 1)"
	cd / && runuser -u postgres -- env PERL5LIB="$PG_TAP_PERL:$MQ_PG_REPO/test/t" perl -c "$f" 2>&1 | tail -n 1
	runuser -u postgres -- test -r "$MQ_PG_REPO/scripts/coord-ha.sh" -a -r "$MQ_PG_REPO/test/t/MqCluster.pm" || exit 1' 2>&1)" || rc=$?
[[ "$out" == *"syntax OK"* ]] || rc=1
ok "$rc" "mq_postgres_repo: postgres reads and compiles a TAP test from the copy ($out)"

# 3. nothing was opened up
rc=0
[[ "$(stat -c '%a %U' "$home" "$clone")" == "$before" ]] || rc=1
ok "$rc" "the permissions of $home and of the clone are unchanged"

tap_done
