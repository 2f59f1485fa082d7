/*-------------------------------------------------------------------------
 *
 * kerr.c
 *	  SQLSTATE to Kafka error code (the table in docs/kafka.md).
 *
 * insufficient_privilege (42501) becomes one of Kafka's authorization
 * errors after the kind of resource refused, which mq's refusals carry in
 * the error's table field ("topic", "group", "cluster"; docs/errors.md),
 * never after the message's text.  A refusal without it is PostgreSQL's
 * own: SET ROLE to a principal's role the daemon may not take (the
 * records asked for are the principal's to be refused:
 * TOPIC_AUTHORIZATION_FAILED), or no EXECUTE on a function, which the
 * one handler that can meet it maps (InitProducerId: the cluster's).
 *
 *-------------------------------------------------------------------------
 */
#include "kerr.h"

#include <string.h>

#include "mq_sqlstates.h"

static const struct
{
	const char *sqlstate;
	int16_t		code;
}			map[] =
	{
		{MQ_SQLSTATE_UNKNOWN_TOPIC, KERR_UNKNOWN_TOPIC_OR_PARTITION},
		{MQ_SQLSTATE_TOPIC_EXISTS, KERR_TOPIC_ALREADY_EXISTS},
		{MQ_SQLSTATE_INVALID_TOPIC_NAME, KERR_INVALID_TOPIC_EXCEPTION},
		/* a write to __consumer_offsets, refused as Kafka does */
		{MQ_SQLSTATE_INTERNAL_TOPIC, KERR_INVALID_TOPIC_EXCEPTION},
		{MQ_SQLSTATE_INVALID_CONFIG, KERR_INVALID_CONFIG},
		{MQ_SQLSTATE_INVALID_PARTITIONS, KERR_INVALID_PARTITIONS},
		{MQ_SQLSTATE_UNKNOWN_PARTITION, KERR_UNKNOWN_TOPIC_OR_PARTITION},
		{MQ_SQLSTATE_OFFSET_OUT_OF_RANGE, KERR_OFFSET_OUT_OF_RANGE},
		{MQ_SQLSTATE_INVALID_RECORD, KERR_INVALID_RECORD},
		{MQ_SQLSTATE_INVALID_ARGUMENT, KERR_INVALID_REQUEST},
		{MQ_SQLSTATE_OUT_OF_ORDER_SEQUENCE, KERR_OUT_OF_ORDER_SEQUENCE_NUMBER},
		{MQ_SQLSTATE_PRODUCER_FENCED, KERR_INVALID_PRODUCER_EPOCH},
		{MQ_SQLSTATE_UNKNOWN_PRODUCER_ID, KERR_UNKNOWN_PRODUCER_ID},
		{MQ_SQLSTATE_INVALID_PRODUCER_EPOCH, KERR_INVALID_PRODUCER_EPOCH},
		{MQ_SQLSTATE_DUPLICATE_SEQUENCE, KERR_DUPLICATE_SEQUENCE_NUMBER},
		{MQ_SQLSTATE_NOT_LEADER, KERR_NOT_LEADER_OR_FOLLOWER},
		{MQ_SQLSTATE_NOT_ENOUGH_REPLICAS, KERR_NOT_ENOUGH_REPLICAS},
		{MQ_SQLSTATE_NOT_ENOUGH_REPLICAS_AFTER_APPEND, KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND},
		{MQ_SQLSTATE_REQUEST_TIMED_OUT, KERR_REQUEST_TIMED_OUT},
		{MQ_SQLSTATE_INVALID_REQUIRED_ACKS, KERR_INVALID_REQUIRED_ACKS},
		/* InitProducerId while the node waits for a block: retriable */
		{MQ_SQLSTATE_PRODUCER_IDS_EXHAUSTED, KERR_COORDINATOR_LOAD_IN_PROGRESS},
		{MQ_SQLSTATE_STALE_GENERATION, KERR_ILLEGAL_GENERATION},
		{MQ_SQLSTATE_UNKNOWN_MEMBER, KERR_UNKNOWN_MEMBER_ID},
		{MQ_SQLSTATE_FENCED_INSTANCE, KERR_FENCED_INSTANCE_ID},
		{MQ_SQLSTATE_GROUP_NOT_FOUND, KERR_GROUP_ID_NOT_FOUND},
		{MQ_SQLSTATE_NON_EMPTY_GROUP, KERR_NON_EMPTY_GROUP},
		{MQ_SQLSTATE_GROUP_SUBSCRIBED_TO_TOPIC, KERR_GROUP_SUBSCRIBED_TO_TOPIC},
		{MQ_SQLSTATE_OFFSET_METADATA_TOO_LARGE, KERR_OFFSET_METADATA_TOO_LARGE},
		{MQ_SQLSTATE_RECORD_TOO_LARGE, KERR_MESSAGE_TOO_LARGE},
		{MQ_SQLSTATE_INVALID_TIMESTAMP, KERR_INVALID_TIMESTAMP},
		{MQ_SQLSTATE_INVALID_SCRAM_CREDENTIAL, KERR_UNACCEPTABLE_CREDENTIAL},
		{MQ_SQLSTATE_UNSUPPORTED_SASL_MECHANISM, KERR_UNSUPPORTED_SASL_MECHANISM},
		{MQ_SQLSTATE_SCRAM_CREDENTIAL_NOT_FOUND, KERR_RESOURCE_NOT_FOUND},
		{MQ_SQLSTATE_INVALID_CLIENT_QUOTA, KERR_INVALID_REQUEST},
		{MQ_SQLSTATE_INVALID_TXN_STATE, KERR_INVALID_TXN_STATE},
		{MQ_SQLSTATE_INVALID_PRODUCER_ID_MAPPING, KERR_INVALID_PRODUCER_ID_MAPPING},
		/* AlterPartitionReassignments (h_reassign.c) */
		{MQ_SQLSTATE_UNKNOWN_BROKER, KERR_INVALID_REPLICA_ASSIGNMENT},
		{MQ_SQLSTATE_INVALID_REPLICAS, KERR_INVALID_REPLICA_ASSIGNMENT},
		{MQ_SQLSTATE_REASSIGNMENT_IN_PROGRESS, KERR_REASSIGNMENT_IN_PROGRESS},
		/* CreateTopics and CreatePartitions in a cluster (placement) */
		{MQ_SQLSTATE_INVALID_REPLICATION_FACTOR, KERR_INVALID_REPLICATION_FACTOR},
		/* AlterReplicaLogDirs (h_log_dirs_alter.c) */
		{MQ_SQLSTATE_UNKNOWN_TABLESPACE, KERR_LOG_DIR_NOT_FOUND},
};

