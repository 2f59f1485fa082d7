#!/usr/bin/env bash
# The Debian packages (debian/, docs/operations.md "Installing from Debian
# packages"), end to end, running that section's shell blocks:
#   1. build: a copy of the checkout, `apt-get build-dep ./` and
#      `dpkg-buildpackage -us -uc -b`; the package's version is
#      mq.control's default_version; lintian --pedantic has nothing to say
#      (debian/rules writes the one override, explained there)
#   2. install: `apt-get install ./postgresql-15-mq_*.deb ./mq-tools_*.deb`;
#      neither package pulls Redis, NATS, compilers or the fuzzers (the
#      recursive Depends); the user mq, the conffiles, the units
#   3. a cluster of the system's PostgreSQL 15 loads the packaged library
#      (shared_preload_libraries), CREATE EXTENSION mq, a produce, a fetch
#   4. the configure block: /etc/mq/pgpass and instance node1 of both
#      units from the packaged samples; the roles mq_broker and mq_kafka
#      log in with a password only (scram), so the daemons must read it
#   5. the units: with systemd as PID 1, the start block (systemctl); else
#      `systemd-analyze verify` and test/package/unit_run.py runs each
#      unit's ExecStart as its user with its environment and requires
#      READY=1, WATCHDOG=1, STOPPING=1 and exit 0; meanwhile the broker
#      must register with the coordinator and mq-kafka must take a record
#      from kcat that mq.fetch then returns
#   6. the purge block; then every file the packages replaced (a `make
#      install` of the same files) is put back, the user mq and any
#      package apt pulled in are removed: the machine is as it was
# Needs root; refuses to run if mq-tools or postgresql-15-mq is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# the packages install into the system's PostgreSQL: test that one
unset MQ_PG_ROOT
export PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PATH="/usr/lib/postgresql/15/bin:$PATH"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

mq_is_root || mq_die "test/package/deb.sh installs packages: run it as root"
for p in postgresql-15-mq mq-tools; do
	if dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -q .; then
		[[ "$(dpkg-query -W -f='${db:Status-Status}' "$p")" == not-installed ]] ||
			mq_die "$p is installed: this test would remove it"
	fi
done
[[ ! -e /etc/mq ]] || mq_die "/etc/mq exists: this test would change it"

APT=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-deb.XXXXXX")"
chmod 755 "$WORK"
SRC="$WORK/src/mq"
mkdir -p "$SRC" "$WORK/backup"

