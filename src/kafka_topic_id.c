/*-------------------------------------------------------------------------
 *
 * kafka_topic_id.c
 *	  mq._kafka_topic_id: a topic's Kafka id (KIP-516), the MD5 of its name
 *	  in hex, as mq-kafka gives it in Metadata (broker/mq-kafka/topic_id.h).
 *
 * mq.topic has an index on it, so that mq-kafka finds the topic of an id
 * (Fetch v13+ names topics by id) in a probe.  The lookup goes through the
 * security-barrier view mq.topics, which takes in only leakproof quals:
 * the function is LEAKPROOF (its value is a hash of its argument, and it
 * fails only where MD5 cannot be computed at all), and in C, because a
 * SQL function would be inlined into md5(), which is not.
 *
 * Layer: none below it but PostgreSQL's md5().  No locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"

PG_FUNCTION_INFO_V1(mq_kafka_topic_id);

Datum
mq_kafka_topic_id(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(md5_text, PG_GETARG_DATUM(0));
}
