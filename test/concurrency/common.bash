# Shared by the scripts in test/concurrency/ (sourced; not a test itself:
# scripts/test.sh runs *.sh only).  They run against the cluster in
# PGHOST/PGPORT/PGDATABASE.
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

# wait_for CONDITION: a condition on pg_stat_activity, polled for up to 20 s
wait_for() {
	for _ in $(seq 1 200); do
		[[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE $1")" != 0 ]] && return 0
		sleep 0.1
	done
	return 1
}

# hold_progress_lock TOPIC DIR: a session (application_name TOPIC_lock,
# its input a fifo in DIR on fd 3) holds partition 0's progress lock, as
# the other follower's fetch of a record may, until release_progress_lock
hold_progress_lock() {
	mkfifo "$2/lock"
	PGAPPNAME="$1_lock" psql -X -qAt -v ON_ERROR_STOP=1 < "$2/lock" > "$2/lock.out" 2>&1 &
	exec 3> "$2/lock"
	echo "BEGIN; SELECT mq._replica_progress_lock(topic_id, 0) FROM mq.topic WHERE topic_name = '$1';" >&3
	wait_for "application_name = '$1_lock' AND state = 'idle in transaction'" || fail "the lock was not taken"
}
release_progress_lock() {
	echo "COMMIT;" >&3
	exec 3>&-
}

# ends_within PID SECONDS: whether the process ends within that time
ends_within() {
	for _ in $(seq 1 $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
