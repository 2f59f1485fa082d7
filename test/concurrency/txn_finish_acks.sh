#!/usr/bin/env bash
# The acknowledgement of a finished prepared part is that part's own
# (docs/delivery.md, "Exactly-once in a cluster"; src/commit_wait.c).
# mqctl pipeline prepares a step's input part (the group's offset) on the
# input's leader, may run other transactions on the same session before
# the decision arrives (sending an output again, say), then commits the
# part with mq.txn_finish and waits with mq.await_commit.  That wait must
# be for the part's offsets, not for whatever the session committed last:
# here the node resigns the input partition before the finish, so the
# wait must fail with MQ020 (the pipeline then commits the offset again
# on the new leader).  Before the fix the wait took the later send's
# acknowledgement for the part's, and test/t/117 once processed a step
# twice that way.
#
# Runs against the cluster in PGHOST/PGPORT/PGDATABASE (scripts/test.sh;
# it needs max_prepared_transactions > 0).
set -euo pipefail

# shellcheck source=test/concurrency/common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"

q >/dev/null <<'SQL'
SELECT mq.create_topic('tfa', 1);
SELECT mq.create_topic('tfb', 1);
-- tfa: led here in epoch 1 with a follower, 2, in the ISR; tfb: led alone
SELECT mq.replica_become_leader('tfa', 0, 1, 1, ARRAY[1, 2], ARRAY[1, 2]);
SELECT mq.replica_become_leader('tfb', 0, 1, 1, ARRAY[1], ARRAY[1]);
SELECT mq.send_batch('tfa', NULL, ARRAY['x'::bytea], partition => 0);
SQL

work=$(mktemp -d)
cleanup() {
	exec 3>&- 2>/dev/null || true
	kill $(jobs -p) 2>/dev/null || true
	for g in mq:tfa:0 mq:tfa:1; do q -c "SELECT mq.txn_finish('$g', false)" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# A, the pipeline's session on the input's leader: the part with the
# group's offset, prepared; then another commit on the same session,
# acknowledged at once (tfb has no follower)
mkfifo "$work/a"
PGAPPNAME=tfa_a psql -X -qAt < "$work/a" > "$work/a.out" 2>&1 &
a=$!
exec 3> "$work/a"
cat >&3 <<'SQL'
BEGIN;
SELECT mq.commit_offset('g', 'tfa', 0, 1);
PREPARE TRANSACTION 'mq:tfa:0';
SELECT count(*) FROM mq.send_batch('tfb', NULL, ARRAY['y'::bytea], partition => 0);
SQL
wait_for "application_name = 'tfa_a' AND state = 'idle'" || fail "the part was not prepared"

# B, the broker: a handover resigns tfa (it may wait for the prepared
# part's row locks, then A's finish below lets it go on)
PGAPPNAME=tfa_b psql -X -qAt -c "SELECT mq.replica_become_follower('tfa', 0, 1, NULL)" > "$work/b.out" 2>&1 &
b=$!
for _ in $(seq 1 200); do
	kill -0 "$b" 2>/dev/null || break
	[[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tfa_b' AND wait_event_type = 'Lock'")" != 0 ]] && break
	sleep 0.1
done

# A commits the part (B then resigns), then waits for its acknowledgement:
# follower 2 never copied the offset, so the wait must fail with MQ020
echo "SELECT mq.txn_finish('mq:tfa:0', true);" >&3
wait "$b" || fail "the resignation failed: $(cat "$work/b.out")"
echo "SELECT 'waited for', mq.await_commit(2000);" >&3
exec 3>&-
wait "$a" || true
out=$(cat "$work/a.out")
case "$out" in
*'waited for'* | *'"tfb"'*) fail "mq.await_commit waited for another transaction's writes, not the finished part's: $out" ;;
*'not the leader of "tfa" partition 0'*) ;;
*) fail "unexpected output: $out" ;;
esac
[[ "$(q -c "SELECT mq.committed_offset('g', 'tfa', 0)")" == 1 ]] || fail "the part was not committed"

# a rollback leaves nothing of the part to wait for
out=$(q 2>&1 <<'SQL'
SELECT mq.replica_become_leader('tfa', 0, 2, 1, ARRAY[1, 2], ARRAY[1]);
BEGIN;
SELECT mq.commit_offset('g', 'tfa', 0, 0);
PREPARE TRANSACTION 'mq:tfa:1';
SELECT mq.txn_finish('mq:tfa:1', false);
SELECT 'waited for', mq.await_commit(2000);
SQL
)
[[ "$out" == *'waited for|0'* ]] || fail "after a rollback: $out"
echo "ok: the wait after mq.txn_finish is for the finished part's own writes"
