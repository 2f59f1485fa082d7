#!/usr/bin/env bash
# mqctl quota set / describe / delete: the client quotas mq-kafka enforces
# (docs/kafka.md, "Client quotas"), for a user, a client id, both, and the
# defaults; several keys in one transaction (a bad one sets none); the
# database's refusals (MQ063) and an ordinary role's (42501) as exit 1;
# bad command lines as exit 2; describe filtered by the entity's parts.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

login_role mq_cli_quota_eve
# user/client=key:value of every quota, in mq.list_client_quotas' order
quotas() {
	sql "SELECT coalesce(string_agg(CASE WHEN default_user THEN '<default>' ELSE coalesce(user_name, '-') END || '/' ||
	                                CASE WHEN default_client THEN '<default>' ELSE coalesce(client_id, '-') END || '=' ||
	                                quota_key || ':' || quota_value, ' '), '')
	       FROM mq.list_client_quotas()"
}

run mqctl quota set --user alice producer_byte_rate=1048576 consumer_byte_rate=2048
expect_rc 0 "quota set of a user, two keys"
check_eq "$OUT" "2 client quotas set." "it says how many"
run mqctl quota set --client-default request_percentage=12.5
expect_rc 0 "quota set of the default client id"
run mqctl quota set --user-default --client-id batch producer_byte_rate=65536
expect_rc 0 "quota set of the default user and a client id"
check_eq "$(quotas)" "-/<default>=request_percentage:12.5 <default>/batch=producer_byte_rate:65536 alice/-=consumer_byte_rate:2048 alice/-=producer_byte_rate:1048576" \
	"the database holds each, under its entity"

run mqctl quota describe
expect_rc 0 "quota describe"
check_eq "$OUT" "USER       CLIENT_ID  KEY                 VALUE
-          <default>  request_percentage  12.5
<default>  batch      producer_byte_rate  65536
alice      -          consumer_byte_rate  2048
alice      -          producer_byte_rate  1048576" "lists every quota, <default> for the defaults"
run mqctl quota describe --user alice
check_eq "$(awk 'NR > 1 {print $1 "/" $3}' <<<"$OUT" | tr '\n' ' ')" "alice/consumer_byte_rate alice/producer_byte_rate " \
	"describe --user: that user's quotas"
run mqctl quota describe --client-default
check_eq "$(awk 'NR > 1 {print $3}' <<<"$OUT")" "request_percentage" "describe --client-default: the default client id's"

run mqctl quota set --user bob producer_byte_rate=100 request_rate=5
expect_rc 1 "an unknown key: the server's error"
check_match "$ERR" "MQ063" "with its SQLSTATE"
run mqctl quota set --user bob producer_byte_rate=10.5
expect_rc 1 "a fractional byte rate is refused too"
check_eq "$(quotas | grep -c bob)" "0" "and nothing of either command was set"
run mqctl -d "dbname=$PGDATABASE user=mq_cli_quota_eve" quota set --user eve producer_byte_rate=1
expect_rc 1 "a role without alter on the cluster may not set quotas"
check_match "$ERR" "42501" "permission denied"
run mqctl -d "dbname=$PGDATABASE user=mq_cli_quota_eve" quota describe
expect_rc 1 "nor list them (describe on the cluster)"

run mqctl quota set producer_byte_rate=1
expect_rc 2 "no entity: a usage error"
run mqctl quota set --user a --user-default producer_byte_rate=1
expect_rc 2 "a name and its default: a usage error"
run mqctl quota set --user a producer_byte_rate
expect_rc 2 "KEY without =VALUE: a usage error"
run mqctl quota set --user a
expect_rc 2 "no KEY=VALUE: a usage error"
run mqctl quota describe extra
expect_rc 2 "describe takes no argument"

run mqctl quota delete --user alice consumer_byte_rate
expect_rc 0 "quota delete of one key"
check_eq "$OUT" "1 client quota removed." "it says so"
run mqctl quota delete --user alice consumer_byte_rate
expect_rc 0 "deleting a key that is not set is no error (kafka-configs --delete-config)"
check_eq "$(quotas)" "-/<default>=request_percentage:12.5 <default>/batch=producer_byte_rate:65536 alice/-=producer_byte_rate:1048576" \
	"the other quotas stay"
sql "SELECT mq.set_client_quota(quota_key, NULL, user_name, client_id, default_user, default_client) FROM mq.list_client_quotas()" >/dev/null

finish
