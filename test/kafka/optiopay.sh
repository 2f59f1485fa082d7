#!/usr/bin/env bash
# optiopay/kafka (Debian's golang-github-optiopay-kafka-dev 2.1.1, built
# offline with Debian's Go) against mq-kafka at its defaults
# (test/kafka/go/optiopay_defaults.go): a client with encoders of its own,
# at the versions ApiVersions lets it pick (Produce v2, Fetch v5,
# ListOffsets v2, Metadata v5): five keyed messages sent with acks=all,
# read back from the oldest offset, and the partition's offsets.  (Its
# offset coordinator sends a FindCoordinator v1 that Kafka cannot parse:
# see the Go file.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

go_build optiopay_defaults optiopay/kafka
sql "SELECT mq.create_topic('opt', 1)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

run timeout 120 "$BIN" "$BROKER" opt
check_eq "$RC" 0 "optiopay_defaults runs"
J="$(tail -n 1 <<<"$OUT")"
printf '# %s\n' "$J"
check_eq "$(json_get "$J" '{produced_at}')" "0" "the producer's five messages start at offset 0"
check_eq "$(sql "SELECT string_agg(msg_offset || ':' || convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8'), ' ' ORDER BY msg_offset) FROM mq.fetch('opt', 0, 0)")" \
	"0:k0=v0 1:k1=v1 2:k2=v2 3:k3=v3 4:k4=v4" "SQL reads them, keys and values"
check_eq "$(json_get "$J" '{read}')" '["0:k0=v0", "1:k1=v1", "2:k2=v2", "3:k3=v3", "4:k4=v4"]' \
	"the consumer reads them from the oldest offset"
check_eq "$(json_get "$J" '{offsets}')" "[0, 5]" "ListOffsets answers the oldest and newest offsets"
if ((FAILED > 0)); then
	tail -n 20 <<<"$ERR" | sed 's/^/# /'
	grep -i 'not supported\|closing' "$(tmpdir)/mq-kafka.log" | sort | uniq -c | sed 's/^/# /' || true
fi

finish
