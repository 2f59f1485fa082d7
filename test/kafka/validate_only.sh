#!/usr/bin/env bash
# A refused validate_only request (CreateTopics, CreatePartitions,
# AlterConfigs) leaves no transaction open on mq-kafka's database
# connection: it runs as BEGIN, the check, ROLLBACK, each after the
# client's role is set, and the role's set_config in an aborted
# transaction failed the ROLLBACK too, so every later statement on the
# connection failed ("current transaction is aborted") until a restart:
# one request of any authenticated principal, refused or not, broke the
# daemon for everyone.  With one connection (--pool 1), as a principal
# with the right to create topics and as one without (--anonymous=role:),
# each refused check is followed by a Metadata request that must answer,
# and no session of the database may be left idle in a transaction.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PY=/usr/bin/python3

sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_vo_admin') THEN CREATE ROLE mq_vo_admin; END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_vo_nobody') THEN CREATE ROLE mq_vo_nobody; END IF;
END \$\$" >/dev/null
sql "SELECT mq.create_topic('vo_t', 2)" >/dev/null
sql "SELECT mq.grant('all', 'cluster', 'kafka-cluster', 'mq_vo_admin'), mq.grant('all', 'topic', 'vo_t', 'mq_vo_admin')" >/dev/null
sql "SELECT mq.grant('describe', 'topic', 'vo_t', 'mq_vo_nobody')" >/dev/null

idle_in_txn() {
	sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
}

for who in admin nobody; do
	kafka_kill
	kafka_start --pool 1 --anonymous=role:mq_vo_$who || { fail "mq-kafka as mq_vo_$who starts"; finish; }
	run timeout 60 "$PY" test/kafka/py/validate_only.py "$BROKER" vo_t
	check_eq "$RC" 0 "the validate_only requests as mq_vo_$who run"
	printf '# %s\n' "$OUT"
	if [[ $who == admin ]]; then
		codes="36 0 37 40"		# TOPIC_ALREADY_EXISTS, none, INVALID_PARTITIONS, INVALID_CONFIG
	else
		codes="29 29 29 29"		# TOPIC_AUTHORIZATION_FAILED
	fi
	for n in 0 1; do
		got="" md=""
		for c in create_existing create_new fewer_partitions bad_config; do
			got+="$(json_get "$OUT" "{${c}_$n,0}") "
			md+="$(json_get "$OUT" "{${c}_$n,1}") "
		done
		check_eq "${got% }" "$codes" "as mq_vo_$who, round $((n + 1)): the checks answer $codes"
		check_eq "${md% }" "$(printf '[["vo_t", 0]] %.0s' 1 2 3 4 | sed 's/ $//')" \
			"as mq_vo_$who, round $((n + 1)): a Metadata request after each refused check answers"
	done
	check_eq "$(idle_in_txn)" 0 "as mq_vo_$who: no database session is left idle in a transaction"
	check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'vo_t_new'") $(sql "SELECT partitions FROM mq.topics WHERE topic = 'vo_t'")" \
		"0 2" "as mq_vo_$who: validate_only changed nothing"
done
finish
