# shellcheck shell=bash
# Shared helpers for mq scripts: PostgreSQL 15 binaries, throwaway clusters,
# running things as the `postgres` user, build+install, and one cleanup trap.
#
# Source it from a bash script running with `set -euo pipefail`:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   mq_build_install                 # make -s && make -s install
#   cluster_start main 'work_mem = 64MB'
#   psql -c 'select 1'               # PGHOST/PGPORT/PGUSER/PGDATABASE exported
#   cluster_stop                     # optional: the EXIT trap stops leftovers
#
# Knobs (environment):
#   MQ_EXTENSION     extension name for CREATE EXTENSION (default mq; only
#                    for dry runs of these scripts with a stand-in).
#   MQ_PRELOAD       shared_preload_libraries of new clusters (default
#                    $MQ_EXTENSION; set to '' for none).
#   MQ_INITDB_OPTS   extra initdb options (default: --no-locale -E UTF8).
#   MQ_KEEP_TMP=1    keep cluster temp dirs (logs) after stopping.
#   MQ_PG_ROOT       a private copy of PostgreSQL made by scripts/pg-private.sh:
#                    the extension is installed there (make install
#                    DESTDIR=...) and servers run from it, so that several
#                    work trees can build and test side by side without
#                    overwriting each other's mq.so.
#
# Do not install your own EXIT/INT/TERM trap after sourcing this file; use
# `mq_on_exit 'command ...'` to register extra cleanup instead.

if [[ -n "${MQ_LIB_SOURCED:-}" ]]; then
	return 0
fi
MQ_LIB_SOURCED=1

MQ_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export MQ_REPO_ROOT

: "${MQ_EXTENSION:=mq}"
: "${MQ_PRELOAD=$MQ_EXTENSION}"
: "${MQ_INITDB_OPTS=--no-locale -E UTF8}"

mq_log() { printf '%s\n' "$*" >&2; }
mq_die() {
	mq_log "error: $*"
	exit 1
}
mq_phase() { printf '\n==> %s\n' "$*"; }

mq_is_root() { [[ "$(id -u)" -eq 0 ]]; }

# ---------------------------------------------------------------------------
# PostgreSQL 15 binaries first in PATH
# ---------------------------------------------------------------------------
mq_pg_paths() {
	local cfg=""
	if [[ -n "${PG_CONFIG:-}" && -x "${PG_CONFIG}" ]]; then
		cfg="$PG_CONFIG"
	elif [[ -x /usr/lib/postgresql/15/bin/pg_config ]]; then
		cfg=/usr/lib/postgresql/15/bin/pg_config
	elif command -v pg_config >/dev/null 2>&1; then
		cfg="$(command -v pg_config)"
	else
		return 1
	fi
	PG_CONFIG="$cfg"
	PG_BINDIR="${MQ_PG_ROOT:-}$("$cfg" --bindir)"
	PG_PGXS="$("$cfg" --pgxs)"
	PG_PGXS_DIR="$(cd "$(dirname "$PG_PGXS")/../.." && pwd)"
	PG_TAP_PERL="$PG_PGXS_DIR/src/test/perl"
	PG_REGRESS="$PG_PGXS_DIR/src/test/regress/pg_regress"
	PG_VERSION_NUM="$("$cfg" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')"
	export PG_CONFIG PG_BINDIR PG_PGXS PG_PGXS_DIR PG_TAP_PERL PG_REGRESS
	case ":$PATH:" in
	"$PG_BINDIR":*) ;;
	*) PATH="$PG_BINDIR:$PATH" ;;
	esac
	export PATH
	if [[ "$PG_VERSION_NUM" != 15 ]]; then
		mq_log "warning: $cfg reports PostgreSQL $PG_VERSION_NUM, expected 15"
	fi
}
# Called at source time; harmless if PostgreSQL is not installed yet
# (install-deps.sh sources nothing; test.sh calls mq_pg_paths again).
mq_pg_paths || true

