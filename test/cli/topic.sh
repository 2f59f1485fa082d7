#!/usr/bin/env bash
# mqctl topic create / list / describe / alter / add-partitions / delete,
# in table and JSON form, checked against the mq catalog views.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# --- create ----------------------------------------------------------------
run mqctl topic create orders --partitions 3 --config retention.ms=7d -c segment.bytes=256MB
expect_rc 0 "create orders"
check_eq "$OUT" "Created topic orders." "create says so"
check_eq "$(sql "SELECT partitions FROM mq.topics WHERE topic = 'orders'")" 3 "orders has 3 partitions"
check_eq "$(sql "SELECT config->>'retention.ms' FROM mq.topics WHERE topic = 'orders'")" 604800000 \
	"config values go to the server as typed (7d)"

run mqctl topic create plain
expect_rc 0 "create with defaults"
check_eq "$(sql "SELECT partitions || ' ' || config FROM mq.topics WHERE topic = 'plain'")" "1 {}" \
	"default: one partition, empty config"

run mqctl topic create orders
expect_rc 1 "create an existing topic"
check_match "$ERR" 'topic "orders" already exists \[SQLSTATE MQ002\]' "says it exists, with SQLSTATE"
run mqctl topic create orders --if-not-exists
expect_rc 0 "create --if-not-exists of an existing topic"
check_eq "$OUT" "Topic orders exists already." "--if-not-exists says so"

run mqctl topic create badconf --config retention.ms=7 weeks
expect_rc 2 "a config value with a space needs quoting"
run mqctl topic create badconf --config retention.ms=7weeks
expect_rc 1 "invalid config value"
check_match "$ERR" 'SQLSTATE MQ004' "invalid config: MQ004"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'badconf'")" 0 "a failed create leaves no topic"

# --- list --------------------------------------------------------------------
sql "SELECT count(*) FROM mq.send_batch('orders', NULL, ARRAY['a', 'b', 'c', 'd']::bytea[], NULL, 1)" >/dev/null
run mqctl topic list
expect_rc 0 "list"
check_match "$OUT" '^TOPIC +PARTITIONS +RECORDS +SIZE +CONFIG' "list header"
check_match "$OUT" $'\norders +3 +4 +[0-9]+ [kMG]?B +retention.ms=604800000,segment.bytes=268435456\n' \
	"orders row: partitions, records, size, config"
check_match "$OUT" $'\nplain +1 +0 +[0-9]+ [kMG]?B\n?$' "plain row, no trailing blanks"
check_no_match "$OUT" ' '$'\n' "no line ends in a blank"

run mqctl topic list --format json
expect_rc 0 "list --format json"
check_eq "$(json_get "$OUT" '{0,topic}')" orders "json: topics sorted by name"
check_eq "$(json_get "$OUT" '{0,records}')" 4 "json: records is a number"
check_eq "$(json_get "$OUT" '{0,config,segment.bytes}')" 268435456 "json: config is an object"
check_match "$(json_get "$OUT" '{1,bytes}')" '^[0-9]+$' "json: bytes in bytes"
check_eq "$(json_get "$OUT" '{2}')" "" "json: two topics"

# --- describe ------------------------------------------------------------------
run mqctl topic describe orders
expect_rc 0 "describe"
check_match "$OUT" $'^Topic: orders\tPartitions: 3\tConfig: retention.ms=604800000,segment.bytes=268435456\tCreated: ' \
	"describe: topic line"
check_match "$OUT" 'PARTITION +LEADER +ISR +LOG_START +LOG_END +HIGH_WATERMARK +LEADER_EPOCH +ROLE +SEGMENTS +SIZE' \
	"describe: partition header"
check_match "$OUT" $'\n1 +- +- +0 +4 +4 +0 +standalone +[0-9]+ +[0-9]+ [kMG]?B' \
	"describe: partition 1 has 4 records, leader and ISR shown as -"
run mqctl topic describe plain
check_match "$OUT" $'Config: \\(defaults\\)' "describe: empty config reads (defaults)"

run mqctl topic describe orders --format json
expect_rc 0 "describe --format json"
check_eq "$(json_get "$OUT" '{partitions}')" 3 "json: partition count"
check_eq "$(json_get "$OUT" '{partition_details,1,log_end}')" 4 "json: log end of partition 1"
check_eq "$(json_get "$OUT" '{partition_details,1,high_watermark}')" 4 "json: high watermark"
check_eq "$(json_get "$OUT" '{partition_details,0,log_start}')" 0 "json: log start"
check_eq "$(json_get "$OUT" '{partition_details,0,leader}')" "" "json: leader is null for now"
check_eq "$(json_get "$OUT" '{partition_details,2,segments}')" \
	"$(sql "SELECT count(*) FROM mq.segments WHERE topic = 'orders' AND partition = 2")" "json: segments"
check_eq "$(json_get "$OUT" '{partition_details,2,bytes}')" \
	"$(sql "SELECT sum(bytes) FROM mq.segments WHERE topic = 'orders' AND partition = 2")" "json: bytes"
check_match "$(json_get "$OUT" '{created_at}')" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "json: created_at in ISO 8601"

run mqctl topic describe nosuch
expect_rc 1 "describe a missing topic"
check_match "$ERR" 'topic "nosuch" does not exist' "says the topic is missing"

# --- alter -----------------------------------------------------------------------
run mqctl topic alter orders --config retention.ms=1h --delete-config segment.bytes
expect_rc 0 "alter"
check_eq "$OUT" "Altered topic orders: config retention.ms=3600000" "alter prints the new config"
check_eq "$(sql "SELECT config FROM mq.topics WHERE topic = 'orders'")" '{"retention.ms": 3600000}' \
	"alter changed the catalog"
