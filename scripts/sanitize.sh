#!/usr/bin/env bash
# scripts/sanitize.sh: the tests of the frontend tools with mqctl,
# mq-kafka and mq-broker built with AddressSanitizer and
# UndefinedBehaviorSanitizer (-fsanitize=address,undefined
# -fno-omit-frame-pointer; clang, or $CC).
#
#   bash scripts/sanitize.sh        # build, then the CLI, Kafka and TAP tests
#   MQ_SANITIZE_ONLY=cli bash scripts/sanitize.sh
#
# The sanitized tools are built in a copy of the work tree (a temp dir), so
# that the normal build's objects are not touched, and the copy's own
# scripts/test.sh runs there with MQ_SKIP_BUILD=1: test/cli/*.sh use the
# copy's broker/mqctl/mqctl (MQCTL names it), test/kafka/*.sh the copy's
# broker/mq-kafka/mq-kafka (test/kafka/lib.bash), and the multi-node TAP
# tests (scripts/lib.sh broker_start, test/t/MqCluster.pm) find the copy's
# broker/mq-broker/mq-broker, all through the copy's MQ_REPO_ROOT.  The
# extension is the one installed (into MQ_PG_ROOT if set): this script
# builds and installs it first unless MQ_SKIP_BUILD=1 (scripts/test.sh runs
# it as its "sanitize" phase, after its own build).
#
# Any sanitizer report fails the run: both sanitizers stop the process at
# the first report (halt_on_error, abort_on_error; leaks are checked at
# exit) and write it under the copy's reports/ directory, which must be
# empty at the end, whatever the tests themselves concluded.  clang by
# default, because gcc's UBSan runtime, linked beside ASan's, prints its
# reports on standard error whatever log_path says, where a test that
# does not look at the exit status could miss them.
#
# Knobs: MQ_SANITIZE_ONLY (phases of test.sh to run sanitized; default
# "cli kafka tap"; the Kafka tests with a sanitized mq-kafka found a
# use-after-free in a static member's rejoin that the CLI's one TLS
# exchange and the fuzzer never reach), CC, MQ_KEEP_TMP=1 (keep the copy), and those of test.sh.
# Prints `sanitize: N reports` and test.sh's `N passed, N failed` line,
# and exits non-zero if either is not clean.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

ONLY="${MQ_SANITIZE_ONLY:-cli kafka tap}"
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

if [[ -z "${MQ_SKIP_BUILD:-}" ]]; then
	mq_phase "dependencies and the extension (make -s; make -s install)"
	bash scripts/install-deps.sh run build test
	mq_build_install || mq_die "build failed"
fi
mq_pg_paths || mq_die "pg_config not found (run scripts/install-deps.sh)"

copy="$(mktemp -d "${TMPDIR:-/tmp}/mq-sanitize.XXXXXX")"
chmod 755 "$copy"
if [[ -z "${MQ_KEEP_TMP:-}" ]]; then
	mq_on_exit "rm -rf '$copy'"
fi

mq_phase "build mqctl, mq-kafka and mq-broker with $SAN_FLAGS in $copy"
tar -C "$MQ_REPO_ROOT" --exclude=./.git --exclude='*.o' --exclude='*.d' \
	--exclude='*.so' --exclude='*.bc' --exclude=./results --exclude=./tmp_check -cf - . |
	tar -C "$copy" -xf -
make -s -C "$copy/broker" clean
make -s -j"$(nproc 2>/dev/null || echo 2)" -C "$copy/broker" PG_CONFIG="$PG_CONFIG" \
	CC="${CC:-clang}" CFLAGS="-O1 -g $SAN_FLAGS" LDFLAGS="$SAN_FLAGS"

# The tests run as root and as postgres (TAP): both write reports here.
reports="$copy/reports"
mkdir -p "$reports"
chmod 1777 "$reports"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$reports/report"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/report"
export MQCTL="$copy/broker/mqctl/mqctl"
# an abort leaves no core files behind
ulimit -c 0

mq_phase "scripts/test.sh ($ONLY) with the sanitized tools"
rc=0
MQ_SKIP_BUILD=1 MQ_TEST_ONLY="$ONLY" bash "$copy/scripts/test.sh" || rc=$?

shopt -s nullglob
found=("$reports"/*)
shopt -u nullglob
echo
for f in "${found[@]}"; do
	echo "---- $(basename "$f") ----"
	head -n 60 "$f"
done
echo "sanitize: ${#found[@]} reports"
if ((${#found[@]} > 0 || rc != 0)); then
	exit 1
fi
exit 0
