#!/usr/bin/env bash
# Randomized fault soak of a replicated cluster (test/t/900_random_faults.pl):
#   bash scripts/soak.sh [SECONDS [SEED]]      (default 600 s, a random seed)
# Not part of the test command.  Builds and installs like scripts/test.sh
# (set MQ_SKIP_BUILD=1 to reuse what is installed); prints the seed, so a
# failing schedule can be run again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-600}"
seed="${2:-$RANDOM}"
echo "soak: $seconds s, seed $seed"
MQ_SOAK_SECONDS="$seconds" MQ_SOAK_SEED="$seed" MQ_SUITE_TIMEOUT=$((seconds + 900)) \
	MQ_TEST_ONLY=tap MQ_TESTS='test/t/900_random_faults.pl' exec bash scripts/test.sh
