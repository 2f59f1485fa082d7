#!/usr/bin/env bash
# The reference tables of the docs are what the code generates
# (scripts/reftables.sh: mq-broker's ini keys, mq-kafka's options and
# APIs, the GUCs, the C files' layers), and the check notices each kind of drift: a changed
# default, description, version range or GUC in the code, a hand edit in
# a doc, and a table row it cannot read.  Run from the repository root;
# needs no server.
set -euo pipefail

bash scripts/reftables.sh check

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
tar -cf - docs/replication.md docs/kafka.md docs/operations.md docs/design.md \
	scripts/callgraph.pl broker/common/*.c broker/mq-broker/*.c broker/mq-kafka/*.c \
	broker/mqctl/*.c broker/mq-kafka/handlers.h src/*.c src/*.h | tar -xf - -C "$tmp/tree"
# edit FILE SED-EXPRESSION: the copy of FILE in $tmp/tree, edited
edit() {
	cp "$1" "$tmp/tree/$1"
	sed -i "$2" "$tmp/tree/$1"
	if cmp -s "$1" "$tmp/tree/$1"; then
		echo "FAIL: the edit \"$2\" changed nothing in $1 (fix this test)" >&2
		exit 1
	fi
}
restore() { cp "$1" "$tmp/tree/$1"; }
in_copy() { MQ_REFTABLES_ROOT="$tmp/tree" bash scripts/reftables.sh "$@"; }
# check_fails WHAT: the check must fail on the copy as edited
check_fails() {
	if in_copy check >/dev/null 2>&1; then
		echo "FAIL: the check passed although $1" >&2
		exit 1
	fi
}
# changes TABLE FILE SED-EXPRESSION WHAT: after the edit, TABLE generates
# something else (and so the check, which compares with it, fails)
changes() {
	local before
	before="$(in_copy print "$1")"
	edit "$2" "$3"
	if [[ "$(in_copy print "$1" 2>/dev/null)" == "$before" ]]; then
		echo "FAIL: table $1 did not change although $4" >&2
		exit 1
	fi
	restore "$2"
}

in_copy check
# end to end: a change in the code, a hand edit in a doc, an unreadable row
edit broker/mq-broker/config.c 's/tick_ms, .i., 10, 10000, "100"/tick_ms, '"'i'"', 10, 10000, "200"/'
check_fails "an mq-broker default changed"
restore broker/mq-broker/config.c
edit docs/operations.md 's/^| `mq.release_before_flush` | on /| `mq.release_before_flush` | off /'
check_fails "a generated row was edited by hand"
restore docs/operations.md
edit broker/mq-broker/config.c 's/KEY("broker", "rack", rack, .s., 0, 0, NULL,/KEY("broker", "rack", rack, 0, 0, NULL,/'
check_fails "a key row cannot be read"
restore broker/mq-broker/config.c
# each table follows its source
changes kafka-keys broker/mq-broker/config.c 's/kafka_pool, .i., 1, 256,/kafka_pool, '"'i'"', 1, 512,/' \
	"an mq-broker [kafka] key's range changed"
changes kafka-help broker/mq-kafka/main.c 's/database connections (default 4)/connections (default 4)/' \
	"mq-kafka's help changed"
changes kafka-apis broker/mq-kafka/api.c 's/{KAPI_FETCH, 0, 17,/{KAPI_FETCH, 0, 16,/' "an API's versions changed"
changes gucs src/mq.c 's/&mq_maintenance_interval, 1000,/\&mq_maintenance_interval, 2000,/' "a GUC's default changed"
changes gucs src/fetch_path.c 's/as a scan that streams records/as a streaming scan/' "a GUC's description changed"
changes layers src/spi.c '$a static void *zz_probe = (void *) mq_array_of;' "a file calls another"
echo "reftables: the docs' generated tables match the code"