# ---------------------------------------------------------------------------
# Running as the postgres user
# ---------------------------------------------------------------------------
# as_postgres CMD...: run CMD as `postgres` when we are root, directly
# otherwise.  The whole environment (PATH, PG*, PERL5LIB, ...) is kept.  If
# postgres cannot enter the current directory, CMD runs from / instead
# (tested by path: a directory of mode 755 under one of mode 700 passes
# `test -x .` yet cannot be entered again, which libpq's tools do).
as_postgres() {
	if mq_is_root; then
		if runuser -u postgres -- test -x "$PWD" 2>/dev/null; then
			runuser -u postgres -- "$@"
		else
			(cd / && runuser -u postgres -- "$@")
		fi
	else
		"$@"
	fi
}

# mq_postgres_repo: set MQ_PG_REPO to a directory with the checkout that
# the postgres user can read, for what runs repo files as postgres (the
# TAP tests): MQ_REPO_ROOT itself when postgres can read it, else a copy of
# it (without .git, build products included, readable by all) in a temp
# dir removed at exit.  It never changes the permissions of the checkout
# or of the directories above it (a clone in /root, mode 700, stays so).
mq_postgres_repo() {
	if [[ -n "${MQ_PG_REPO:-}" ]]; then return 0; fi
	if ! mq_is_root || (cd / && runuser -u postgres -- test -r "$MQ_REPO_ROOT/scripts/lib.sh" 2>/dev/null &&
		[[ -z "$(find "$MQ_REPO_ROOT" -path "$MQ_REPO_ROOT/.git" -prune -o \
			\( ! -perm -o+r -o \( -type d ! -perm -o+x \) \) -print -quit)" ]]); then
		MQ_PG_REPO="$MQ_REPO_ROOT"
		return 0
	fi
	MQ_PG_REPO="$(mktemp -d "${TMPDIR:-/tmp}/mq-repo.XXXXXX")" || return 1
	chmod 755 "$MQ_PG_REPO"
	mq_on_exit "rm -rf '$MQ_PG_REPO'"
	# the phases beside it may build into the checkout meanwhile (the unit
	# tests' binaries in test/unit): tar's status 1, a file that changed
	# while it was read, is not a failure of the copy
	{ tar -C "$MQ_REPO_ROOT" --exclude=./.git --warning=no-file-changed -cf - . || (($? == 1)); } |
		tar -C "$MQ_PG_REPO" --no-same-owner -xf - || return 1
	chmod -R go+rX "$MQ_PG_REPO"
	mq_log "the postgres user cannot read $MQ_REPO_ROOT: it runs a copy, $MQ_PG_REPO"
}

# mq_run_timeout SECS [as_postgres] CMD...: run CMD (a program, not a shell
# function) with a time limit; `as_postgres` as the first word runs it as the
# postgres user.  Runs in the background and waits, so INT/TERM reach our
# trap at once; the trap terminates it.  Returns CMD's status (124: timeout).
mq_run_timeout() {
	local rc=0
	mq_spawn_timeout "$@"
	wait "$MQ_SPAWNED" || rc=$?
	mq_reaped "$MQ_SPAWNED" "$rc" "after ${1}s: ${*:2}"
	return "$rc"
}

