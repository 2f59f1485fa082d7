#!/usr/bin/env bash
# Kafka's topic name rule, written in SQL (mq._topic_name_valid) and in C
# (broker/mq-kafka/topic_name.c), agrees on names at and around each of
# its edges: the length limit (249), the characters allowed, "." and "..",
# the empty name, and characters outside ASCII (test/kafka/topic_names.pl
# asks the C rule through DescribeConfigs).
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

kafka_start || { fail "mq-kafka starts"; finish; }

names=('' '.' '..' '...' '.a' 'a.' '_' '-' 'a-b_c.d' 'AZaz09' 'a b' 'a/b' 'a:b' 'a+b' 'a,b' "a'b" 'a*' 'a%b'
	"$(printf 'x%.0s' {1..249})" "$(printf 'x%.0s' {1..250})" 'café' 'トピック' 'a	b' 'ａ')
hex=()
for n in "${names[@]}"; do hex+=("$(printf '%s' "$n" | od -An -tx1 -v | tr -d ' \n')"); done
run perl test/kafka/topic_names.pl "$KAFKA_PORT" "${hex[@]}"
expect_rc 0 "topic_names.pl asks DescribeConfigs of each name"
wire="$OUT"
values="$(printf "('%s')," "${hex[@]}")"
want="$(sql "SELECT h || ' ' || CASE WHEN mq._topic_name_valid(convert_from(decode(h, 'hex'), 'UTF8')) THEN 3 ELSE 17 END
             FROM (VALUES ${values%,}) v(h)")"
check_eq "$wire" "$want" "DescribeConfigs (the C rule) refuses exactly the names mq._topic_name_valid refuses"
check_eq "$(grep -c ' 17$' <<<"$wire")" "16" "sixteen of the names are illegal (eight legal)"
finish
