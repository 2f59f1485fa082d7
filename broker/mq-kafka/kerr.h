/*-------------------------------------------------------------------------
 *
 * kerr.h
 *	  Kafka error codes mq-kafka sends, and the mapping from mq's SQLSTATEs
 *	  (docs/errors.md) to them.  The numbers are fixed by the protocol.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KERR_H
#define MQK_KERR_H

#include <stdint.h>

#include "mqconn.h"

enum
{
	KERR_UNKNOWN_SERVER_ERROR = -1,
	KERR_NONE = 0,
	KERR_OFFSET_OUT_OF_RANGE = 1,
	KERR_CORRUPT_MESSAGE = 2,
	KERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
	KERR_NOT_LEADER_OR_FOLLOWER = 6,
	KERR_REQUEST_TIMED_OUT = 7,
	KERR_MESSAGE_TOO_LARGE = 10,
	KERR_COORDINATOR_NOT_AVAILABLE = 15,
	KERR_INVALID_TOPIC_EXCEPTION = 17,
	KERR_NOT_ENOUGH_REPLICAS = 19,
	KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
	KERR_ILLEGAL_GENERATION = 22,
	KERR_INCONSISTENT_GROUP_PROTOCOL = 23,
	KERR_INVALID_GROUP_ID = 24,
	KERR_UNKNOWN_MEMBER_ID = 25,
	KERR_INVALID_SESSION_TIMEOUT = 26,
	KERR_REBALANCE_IN_PROGRESS = 27,
	KERR_UNSUPPORTED_VERSION = 35,
	KERR_TOPIC_ALREADY_EXISTS = 36,
	KERR_INVALID_PARTITIONS = 37,
	KERR_INVALID_REPLICATION_FACTOR = 38,
	KERR_INVALID_CONFIG = 40,
	KERR_INVALID_REQUEST = 42,
	KERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
	KERR_INVALID_PRODUCER_EPOCH = 47,
	KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
	KERR_KAFKA_STORAGE_ERROR = 56,
	KERR_UNKNOWN_PRODUCER_ID = 59,
	KERR_GROUP_ID_NOT_FOUND = 69,
	KERR_UNSUPPORTED_COMPRESSION_TYPE = 76,
	KERR_FENCED_INSTANCE_ID = 82,
	KERR_INVALID_RECORD = 87,
};

/*
 * The Kafka error for a failed statement: the SQLSTATE's meaning, or
 * KAFKA_STORAGE_ERROR (retriable) when the database connection was lost,
 * or UNKNOWN_SERVER_ERROR.
 */
extern int16_t kerr_from_mq(const MqError *err);

#endif							/* MQK_KERR_H */
