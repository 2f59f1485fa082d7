/*-------------------------------------------------------------------------
 *
 * kerr.c
 *	  SQLSTATE to Kafka error code (the table in docs/kafka.md).
 *
 *-------------------------------------------------------------------------
 */
#include "kerr.h"

#include <string.h>

static const struct
{
	const char *sqlstate;
	int16_t		code;
}			map[] =
{
	{"MQ001", KERR_UNKNOWN_TOPIC_OR_PARTITION},
	{"MQ002", KERR_TOPIC_ALREADY_EXISTS},
	{"MQ003", KERR_INVALID_TOPIC_EXCEPTION},
	{"MQ004", KERR_INVALID_CONFIG},
	{"MQ005", KERR_INVALID_PARTITIONS},
	{"MQ006", KERR_UNKNOWN_TOPIC_OR_PARTITION},
	{"MQ007", KERR_OFFSET_OUT_OF_RANGE},
	{"MQ008", KERR_MESSAGE_TOO_LARGE},
	{"MQ010", KERR_INVALID_REQUEST},
	{"MQ011", KERR_OUT_OF_ORDER_SEQUENCE_NUMBER},
	{"MQ012", KERR_INVALID_PRODUCER_EPOCH},
	{"MQ013", KERR_UNKNOWN_PRODUCER_ID},
	{"MQ014", KERR_INVALID_PRODUCER_EPOCH},
	{"MQ020", KERR_NOT_LEADER_OR_FOLLOWER},
	{"MQ021", KERR_NOT_ENOUGH_REPLICAS},
	{"MQ022", KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND},
	{"MQ023", KERR_REQUEST_TIMED_OUT},
	{"MQ030", KERR_ILLEGAL_GENERATION},
	{"MQ031", KERR_UNKNOWN_MEMBER_ID},
	{"MQ033", KERR_FENCED_INSTANCE_ID},
};

int16_t
kerr_from_mq(const MqError *err)
{
	if (err->connection_lost)
		return KERR_KAFKA_STORAGE_ERROR;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(err->sqlstate, map[i].sqlstate) == 0)
			return map[i].code;
	return KERR_UNKNOWN_SERVER_ERROR;
}