run mqctl topic alter orders --delete-config retention.ms
check_eq "$OUT" "Altered topic orders: config (defaults)" "alter back to the defaults"
run mqctl topic alter orders --config no.such.key=1
expect_rc 1 "alter with an unknown key"
check_match "$ERR" 'unknown topic config key "no.such.key" \[SQLSTATE MQ004\]' "names the key"
run mqctl topic alter nosuch --config retention.ms=1
expect_rc 1 "alter a missing topic"
check_match "$ERR" 'SQLSTATE MQ001' "missing topic: MQ001"

# --- add-partitions ------------------------------------------------------------------
run mqctl topic add-partitions orders --count 2
expect_rc 0 "add-partitions"
check_eq "$OUT" "Topic orders now has 5 partitions." "add-partitions prints the new count"
check_eq "$(sql "SELECT count(*) FROM mq.partitions WHERE topic = 'orders'")" 5 "five partitions now"
run mqctl topic add-partitions orders --count 10000
expect_rc 1 "too many partitions"
check_match "$ERR" 'SQLSTATE MQ005' "too many partitions: MQ005"
run mqctl topic alter orders --partitions 6
expect_rc 0 "alter --partitions"
check_eq "$OUT" "Topic orders now has 6 partitions." "alter --partitions grows the topic to the count given"
run mqctl topic alter orders --partitions 6
check_eq "$OUT" "Topic orders already has 6 partitions." "the same count again changes nothing"
run mqctl topic alter orders --partitions 2
expect_rc 1 "alter --partitions below the count"
check_match "$ERR" 'never removed' "partitions are never removed"
check_eq "$(sql "SELECT count(*) FROM mq.partitions WHERE topic = 'orders'")" 6 "six partitions now"
check_match "$ERR" '^mqctl: error: topic "orders" has 6 partitions: partitions can be added, never removed \[SQLSTATE MQ005\]$' \
	"in the common error form, with the SQLSTATE the server gives it"
run mqctl topic alter nosuch --partitions 3
expect_rc 1 "alter --partitions of a missing topic"
check_match "$ERR" '^mqctl: error: topic "nosuch" does not exist \[SQLSTATE MQ001\]$' "says so in the common error form"

# the whole alter is one transaction: the config first, then the partitions
run mqctl topic alter orders --partitions 8 -c no.such.key=1
expect_rc 1 "alter --partitions with an unknown config key"
check_match "$ERR" 'unknown topic config key "no.such.key" \[SQLSTATE MQ004\]' "names the key"
check_eq "$OUT" "" "prints no result"
check_eq "$(sql "SELECT count(*) FROM mq.partitions WHERE topic = 'orders'")" 6 "and added no partition"
run mqctl topic alter orders --partitions 2 -c retention.ms=2h
expect_rc 1 "alter a config with --partitions below the count"
check_eq "$OUT" "" "prints no result"
check_eq "$(sql "SELECT config FROM mq.topics WHERE topic = 'orders'")" '{}' "and changed no config"
run mqctl topic alter orders --partitions 7 -c retention.ms=2h
expect_rc 0 "alter config and partitions"
check_eq "$OUT" $'Altered topic orders: config retention.ms=7200000\nTopic orders now has 7 partitions.' \
	"prints both once committed"
check_eq "$(sql "SELECT partitions || ' ' || config::text FROM mq.topics WHERE topic = 'orders'")" \
	'7 {"retention.ms": 7200000}' "both changed"

# --delete-config of a key the server does not know is refused as --config's
run mqctl topic alter orders --delete-config no.such.key
expect_rc 1 "--delete-config of an unknown key"
check_match "$ERR" 'unknown topic config key "no.such.key" \[SQLSTATE MQ004\]' "names the key, as --config does"
run mqctl topic alter orders --delete-config retention.ms --delete-config segment.ms
expect_rc 0 "--delete-config of known keys, set or not"
check_eq "$OUT" "Altered topic orders: config (defaults)" "back to the defaults"

# --- delete ------------------------------------------------------------------------------
run mqctl topic delete orders
expect_rc 0 "delete"
check_eq "$OUT" "Deleted topic orders." "delete says so"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'orders'")" 0 "orders is gone"
run mqctl topic delete orders
expect_rc 1 "delete again"
run mqctl topic delete orders --if-exists
expect_rc 0 "delete --if-exists"
check_eq "$OUT" "Topic orders does not exist." "--if-exists says so"
run mqctl topic list --format json
check_eq "$(json_get "$OUT" '{0,topic}')" plain "list after delete"

# --- a role with rights on its topics, not on the coordinator's schema --------------
# mqctl asks whether the database coordinates a cluster's topic; naming
# mq_coord's objects without USAGE on the schema was an error (42501), not a no
login_role mq_cli_topic_bob
sql "SELECT mq.grant('create', 'cluster', 'kafka-cluster', 'mq_cli_topic_bob')" >/dev/null
bob=(-d "dbname=$PGDATABASE user=mq_cli_topic_bob")
run mqctl "${bob[@]}" topic create bob.x --partitions 1
expect_rc 0 "a role allowed to create topics creates one"
run mqctl "${bob[@]}" topic alter bob.x --config retention.ms=1h
expect_rc 0 "its owner alters it"
run mqctl "${bob[@]}" topic add-partitions bob.x --count 1
expect_rc 0 "adds partitions to it"
run mqctl "${bob[@]}" topic delete bob.x
expect_rc 0 "and deletes it"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'bob.x'")" "0" "the topic is gone"

finish
