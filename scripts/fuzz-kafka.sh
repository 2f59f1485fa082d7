#!/usr/bin/env bash
# Fuzz mq-kafka's request and record batch decoders with libFuzzer
# (test/kafka/fuzz/fuzz_kafka.c) for a bounded time, under
# AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   bash scripts/fuzz-kafka.sh [SECONDS]      # default 60
#
# Builds with clang (scripts/install-deps.sh fuzz installs clang and
# libfuzzer-14-dev) into a temp dir, seeds the corpus with a few valid
# requests and batches, and exits non-zero if libFuzzer finds a crash,
# a leak or a hang (the reproducer is kept and its path printed; add it
# to test/kafka/fuzz/regressions once fixed, so every run replays it).
# Knobs: MQ_FUZZ_CORPUS (a corpus directory to reuse and grow).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
bash scripts/install-deps.sh run build fuzz
mq_pg_paths || mq_die "pg_config not found (run scripts/install-deps.sh run build)"
SECONDS_TO_RUN="${1:-60}"
CC_FUZZ="${CC_FUZZ:-clang}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mq-fuzz-kafka.XXXXXX")"
trap 'rm -rf "$WORK/bin"' EXIT
mkdir -p "$WORK/bin"
CORPUS="${MQ_FUZZ_CORPUS:-$WORK/corpus}"
mkdir -p "$CORPUS"

K=broker/mq-kafka
C=broker/common
# the SQLSTATE constants, as broker/Makefile generates them
bash scripts/errcodes.sh frontend-header >"$WORK/bin/mq_sqlstates.h"
# every file of mq-kafka but the ones the harness stands in for (the event
# loop, the listener, client connections and the database pool: test/kafka/fuzz/fuzz_kafka.c)
SRCS=()
for f in "$K"/*.c; do
	case "${f##*/}" in
	main.c | server.c | kconn.c | pool.c) ;;
	*) SRCS+=("$f") ;;
	esac
done
SRCS+=("$C"/util.c "$C"/mqconn.c "$C"/connpolicy.c "$C"/cancel.c "$C"/pgbinary.c "$C"/scram_keys.c)
"$CC_FUZZ" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$("$PG_CONFIG" --includedir)" -I"$WORK/bin" -I"$C" -I"$K" -DMQ_VERSION='"fuzz"' \
	-o "$WORK/bin/fuzz_kafka" test/kafka/fuzz/fuzz_kafka.c "${SRCS[@]}" \
	-L"$("$PG_CONFIG" --libdir)" -lpq -ljansson -levent -lz -lsnappy -llz4 -lzstd -levent_openssl -lssl -lcrypto

# seeds: 0x00 then a request frame (api key, version, correlation id,
# client id, body); 0x01 then a record batch; 0xff then a SASL PLAIN token;
# 0xfd a SCRAM client-first message, 0xfb a client-final one
seed() { printf "$2" >"$CORPUS/seed-$1"; }
seed apiversions '\x00\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01c'
seed metadata '\x00\x00\x03\x00\x01\x00\x00\x00\x01\x00\x01c\xff\xff\xff\xff'
seed metadata_v0 '\x00\x00\x03\x00\x00\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x00'
seed offset_commit_v1 '\x00\x00\x08\x00\x01\x00\x00\x00\x01\x00\x01c\x00\x01g\xff\xff\xff\xff\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00'
seed list_offsets_v0 '\x00\x00\x02\x00\x00\x00\x00\x00\x01\x00\x01c\xff\xff\xff\xff\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x01'
seed join '\x00\x00\x0b\x00\x05\x00\x00\x00\x01\x00\x01c\x00\x01g\x00\x00\x27\x10\x00\x00\x75\x30\x00\x00\xff\xff\x00\x08consumer\x00\x00\x00\x01\x00\x05range\x00\x00\x00\x00'
seed describe_quotas_v0 '\x00\x00\x30\x00\x00\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x01\x00\x04user\x00\x00\x01a\x00'
seed alter_quotas_v0 '\x00\x00\x31\x00\x00\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x01\x00\x00\x00\x01\x00\x04user\x00\x01a\x00\x00\x00\x01\x00\x12producer_byte_rate\x40\xc3\x88\x00\x00\x00\x00\x00\x00\x00'
seed describe_topic_partitions '\x00\x00\x4b\x00\x00\x00\x00\x00\x01\x00\x01c\x00\x02\x02t\x00\x00\x00\x07\xd0\x01\x02t\x00\x00\x00\x01\x00\x00'
seed create_token_v3 '\x00\x00\x26\x00\x03\x00\x00\x00\x01\x00\x01c\x00\x05User\x02a\x02\x05User\x02b\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00'
seed elect_leaders_v2 '\x00\x00\x2b\x00\x02\x00\x00\x00\x01\x00\x01c\x00\x00\x02\x02t\x02\x00\x00\x00\x00\x00\x00\x00\x03\xe8\x00'
seed alter_log_dirs_v1 '\x00\x00\x22\x00\x01\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x01\x00\x02ts\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00'
seed list_client_metrics '\x00\x00\x4a\x00\x00\x00\x00\x00\x01\x00\x01c\x00\x00'
seed sasl_handshake '\x00\x00\x11\x00\x01\x00\x00\x00\x01\x00\x01c\x00\x05PLAIN'
seed sasl_authenticate '\x00\x00\x24\x00\x01\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x07\x00u\x00pass'
seed sasl_plain '\xffauthz\x00user\x00password'
seed scram_first '\xfdn,,n=user,r=fyko+d2lbbFgONRv9qkxdawL'
seed scram_first_ext '\xfdn,a=us=2Cer,n=us=2Cer,r=abc,tokenauth=false'
seed scram_final '\xfbc=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts='
seed sasl_handshake_scram '\x00\x00\x11\x00\x01\x00\x00\x00\x01\x00\x01c\x00\x0dSCRAM-SHA-512'
seed batch '\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x00\x02\x6c\x4e\x4b\xcf\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x01\x0a\x00\x00\x00\x02k\x02v\x00'

# inputs that once crashed it stay in the corpus (test/kafka/fuzz/regressions)
cp test/kafka/fuzz/regressions/* "$CORPUS/"

echo "fuzz-kafka: running for ${SECONDS_TO_RUN}s (corpus $CORPUS)"
if (cd "$WORK" && ASAN_OPTIONS=detect_leaks=1 "$WORK/bin/fuzz_kafka" -max_total_time="$SECONDS_TO_RUN" \
	-timeout=10 -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 "$CORPUS" \
	>"$WORK/fuzz.log" 2>&1); then
	grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' "$WORK/fuzz.log" | tail -2
	echo "fuzz-kafka: no crash in ${SECONDS_TO_RUN}s"
	[[ -n "${MQ_FUZZ_CORPUS:-}" ]] || rm -rf "$WORK"
else
	tail -n 60 "$WORK/fuzz.log"
	echo "fuzz-kafka: FAILED; log and reproducer in $WORK" >&2
	exit 1
fi