static int16_t
authorization_error(const char *resource)
{
	if (resource && strcmp(resource, "topic") == 0)
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (resource && strcmp(resource, "group") == 0)
		return KERR_GROUP_AUTHORIZATION_FAILED;
	if (resource && strcmp(resource, "transactional_id") == 0)
		return KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (resource && strcmp(resource, "cluster") == 0)
		return KERR_CLUSTER_AUTHORIZATION_FAILED;
	return KERR_TOPIC_AUTHORIZATION_FAILED;
}

int16_t
kerr_from_mq(const MqError *err)
{
	/*
	 * A lost connection, or a transient refusal (mq_error_is_transient:
	 * lock_timeout, serializable isolation, deadlocks, statement_timeout):
	 * retriable, not UNKNOWN_SERVER_ERROR, which fails a producer's message
	 * for good.  A cancel may strike after mq.produce committed (acks=all,
	 * waiting for the ISR): REQUEST_TIMED_OUT, which librdkafka counts as
	 * possibly persisted; the others roll back what they did:
	 * KAFKA_STORAGE_ERROR, not persisted.
	 */
	if (mq_error_is(err, "57014"))
		return KERR_REQUEST_TIMED_OUT;
	if (err->connection_lost || mq_error_is_transient(err))
		return KERR_KAFKA_STORAGE_ERROR;
	if (strcmp(err->sqlstate, "42501") == 0)
		return authorization_error(err->table_name);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(err->sqlstate, map[i].sqlstate) == 0)
			return map[i].code;
	return KERR_UNKNOWN_SERVER_ERROR;
}

int16_t
kerr_leader_epoch(int32_t asked, int32_t current)
{
	if (asked < 0 || asked == current)
		return KERR_NONE;
	return asked < current ? KERR_FENCED_LEADER_EPOCH : KERR_UNKNOWN_LEADER_EPOCH;
}
