#!/usr/bin/env bash
# node-rdkafka (npm 3.6.1, pinned by test/kafka/rdkafka/package-lock.json)
# builds its own librdkafka, 2.12, much newer than Debian's 2.0.2, and
# sends newer requests: Fetch v16 with topic ids, Produce v10, Metadata
# v12, ListOffsets v7, OffsetCommit and OffsetFetch v9.  Its clients at
# their defaults (test/kafka/rdkafka/client.js): the admin client creates,
# grows and deletes topics; records with keys and headers in every
# compression codec and from an idempotent producer; a group that reads
# them all and commits; a transaction that consumes and produces, one
# committed and one aborted before it, read by a read_committed consumer
# (librdkafka's default); watermarks and offsetsForTimes; each checked
# against what SQL sees, and the versions the clients sent against the
# newest each of them knows.  scripts/test.sh starts the build early
# (about 100 s of CPU) and names its status file in MQ_RDKAFKA_NPM; the
# test waits for it, or runs npm ci itself.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
D=test/kafka/rdkafka

if [[ -n "${MQ_RDKAFKA_NPM:-}" ]]; then
	wait_for 280 test -s "$MQ_RDKAFKA_NPM/rc"
	rc="$(cat "$MQ_RDKAFKA_NPM/rc" 2>/dev/null)"
	check_eq "$rc" 0 "npm ci installs node-rdkafka (started by scripts/test.sh)"
	[[ "$rc" == 0 ]] || tail -n 20 "$MQ_RDKAFKA_NPM/log" | sed 's/^/# /'
else
	npm_install "$D" node-rdkafka/build/Release/node-librdkafka.node
fi
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 node "$D/client.js" "$BROKER" nr
check_eq "$RC" 0 "the clients run"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{librdkafka}')" "2.12.0" "node-rdkafka's own librdkafka"
check_eq "$(json_get "$J" '{sent,Fetch}') $(json_get "$J" '{sent,Produce}') $(json_get "$J" '{sent,Metadata}') $(json_get "$J" '{sent,ListOffsets}') $(json_get "$J" '{sent,OffsetCommit}') $(json_get "$J" '{sent,OffsetFetch}')" \
	"16 10 12 7 9 9" "the clients send Fetch, Produce, Metadata, ListOffsets, OffsetCommit and OffsetFetch at the newest versions librdkafka 2.12 knows"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'nr'") $(sql "SELECT count(*) FROM mq.topics WHERE topic = 'nr_scratch'")" \
	"4 0" "the admin client created a topic with 3 partitions, grew it to 4, and deleted another"

for codec in none gzip snappy lz4 zstd; do
	check_eq "$(json_get "$J" "{$codec}")" "20 ok" "20 records compressed with $codec are acknowledged"
done
check_eq "$(json_get "$J" '{idempotent}')" "50 ok" "the idempotent producer's 50 records are acknowledged"
all="(SELECT * FROM generate_series(0, 3) p, mq.fetch('nr', p, 0)) r"
check_eq "$(sql "SELECT count(*), count(DISTINCT key), count(*) FILTER (WHERE headers -> 0 ->> 1 = split_part(convert_from(key, 'UTF8'), '-', 1)) FROM $all")" \
	"150|150|150" "SQL reads 150 records, each with its key and its header"
check_eq "$(sql "SELECT count(DISTINCT producer_id) FROM mq.producers WHERE topic = 'nr'")" "1" \
	"the idempotent producer's state is kept (mq.producers)"
check_eq "$(json_get "$J" '{consumed}') $(json_get "$J" '{distinct}') $(json_get "$J" '{matching}')" "150 150 150" \
	"the group reads every record once, with its key, value and header"
ends="$(sql "SELECT string_agg(high_watermark::text, ', ' ORDER BY partition) FROM mq.partitions WHERE topic = 'nr'")"
check_eq "$(json_get "$J" '{committed}')" "[$ends]" "the group committed the log ends"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('nr-group', 'nr', p)::text, ', ' ORDER BY p) FROM generate_series(0, 3) p")" \
	"$ends" "SQL sees the group's committed offsets"
check_eq "$(json_get "$J" '{watermarks0}')" "[$(sql "SELECT log_start_offset || ', ' || high_watermark FROM mq.partitions WHERE topic = 'nr' AND partition = 0")]" \
	"the watermarks of partition 0 are the log start and the high watermark"
check_eq "$(json_get "$J" '{offsetsForTimes}')" "[0, -1]" \
	"offsetsForTimes: the first record for time 0, none (-1) for a time after every record"

check_eq "$(json_get "$J" '{readCommitted}')" '["committed-1", "committed-2", "transformed-150"]' \
	"a read_committed consumer reads the committed transactions' records, not the aborted one's"
check_eq "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('nr_out', 0, 0)")" \
	"committed-1,committed-2,transformed-150" "the log holds the same three"
check_eq "$(sql "SELECT string_agg(mq.committed_offset('nr-txn', 'nr', p)::text, ', ' ORDER BY p) FROM generate_series(0, 3) p")" \
	"$ends" "the transaction committed the input's offsets with its output"
if ((FAILED > 0)); then
	tail -n 20 <<<"$ERR" | sed 's/^/# /'
	grep -i 'not supported\|closing\|error' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | head | sed 's/^/# /' || true
fi
finish