# doc_block NAME: the ```sh block after "<!-- package-test: NAME -->"
doc_block() {
	awk -v name="$1" '
		$0 == "<!-- package-test: " name " -->" { want = 1; next }
		want && /^```sh/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$MQ_REPO_ROOT/docs/operations.md"
}
run_block() {
	local name="$1" text
	text="$(doc_block "$name")"
	[[ -n "$text" ]] || mq_die "docs/operations.md has no package-test block $name"
	printf '+ %s\n' "$text" | sed '2,$s/^/+ /'
	bash -euo pipefail -c "$text"
}

# --- the state to come back to ---------------------------------------------
dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" {print $2}' |
	sort >"$WORK/pkgs.before"
USER_EXISTED=""
if getent passwd mq >/dev/null; then USER_EXISTED=1; fi
INSTALLED=""

restore() {
	set +e
	if [[ -n "$INSTALLED" ]]; then
		if [[ "$(ps -p 1 -o comm=)" == systemd ]]; then
			systemctl disable --now mq-broker@node1 mq-kafka@node1 >/dev/null 2>&1
		fi
		rm -f /etc/mq/pgpass /etc/mq/broker-node1.ini /etc/mq/kafka-node1.conf
		"${APT[@]}" purge -y postgresql-15-mq mq-tools >/dev/null 2>&1
	fi
	# packages apt pulled in for them
	dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" {print $2}' |
		sort >"$WORK/pkgs.after"
	local extra
	extra="$(comm -13 "$WORK/pkgs.before" "$WORK/pkgs.after" | tr '\n' ' ')"
	if [[ -n "$extra" ]]; then
		echo "removing what the packages pulled in: $extra"
		# shellcheck disable=SC2086
		"${APT[@]}" purge -y $extra >/dev/null 2>&1
	fi
	# files of a `make install` the packages replaced
	local f
	while IFS= read -r -d '' f; do
		f="${f#"$WORK/backup"}"
		mkdir -p "$(dirname "$f")"
		cp -a "$WORK/backup$f" "$f"
	done < <(find "$WORK/backup" -type f -print0)
	[[ -n "$USER_EXISTED" ]] || deluser --system --quiet mq >/dev/null 2>&1
	getent group mq >/dev/null && [[ -z "$USER_EXISTED" ]] && delgroup --system --quiet mq >/dev/null 2>&1
	rm -rf /etc/mq
	rm -rf "$WORK"
}
mq_on_exit restore

# --- 1. build ----------------------------------------------------------------
if [[ -n "${MQ_DEB_PREBUILT:-}" ]]; then
	# knob for working on this test: the .deb and .changes files of an
	# earlier build, neither built nor linted again
	mq_phase "build: skipped, the packages of $MQ_DEB_PREBUILT"
	cp "$MQ_DEB_PREBUILT"/*.deb "$WORK/src/"
else
mq_phase "build: a copy of the checkout, then the build block of docs/operations.md"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$SRC"
else
	cp -a . "$SRC"
fi
(
	cd "$SRC"
	export DEB_BUILD_OPTIONS="parallel=$(nproc) noddebs"
	run_block build >"$WORK/build.log" 2>&1
) || {
	tail -n 40 "$WORK/build.log"
	mq_die "the build block failed"
}
echo "built: $(cd "$WORK/src" && ls ./*.deb | tr '\n' ' ')"
version="$(dpkg-deb -f "$WORK"/src/postgresql-15-mq_*.deb Version)"
extversion="$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" mq.control)"
[[ "$version" == "$extversion" ]] ||
	mq_die "package version $version is not mq.control's $extversion: add a debian/changelog entry"

mq_phase "lintian --pedantic"
# as an ordinary user, as lintian wants
if ! (cd / && runuser -u nobody -- env HOME="$WORK" lintian --pedantic --info \
	--fail-on error,warning,info,pedantic "$WORK"/src/*.changes); then
	mq_die "lintian has something to say (fix it, or override it in debian/ with the reason)"
fi
echo "lintian: nothing"
fi

# --- 2. install --------------------------------------------------------------
mq_phase "install block: apt-get install ./postgresql-15-mq_*.deb ./mq-tools_*.deb"
# back up the files the packages will replace (a `make install` of the same)
for deb in "$WORK"/src/*.deb; do
	dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | while read -r f; do
		if [[ -f "$f" ]]; then
			mkdir -p "$WORK/backup$(dirname "$f")"
			cp -a "$f" "$WORK/backup$f"
		fi
	done
done
INSTALLED=1
(cd "$WORK/src" && run_block install >"$WORK/install.log" 2>&1) || {
	tail -n 30 "$WORK/install.log"
	mq_die "the install block failed"
}

deps="$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances postgresql-15-mq mq-tools | grep -v '^ ' | sort -u)"
bad="$(grep -E '^(redis|nats|libhiredis|libnats|clang|llvm-[0-9]+-dev|libfuzzer|gnuplot|pgqd|postgresql-15-pgq|nodejs|kcat|gcc(-[0-9]+)?$|cpp(-[0-9]+)?$|build-essential)' <<<"$deps" || true)"
[[ -z "$bad" ]] || mq_die "installing mq pulls in: $(tr '\n' ' ' <<<"$bad")"
echo "dependencies: $(wc -l <<<"$deps") packages, none of Redis, NATS, PgQ, compilers, fuzzers"

getent passwd mq | grep -q ':/usr/sbin/nologin$' || mq_die "no system user mq with nologin"
[[ "$(id -u mq)" -lt 1000 ]] || mq_die "mq is not a system user"
conffiles="$(dpkg-query -W -f='${Conffiles}' mq-tools)"
for f in /etc/mq/broker-main.ini /etc/mq/kafka-main.conf; do
	grep -q " $f " <<<"$conffiles" || mq_die "$f is not a conffile"
	! grep -qi 'password *=' "$f" || mq_die "$f holds a password"
done
for u in mq-broker@ mq-kafka@; do
	[[ -f "/lib/systemd/system/$u.service" ]] || mq_die "no unit $u.service"
done
man -w mq-broker >/dev/null || mq_die "no manual page for mq-broker"
echo "user mq, conffiles, units and manual pages in place"

# --- 3. the packaged extension in a cluster ---------------------------------
mq_phase "a cluster of the system's PostgreSQL 15 with the packaged extension"
[[ "$(pg_config --pkglibdir)" == /usr/lib/postgresql/15/lib ]] || mq_die "not the system's PostgreSQL"
cluster_start node
cluster_psql node -c "CREATE EXTENSION mq" \
	-c "SELECT mq.create_topic('pkgtest', 1)" \
	-c "SELECT * FROM mq.send('pkgtest', 'k', 'from the package')" >/dev/null
got="$(psql -X -At -c "SELECT pg_catalog.convert_from(value, 'UTF8') FROM mq.fetch('pkgtest', 0, 0)")"
[[ "$got" == "from the package" ]] || mq_die "fetch returned '$got'"
lib="$(psql -X -At -c "SELECT setting FROM pg_settings WHERE name = 'dynamic_library_path'")"
echo "produce and fetch work (library from $(pg_config --pkglibdir), dynamic_library_path $lib)"
cluster_start coord
cluster_psql coord -c "CREATE EXTENSION mq" >/dev/null
NODE_PORT="${MQ_CLUSTER_PORT[node]}"
COORD_PORT="${MQ_CLUSTER_PORT[coord]}"

# --- 4. configure ------------------------------------------------------------
mq_phase "configure block: /etc/mq/pgpass and instance node1 from the packaged samples"
SECRET="pkg-$RANDOM-$RANDOM"
for c in node coord; do
	hba="${MQ_CLUSTER_DIR[$c]}/data/pg_hba.conf"
	{
		printf 'host all mq_broker 127.0.0.1/32 scram-sha-256\n'
		printf 'host all mq_kafka 127.0.0.1/32 scram-sha-256\n'
		cat "$hba"
	} >"$hba.new" && mv "$hba.new" "$hba" && chown postgres:postgres "$hba"
	cluster_psql "$c" -c "CREATE ROLE mq_broker LOGIN PASSWORD '$SECRET'" \
		-c "CREATE ROLE mq_kafka LOGIN PASSWORD '$SECRET'" \
		-c "SELECT mq.grant_broker('mq_broker')" -c "SELECT mq_coord.grant_broker('mq_broker')" \
		-c "SELECT pg_catalog.pg_reload_conf()" >/dev/null
done
cluster_psql node -c "SELECT mq.grant('write', 'topic', 'pkgtest', 'mq_kafka')" \
	-c "SELECT mq.grant('read', 'topic', 'pkgtest', 'mq_kafka')" \
	-c "GRANT SELECT ON mq.replica_status TO mq_kafka" >/dev/null
run_block configure
# the block's example line, for this machine's two clusters
sed -i "s/^localhost:5432:\*:mq_broker:change-me\$/127.0.0.1:$NODE_PORT:*:mq_broker:$SECRET/" /etc/mq/pgpass
printf '127.0.0.1:%s:*:mq_broker:%s\n127.0.0.1:%s:*:mq_kafka:%s\n' \
	"$COORD_PORT" "$SECRET" "$NODE_PORT" "$SECRET" >>/etc/mq/pgpass
[[ "$(stat -c '%a %U' /etc/mq/pgpass)" == "600 mq" ]] || mq_die "pgpass is not 600 mq"
sed -i -e "s/^node = .*/node = host=127.0.0.1 port=$NODE_PORT dbname=postgres user=mq_broker/" \
	-e "s/^coordinator = .*/coordinator = host=127.0.0.1 port=$COORD_PORT dbname=postgres user=mq_broker/" \
	/etc/mq/broker-node1.ini
KAFKA_PORT="$(free_port)"
sed -i -e "s/^MQ_KAFKA_DBNAME=.*/MQ_KAFKA_DBNAME=\"host=127.0.0.1 port=$NODE_PORT dbname=postgres user=mq_kafka\"/" \
	-e "s/^MQ_KAFKA_LISTEN=.*/MQ_KAFKA_LISTEN=\"127.0.0.1:$KAFKA_PORT\"/" /etc/mq/kafka-node1.conf
! psql -X -At -d "host=127.0.0.1 port=$NODE_PORT dbname=postgres user=mq_broker" -c 'SELECT 1' \
	</dev/null >/dev/null 2>&1 || mq_die "mq_broker logs in without a password: the passfile proves nothing"

# --- 5. the units --------------------------------------------------------------
BROKER_CHECK="psql -X -At -p $COORD_PORT -h 127.0.0.1 -U postgres -c \
	\"SELECT count(*) FROM mq_coord.broker WHERE broker_id = 1 AND node_name = 'node1'\" | grep -qx 1"
KAFKA_CHECK="printf 'via-kafka\n' | kcat -P -b 127.0.0.1:$KAFKA_PORT -t pkgtest -p 0 -k k2 >/dev/null 2>&1 &&
	psql -X -At -p $NODE_PORT -h 127.0.0.1 -U postgres -c \
	\"SELECT count(*) FROM mq.fetch('pkgtest', 0, 0) WHERE value = pg_catalog.convert_to('via-kafka', 'UTF8')\" | grep -qx 1"
if [[ "$(ps -p 1 -o comm=)" == systemd ]]; then
	mq_phase "PID 1 is systemd: the start block (systemctl)"
	run_block start
	bash -c "$BROKER_CHECK" || mq_die "the broker did not register with the coordinator"
	bash -c "$KAFKA_CHECK" || mq_die "mq-kafka did not take a record"
	journalctl -u mq-broker@node1 | grep -q 'starting broker 1' || mq_die "no broker log in the journal"
	systemctl stop mq-broker@node1 mq-kafka@node1
else
	mq_phase "PID 1 is $(ps -p 1 -o comm=), not systemd: systemd-analyze verify, then each unit's ExecStart as systemd would run it"
	for u in mq-broker@node1 mq-kafka@node1; do
		out="$(systemd-analyze verify "$u.service" 2>&1 || true)"
		# without systemd running, only what is about the unit file counts
		if grep -v -e 'Failed to connect\|System has not been booted\|D-Bus\|Failed to prepare filename\|Failed to load\|No such file' \
			<<<"$out" | grep -q .; then
			printf '%s\n' "$out"
			mq_die "systemd-analyze verify $u.service complains"
		fi
		echo "systemd-analyze verify $u.service: ok${out:+ (said: $(head -n 1 <<<"$out"))}"
	done
	python3 test/package/unit_run.py /lib/systemd/system/mq-broker@.service node1 \
		--check "$BROKER_CHECK" || mq_die "mq-broker@node1 failed as a notify unit"
	python3 test/package/unit_run.py /lib/systemd/system/mq-kafka@.service node1 \
		--check "$KAFKA_CHECK" || mq_die "mq-kafka@node1 failed as a notify unit"
fi

# --- 6. purge ----------------------------------------------------------------
mq_phase "purge block"
rm -f /etc/mq/pgpass /etc/mq/broker-node1.ini /etc/mq/kafka-node1.conf
cluster_stop coord
cluster_stop node
run_block purge >"$WORK/purge.log" 2>&1 || {
	cat "$WORK/purge.log"
	mq_die "the purge block failed"
}
INSTALLED=""
[[ ! -e /etc/mq ]] || mq_die "/etc/mq is left after the purge"
echo "package test passed"