# mq_spawn_timeout SECS [as_postgres] CMD...: start what mq_run_timeout
# runs, in the background (its stdout and stderr are the caller's: redirect
# the call), and return at once with its pid in MQ_SPAWNED; the exit trap
# terminates it.  Wait for it (wait, wait -n), then call mq_reaped.
mq_spawn_timeout() {
	local secs="$1"
	shift
	local pfx=()
	if [[ "$1" == as_postgres ]]; then
		shift
		if mq_is_root; then
			pfx=(runuser -u postgres --)
		fi
	fi
	(
		if ((${#pfx[@]})) && ! runuser -u postgres -- test -x "$PWD" 2>/dev/null; then
			cd /
		fi
		exec "${pfx[@]}" timeout -k 10 "$secs" "$@"
	) &
	MQ_SPAWNED=$!
	MQ_CHILD_PIDS+=("$MQ_SPAWNED")
}

# mq_reaped PID RC [WHAT]: PID (from mq_spawn_timeout) ended with RC: the
# exit trap forgets it; a timeout is said ("timed out WHAT").
mq_reaped() {
	local pid="$1" rc="$2" p kept=()
	for p in "${MQ_CHILD_PIDS[@]}"; do
		[[ "$p" == "$pid" ]] || kept+=("$p")
	done
	MQ_CHILD_PIDS=("${kept[@]}")
	if ((rc == 124 || rc == 137)); then
		mq_log "timed out ${3:-(pid $pid)}"
	fi
}

# mq_stop_servers_under DIR: stop (immediate, then SIGKILL) every postmaster
# whose data directory lies under DIR, e.g. nodes left by a killed TAP test.
mq_stop_servers_under() {
	local dir="$1" pidfile data pid
	[[ -d "$dir" ]] || return 0
	while IFS= read -r -d '' pidfile; do
		data="$(dirname "$pidfile")"
		as_postgres pg_ctl -D "$data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
		if [[ -f "$pidfile" ]]; then
			pid="$(head -n 1 "$pidfile" 2>/dev/null || true)"
			if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
				kill -KILL "$pid" 2>/dev/null || true
			fi
		fi
	done < <(find "$dir" -name postmaster.pid -print0 2>/dev/null)
}

# mq_stop_daemons_under DIR: kill (SIGCONT, then SIGKILL) every mq-broker
# and mq-kafka whose environment's TMPDIR, working directory or one of
# whose arguments (a config file) lies under DIR: the daemons a TAP test
# left behind (scripts/test.sh gives each test a TMPDIR of its own, which
# its brokers and their mq-kafka inherit), paused or orphaned ones too.
# Daemons of other tests and other runs are left alone.
mq_stop_daemons_under() {
	local dir="$1" p comm pid
	[[ -d "$dir" ]] || return 0
	dir="$(cd "$dir" && pwd -P)"
	for p in /proc/[0-9]*; do
		# (read, not cat: no process started per process looked at)
		{ read -r comm <"$p/comm"; } 2>/dev/null || continue
		[[ "$comm" == mq-broker || "$comm" == mq-kafka ]] || continue
		pid="${p#/proc/}"
		if _mq_proc_under "$p" "$dir"; then
			kill -CONT "$pid" 2>/dev/null || true
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

# _mq_proc_under /proc/PID DIR: does the process belong under DIR (above)?
_mq_proc_under() {
	local p="$1" dir="$2" v
	v="$(readlink "$p/cwd" 2>/dev/null || true)"
	[[ "$v" == "$dir" || "$v" == "$dir"/* ]] && return 0
	{ while IFS= read -r -d '' v; do
		[[ "$v" == "TMPDIR=$dir" || "$v" == "TMPDIR=$dir"/* ]] && return 0
	done <"$p/environ"; } 2>/dev/null
	{ while IFS= read -r -d '' v; do
		[[ "$v" == "$dir"/* ]] && return 0
	done <"$p/cmdline"; } 2>/dev/null
	return 1
}

# ---------------------------------------------------------------------------
# Cleanup: one trap for everything
# ---------------------------------------------------------------------------
MQ_CLUSTERS=()       # names of running clusters, in start order
MQ_EXIT_HOOKS=()     # extra commands (strings, eval'ed) run at exit
declare -gA MQ_CLUSTER_DIR=() MQ_CLUSTER_PORT=() MQ_COORD_HA=()
MQ_CHILD_PIDS=()     # background commands started by mq_run_timeout
MQ_CLEANED_UP=""

mq_on_exit() { MQ_EXIT_HOOKS+=("$1"); }

# Benchmarks: a scratch directory in WORK (mq-bench-NAME, readable by the
# postgres user), removed at exit unless MQ_BENCH_KEEP is set (its logs
# then stay for a look); the median of numbers on stdin.
mq_bench_work() {
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-bench-$1.XXXXXX")"
	chmod 755 "$WORK"
	[[ -n "${MQ_BENCH_KEEP:-}" ]] || mq_on_exit "rm -rf '$WORK'"
}
mq_median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# CPU ticks (user + system, /proc/PID/stat) of process PID: mq_proc_ticks;
# of the children it waited for after they ended: mq_reaped_ticks (a
# postmaster's: its backends that exited).  Nothing, and status 1, when
# PID is gone.  Fields are counted after the command name, which may hold
# spaces.
_mq_stat_ticks() {
	local f
	f="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	awk -v i="$2" '{ print $i + $(i + 1) }' <<<"${f##*) }"
}
mq_proc_ticks() { _mq_stat_ticks "$1" 12; }
mq_reaped_ticks() { _mq_stat_ticks "$1" 14; }
# A / B with two decimals, "-" when B is not positive (the benchmarks' ratios)
mq_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

_mq_cleanup() {
	local rc=$?
	[[ -n "$MQ_CLEANED_UP" ]] && return "$rc"
	MQ_CLEANED_UP=1
	set +e
	trap - INT TERM
	local i
	for i in "${MQ_CHILD_PIDS[@]}"; do
		kill -TERM "$i" 2>/dev/null
	done
	((${#MQ_CHILD_PIDS[@]})) && sleep 1
	for ((i = ${#MQ_CLUSTERS[@]} - 1; i >= 0; i--)); do
		cluster_stop "${MQ_CLUSTERS[i]}" >/dev/null 2>&1 ||
			mq_log "warning: could not stop cluster ${MQ_CLUSTERS[i]}"
	done
	for ((i = ${#MQ_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${MQ_EXIT_HOOKS[i]}" >/dev/null 2>&1
	done
	return "$rc"
}
trap _mq_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Free TCP port on 127.0.0.1 (the kernel picks; perl is always present)
# ---------------------------------------------------------------------------
free_port() {
	perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0,
			Proto => "tcp", Listen => 1, ReuseAddr => 0) or die "bind: $!\n";
		print $s->sockport, "\n";'
}

# ---------------------------------------------------------------------------
# Throwaway clusters
# ---------------------------------------------------------------------------
# cluster_start NAME [postgresql.conf line...]
# Creates, configures and starts a cluster in a fresh temp dir.  Exports
# PGHOST (the socket dir), PGPORT, PGUSER=postgres, PGDATABASE=postgres, and
# MQ_CLUSTER (dir), MQ_PGDATA, MQ_SERVER_LOG for the caller.
cluster_start() {
	local name="${1:?cluster_start NAME [conf lines...]}"
	shift
	[[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || {
		mq_log "cluster_start: bad name '$name'"
		return 1
	}
	if [[ -n "${MQ_CLUSTER_DIR[$name]:-}" ]]; then
		mq_log "cluster_start: cluster '$name' already running"
		return 1
	fi
	command -v initdb >/dev/null || {
		mq_log "cluster_start: initdb not found (is postgresql-15 installed?)"
		return 1
	}

	local dir
	dir="$(mktemp -d "${TMPDIR:-/tmp}/mq-$name.XXXXXX")" || return 1
	MQ_CLUSTERS+=("$name")
	MQ_CLUSTER_DIR[$name]="$dir"
	chmod 700 "$dir"
	if mq_is_root; then
		chown postgres:postgres "$dir" || return 1
	fi
	local data="$dir/data" log="$dir/server.log"

	# shellcheck disable=SC2086 # MQ_INITDB_OPTS is a list of options
	if ! as_postgres initdb -D "$data" -U postgres --auth=trust $MQ_INITDB_OPTS \
		>"$dir/initdb.log" 2>&1; then
		mq_log "cluster_start: initdb failed for '$name':"
		tail -n 30 "$dir/initdb.log" >&2
		return 1
	fi

	# members of mq_sasl_test (test/kafka/sasl*.sh makes it) log in with a
	# password: mq-kafka --sasl=plain checks passwords by logging in
	{
		printf '# --- added by scripts/lib.sh cluster_start ---\n'
		printf 'local all +mq_sasl_test scram-sha-256\n'
		printf 'host all +mq_sasl_test 127.0.0.1/32 scram-sha-256\n'
		cat "$data/pg_hba.conf"
	} >"$data/pg_hba.conf.new" && mv "$data/pg_hba.conf.new" "$data/pg_hba.conf" || return 1
	if mq_is_root; then
		chown postgres:postgres "$data/pg_hba.conf" || return 1
	fi
	{
		printf '\n# --- added by scripts/lib.sh cluster_start ---\n'
		printf "listen_addresses = '127.0.0.1'\n"
		printf "unix_socket_directories = '%s'\n" "$dir"
		printf 'max_connections = 100\n'
		printf 'logging_collector = off\n'
		printf "log_line_prefix = '%%m [%%p] %%q%%a '\n"
		if [[ -n "$MQ_PRELOAD" ]]; then
			printf "shared_preload_libraries = '%s'\n" "$MQ_PRELOAD"
			# maintenance only in postgres: the suites' databases run
			# mq.run_maintenance() themselves, when they mean to (a
			# caller's own "mq.database = ''" line comes later and wins;
			# test/t/131 checks every database being maintained)
			printf "mq.database = 'postgres'\n"
		fi
		local line
		for line in "$@"; do printf '%s\n' "$line"; done
	} >>"$data/postgresql.conf"

	local attempt port started=""
	for attempt in 1 2 3; do
		port="$(free_port)" || return 1
		# The last "port" line wins in postgresql.conf.
		printf 'port = %s\n' "$port" >>"$data/postgresql.conf"
		if as_postgres pg_ctl -D "$data" -l "$log" -w -t 60 start >/dev/null 2>&1; then
			started=1
			break
		fi
		if grep -q 'Address already in use' "$log" 2>/dev/null; then
			mq_log "cluster_start: port $port taken, retrying ($attempt)"
			continue
		fi
		break
	done
	if [[ -z "$started" ]]; then
		mq_log "cluster_start: server '$name' failed to start; last lines of $log:"
		tail -n 40 "$log" >&2 || true
		return 1
	fi

	MQ_CLUSTER_PORT[$name]="$port"
	cluster_env "$name"
	mq_log "cluster '$name' up: port $port, socket dir $dir, log $log"
}

# cluster_env NAME: (re-)export the connection variables for NAME.
cluster_env() {
	local name="${1:?cluster_env NAME}"
	local dir="${MQ_CLUSTER_DIR[$name]:?no such cluster: $name}"
	export PGHOST="$dir" PGPORT="${MQ_CLUSTER_PORT[$name]}"
	export PGUSER=postgres PGDATABASE=postgres
	export MQ_CLUSTER="$dir" MQ_PGDATA="$dir/data" MQ_SERVER_LOG="$dir/server.log"
}

# cluster_stop [NAME [immediate [nowait]]]: stop NAME (default: the last
# started) and remove its temp dir.  Fast shutdown, then immediate, then
# SIGKILL of its postmaster; `immediate` skips the fast shutdown and its
# checkpoint (for a cluster whose data is thrown away: after a test run's
# dozens of databases, the shutdown checkpoint outlasted the 30 s wait);
# `nowait` removes the temp dir in the background (it took 38 to 103 s on
# a busy disk).
cluster_stop() {
	local name="${1:-}" mode="${2:-fast}"
	if [[ -z "$name" ]]; then
		((${#MQ_CLUSTERS[@]})) || return 0
		name="${MQ_CLUSTERS[${#MQ_CLUSTERS[@]} - 1]}"
	fi
	local dir="${MQ_CLUSTER_DIR[$name]:-}"
	[[ -n "$dir" ]] || return 0
	local data="$dir/data"
	if [[ -f "$data/postmaster.pid" ]]; then
		if [[ "$mode" == immediate ]] ||
			! as_postgres pg_ctl -D "$data" -m fast -w -t 30 stop >/dev/null 2>&1; then
			as_postgres pg_ctl -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
		if [[ -f "$data/postmaster.pid" ]]; then
			local pid
			pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
			if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
				mq_log "cluster_stop: killing postmaster $pid of '$name'"
				kill -KILL "$pid" 2>/dev/null || true
				sleep 1
			fi
		fi
	fi
	if [[ -n "${MQ_KEEP_TMP:-}" ]]; then
		mq_log "cluster '$name' stopped; kept $dir"
	elif [[ "${3:-}" == nowait ]]; then
		# a test run's many databases take long to remove on a busy disk
		(rm -rf "$dir" &)
	else
		rm -rf "$dir"
	fi
	unset 'MQ_CLUSTER_DIR[$name]' 'MQ_CLUSTER_PORT[$name]'
	local n kept=()
	for n in "${MQ_CLUSTERS[@]}"; do
		[[ "$n" == "$name" ]] || kept+=("$n")
	done
	MQ_CLUSTERS=("${kept[@]}")
	if [[ "${MQ_CLUSTER:-}" == "$dir" ]]; then
		unset PGHOST PGPORT MQ_CLUSTER MQ_PGDATA MQ_SERVER_LOG
	fi
}

# ---------------------------------------------------------------------------
# Build + install the extension (shared by test.sh and demo.sh)
# ---------------------------------------------------------------------------
mq_build_install() {
	mq_pg_paths || mq_die "pg_config not found; run scripts/install-deps.sh"
	local jobs
	jobs="$(nproc 2>/dev/null || echo 2)"
	if ! compgen -G "$MQ_REPO_ROOT/src/*.c" >/dev/null; then
		mq_log "mq_build_install: no src/*.c yet: nothing to build"
		return 1
	fi
	(cd "$MQ_REPO_ROOT" && make -s -j"$jobs" PG_CONFIG="$PG_CONFIG") || return 1
	if [[ -n "${MQ_PG_ROOT:-}" ]]; then
		(cd "$MQ_REPO_ROOT" && make -s install PG_CONFIG="$PG_CONFIG" DESTDIR="$MQ_PG_ROOT") || return 1
	elif mq_is_root; then
		(cd "$MQ_REPO_ROOT" && make -s install PG_CONFIG="$PG_CONFIG") || return 1
	elif command -v sudo >/dev/null 2>&1; then
		(cd "$MQ_REPO_ROOT" && sudo make -s install PG_CONFIG="$PG_CONFIG") || return 1
	else
		mq_log "mq_build_install: not root and no sudo: cannot install"
		return 1
	fi
}

# ---------------------------------------------------------------------------
# Replicated clusters: data nodes, a coordinator and mq-broker processes
# (docs/replication.md).  Each node and the coordinator is a cluster_start
# cluster; each broker is a background process stopped (SIGTERM) at exit,
# before the clusters, and connects as the non-superuser role
# $MQ_BROKER_ROLE (broker_role_setup).
#
#   cluster_start node1; cluster_start node2; cluster_start node3
#   cluster_start coord
#   for n in node1 node2 node3 coord; do cluster_psql $n -c 'CREATE EXTENSION mq'; done
#   broker_start 1 node1 coord; broker_start 2 node2 coord; broker_start 3 node3 coord
#   cluster_psql coord -c "SELECT mq_coord.create_topic('t', 1, '{...}')"
# ---------------------------------------------------------------------------
declare -gA MQ_BROKER_PID=()

# cluster_conninfo NAME: a libpq connection string for cluster NAME
# (loopback trust authentication: no password).
cluster_conninfo() {
	local name="${1:?cluster_conninfo NAME}" dir
	dir="${MQ_CLUSTER_DIR[$name]:?no such cluster: $name}"
	if [[ -n "${MQ_COORD_HA[$name]:-}" ]]; then
		# both nodes of a coord_ha_start coordinator: libpq finds the primary
		printf 'host=%s,%s port=%s dbname=postgres user=postgres target_session_attrs=read-write connect_timeout=2\n' \
			"$dir" "$dir" "${MQ_CLUSTER_PORT[$name]}"
		return
	fi
	printf 'host=%s port=%s dbname=postgres user=postgres\n' "$dir" "${MQ_CLUSTER_PORT[$name]}"
}

# coord_ha_start NAME: a highly available coordinator (scripts/coord-ha.sh:
# pg_auto_failover's monitor, a primary and a synchronous standby, with
# CREATE EXTENSION mq), stopped and removed at exit.  cluster_conninfo and
# cluster_psql NAME reach its primary, whichever node that is; coord_ha
# NAME primary|kill9 N|restart N|wait runs scripts/coord-ha.sh on it.
coord_ha_start() {
	local name="${1:?coord_ha_start NAME}" dir p1 p2
	dir="$(mktemp -d "${TMPDIR:-/tmp}/mq-$name.XXXXXX")" || return 1
	chmod 755 "$dir"
	if mq_is_root; then chown postgres:postgres "$dir" || return 1; fi
	mq_on_exit "bash '$MQ_REPO_ROOT/scripts/coord-ha.sh' stop '$dir/ha'; rm -rf '$dir'"
	p1="$(free_port)" && p2="$(free_port)" || return 1
	if ! bash "$MQ_REPO_ROOT/scripts/coord-ha.sh" start "$dir/ha" "$(free_port)" "$p1" "$p2" \
		>/dev/null 2>"$dir/coord-ha.log"; then
		mq_log "coord_ha_start: scripts/coord-ha.sh failed:"
		tail -n 20 "$dir/coord-ha.log" >&2
		return 1
	fi
	MQ_CLUSTER_DIR[$name]="$dir/ha"
	MQ_CLUSTER_PORT[$name]="$p1,$p2"
	MQ_COORD_HA[$name]=1
	mq_log "coordinator '$name' up, highly available: nodes on ports $p1 and $p2, logs in $dir/ha"
}

coord_ha() {
	local name="${1:?coord_ha NAME COMMAND [N]}"
	shift
	bash "$MQ_REPO_ROOT/scripts/coord-ha.sh" "$1" "${MQ_CLUSTER_DIR[$name]:?no such coordinator: $name}" "${@:2}"
}

# cluster_psql NAME [psql args...]: psql -X -q -v ON_ERROR_STOP=1 on NAME.
cluster_psql() {
	local name="${1:?cluster_psql NAME [args]}"
	shift
	psql -X -q -v ON_ERROR_STOP=1 -d "$(cluster_conninfo "$name")" "$@"
}

# cluster_kill9 NAME: kill -9 the postmaster of NAME and wait until it and
# its children are gone (so that cluster_restart can start it again).
cluster_kill9() {
	local name="${1:?cluster_kill9 NAME}" data pid p i kids
	data="${MQ_CLUSTER_DIR[$name]:?no such cluster: $name}/data"
	pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	kids="$(pgrep -P "$pid" || true)"
	kill -KILL "$pid" 2>/dev/null || true
	# the children leave once they notice; the shared memory goes with them
	for p in $pid $kids; do
		for ((i = 0; i < 500; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.01
		done
	done
}

# cluster_restart NAME: start NAME again (same data, port and socket dir).
cluster_restart() {
	local name="${1:?cluster_restart NAME}" dir
	dir="${MQ_CLUSTER_DIR[$name]:?no such cluster: $name}"
	local pid
	pid="$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)"
	if [[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$dir/data/postmaster.pid"	# left by cluster_kill9
	fi
	as_postgres pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
}

# The role brokers connect as: a login role without superuser, granted
# what a broker needs by mq.grant_broker / mq_coord.grant_broker
# (docs/replication.md, "The broker's role").
MQ_BROKER_ROLE=mq_broker

# broker_role_setup NAME: create the broker role on cluster NAME (where
# the extension exists) and grant it what a broker needs; idempotent.
broker_role_setup() {
	local name="${1:?broker_role_setup NAME}"
	cluster_psql "$name" -c "DO \$\$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '$MQ_BROKER_ROLE') THEN
			CREATE ROLE $MQ_BROKER_ROLE LOGIN NOSUPERUSER;
		END IF; END \$\$" \
		-c "SELECT mq.grant_broker('$MQ_BROKER_ROLE')" \
		-c "SELECT mq_coord.grant_broker('$MQ_BROKER_ROLE')" >/dev/null
}

# broker_start ID NODE COORD [ini line...]: start mq-broker with id ID for
# cluster NODE, coordinated by cluster COORD; extra lines go to the end of
# its ini file (say "[replication]" "replica.lag.time.max.ms = 5000").  Its
# log is NODE's directory's broker.log.  The broker of the build tree is
# used when there is one, else mq-broker from PATH.  It connects as
# $MQ_BROKER_ROLE, set up on NODE and COORD first (broker_role_setup).
broker_start() {
	local id="${1:?broker_start ID NODE COORD}" node="${2:?}" coord="${3:?}"
	shift 3
	local dir="${MQ_CLUSTER_DIR[$node]:?no such cluster: $node}" bin line
	bin="$MQ_REPO_ROOT/broker/mq-broker/mq-broker"
	[[ -x "$bin" ]] || bin="$(command -v mq-broker)" || {
		mq_log "broker_start: mq-broker not built (make) nor installed"
		return 1
	}
	broker_role_setup "$node" || return 1
	broker_role_setup "$coord" || return 1
	{
		printf '[broker]\nid = %s\nnode = %s user=%s\nnode.name = %s\ncoordinator = %s user=%s\n' \
			"$id" "$(cluster_conninfo "$node" | sed 's/ user=[^ ]*//')" "$MQ_BROKER_ROLE" "$node" \
			"$(cluster_conninfo "$coord" | sed 's/ user=[^ ]*//')" "$MQ_BROKER_ROLE"
		for line in "$@"; do printf '%s\n' "$line"; done
	} >"$dir/broker.ini"
	"$bin" -c "$dir/broker.ini" >>"$dir/broker.log" 2>&1 &
	MQ_BROKER_PID[$id]=$!
	# stopped with the other children at exit, before the clusters
	MQ_CHILD_PIDS+=("$!")
}

# broker_stop ID [SIGNAL]: signal broker ID (default TERM) and, unless the
# signal is STOP or CONT, wait for it to exit.
broker_stop() {
	local id="${1:?broker_stop ID [SIGNAL]}" sig="${2:-TERM}" pid
	pid="${MQ_BROKER_PID[$id]:-}"
	[[ -n "$pid" ]] || return 0
	kill -"$sig" "$pid" 2>/dev/null || true
	case "$sig" in
	STOP | CONT) return 0 ;;
	esac
	wait "$pid" 2>/dev/null || true
	unset 'MQ_BROKER_PID[$id]'
	local p kept=()
	for p in "${MQ_CHILD_PIDS[@]}"; do
		[[ "$p" == "$pid" ]] || kept+=("$p")
	done
	MQ_CHILD_PIDS=("${kept[@]}")
}
