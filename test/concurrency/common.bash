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
