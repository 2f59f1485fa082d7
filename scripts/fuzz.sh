#!/usr/bin/env bash
# Fuzz mq-broker's parsers of untrusted input with libFuzzer: the config
# parser (fuzz/config_fuzz.c) and the decoder of a replica batch received
# from a leader (fuzz/batch_fuzz.c), built with clang-14 and
# -fsanitize=fuzzer,address,undefined.  Each runs for FUZZ_SECONDS
# (default 60); any crash, leak or undefined behaviour fails the script
# and leaves the reproducer in the work directory it names.  Not part of
# scripts/test.sh (it is slow by design).
#
#   bash scripts/fuzz.sh                 # both, 60 s each
#   FUZZ_SECONDS=300 bash scripts/fuzz.sh config
#
# Needs clang-14 and libfuzzer-14-dev (scripts/install-deps.sh fuzz, run first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_EACH="${FUZZ_SECONDS:-60}"
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(config batch)
CC="${FUZZ_CC:-clang-14}"
bash scripts/install-deps.sh run build fuzz
PG_INCLUDEDIR="$(pg_config --includedir)"
PG_LIBDIR="$(pg_config --libdir)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-fuzz.XXXXXX")"
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-I"$PG_INCLUDEDIR" -Ibroker/common -Ibroker/mq-broker)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

declare -A SOURCES=(
	[config]="fuzz/config_fuzz.c broker/mq-broker/config.c broker/common/util.c"
	[batch]="fuzz/batch_fuzz.c broker/mq-broker/batch.c"
)
declare -A LIBS=([config]="-L$PG_LIBDIR -lpq -linih" [batch]="")
declare -A DICTS=([config]="-dict=$PWD/fuzz/config.dict" [batch]="")
# seeds: the configurations the tests use, and a few batch headers
mkdir -p "$WORK/seed-config" "$WORK/seed-batch"
printf '[broker]\nid = 1\nnode = host=/tmp port=5432 dbname=postgres user=mq_broker\ncoordinator = postgresql://mq_broker@h/db\n[replication]\nreplica.lag.time.max.ms = 2000\n[metrics]\naddress = [::1]:9400\n' \
	>"$WORK/seed-config/minimal.ini"
printf '\0\0\0\x0c\0\0\0\x14\0\0\0\x08\0\0\0\0\0\0\0\x01\0\0\0\x14\0\0\0\x08\0\0\0\0\0\0\0\x02\0\0\0\x14\0\0\0\x08\0\0\0\0\0\0\0\x03' \
	>"$WORK/seed-batch/header"

status=0
for t in "${TARGETS[@]}"; do
	[[ -n "${SOURCES[$t]:-}" ]] || { echo "fuzz: unknown target $t (config, batch)" >&2; exit 2; }
	echo "fuzz: building $t"
	# shellcheck disable=SC2086 # word lists
	"$CC" "${FLAGS[@]}" -o "$WORK/$t" ${SOURCES[$t]} ${LIBS[$t]}
	echo "fuzz: running $t for ${SECONDS_EACH}s"
	mkdir -p "$WORK/corpus-$t"
	# shellcheck disable=SC2086 # an optional word
	if (cd "$WORK" && "./$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 ${DICTS[$t]} "corpus-$t" "seed-$t" >"$WORK/$t.log" 2>&1); then
		echo "fuzz: $t: no crash ($(grep -c . <(ls "$WORK/corpus-$t")) inputs in its corpus)"
	else
		echo "fuzz: $t FAILED; last lines of $WORK/$t.log:"
		tail -n 40 "$WORK/$t.log"
		status=1
	fi
done
if ((status == 0)); then
	rm -rf "$WORK"
	echo "fuzz: all clean"
else
	echo "fuzz: reproducers and logs kept in $WORK"
fi
exit "$status"
