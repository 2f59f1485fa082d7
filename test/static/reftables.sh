#!/usr/bin/env bash
# The reference tables of the docs are what the code generates
# (scripts/reftables.sh: mq-broker's ini keys, mq-kafka's options and
# APIs, the GUCs), and the check notices each kind of drift: a changed
# default, description, version range or GUC in the code, a hand edit in
# a doc, and a table row it cannot read.  Run from the repository root;
# needs no server.
set -euo pipefail

bash scripts/reftables.sh check

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
copy() {
	rm -rf "${tmp:?}/tree"
	mkdir -p "$tmp/tree"
	tar -cf - docs/replication.md docs/kafka.md docs/operations.md \
		broker/mq-broker/config.c broker/mq-kafka/main.c broker/mq-kafka/api.c \
		broker/mq-kafka/handlers.h src/*.c src/*.h | tar -xf - -C "$tmp/tree"
}
# must_fail WHAT FILE SED-EXPRESSION: after the edit, the check must fail
must_fail() {
	copy
	sed -i "$3" "$tmp/tree/$2"
	if cmp -s "$2" "$tmp/tree/$2"; then
		echo "FAIL: the edit for \"$1\" changed nothing in $2 (fix this test)" >&2
		exit 1
	fi
	if MQ_REFTABLES_ROOT="$tmp/tree" bash scripts/reftables.sh check >/dev/null 2>&1; then
		echo "FAIL: the check passed although $1" >&2
		exit 1
	fi
}

copy
MQ_REFTABLES_ROOT="$tmp/tree" bash scripts/reftables.sh check
must_fail "an mq-broker default changed" broker/mq-broker/config.c \
	's/tick_ms, .i., 10, 10000, "100"/tick_ms, '"'i'"', 10, 10000, "200"/'
must_fail "an mq-broker [kafka] key's range changed" broker/mq-broker/config.c \
	's/kafka_pool, .i., 1, 256,/kafka_pool, '"'i'"', 1, 512,/'
must_fail "mq-kafka's help changed" broker/mq-kafka/main.c 's/database connections (default 4)/connections (default 4)/'
must_fail "an API's versions changed" broker/mq-kafka/api.c 's/{KAPI_FETCH, 4, 11,/{KAPI_FETCH, 4, 12,/'
must_fail "a GUC's default changed" src/mq.c 's/&mq_maintenance_interval, 1000,/\&mq_maintenance_interval, 2000,/'
must_fail "a GUC's description changed" src/fetch_path.c 's/as a scan that streams records/as a streaming scan/'
must_fail "a generated row was edited by hand" docs/operations.md 's/^| `mq.database` | .postgres. /| `mq.database` | '"'app'"' /'
must_fail "a key row cannot be read" broker/mq-broker/config.c 's/KEY("broker", "rack", rack, .s., 0, 0, NULL,/KEY("broker", "rack", rack, 0, 0, NULL,/'
echo "reftables: the docs' generated tables match the code"
