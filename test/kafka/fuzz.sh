#!/usr/bin/env bash
# A short libFuzzer run over mq-kafka's request and batch decoders
# (scripts/fuzz-kafka.sh; longer runs: bash scripts/fuzz-kafka.sh 600).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

run bash scripts/fuzz-kafka.sh "${MQ_FUZZ_SECONDS:-15}"
printf '%s\n' "$OUT" | tail -3 | sed 's/^/# /'
expect_rc 0 "libFuzzer finds no crash, leak or hang in the decoders"
finish
