/*-------------------------------------------------------------------------
 *
 * topic_id.h
 *	  Kafka topic ids (KIP-516: Metadata v10+, Fetch v13+, CreateTopics
 *	  v7+, DeleteTopics v6+) for mq's topics.  No state, no locking.
 *
 * A topic's id is the MD5 of its name, as 16 bytes: mq keeps no UUID per
 * topic, and one derived from the name is the same on every node of a
 * cluster and across restarts without a catalog column kept in step by
 * replication.  The price: a topic dropped and created again under the
 * same name keeps its id, so a client cannot tell it was recreated (as
 * before KIP-516).  SQL computes it as mq._kafka_topic_id(topic), the MD5
 * in hex, which mq.topic indexes (TOPIC_ID_SQL; src/kafka_topic_id.c);
 * the daemon converts between that hex form and the wire's 16 bytes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_TOPIC_ID_H
#define MQK_TOPIC_ID_H

#include <stdbool.h>
#include <stdint.h>

#define KERR_UNKNOWN_TOPIC_ID 100

/* the SQL expression of a topic's id in hex, from its name */
#define TOPIC_ID_SQL(name) "mq._kafka_topic_id(" name ")"

/* 32 hex digits to 16 bytes; false (and zeros) if it is not that */
extern bool topic_id_from_hex(const char *hex, uint8_t *id);
/* the id of a topic named name (what TOPIC_ID_SQL computes) */
extern void topic_id_of(const char *name, uint8_t *id);
/* 16 bytes to 32 hex digits and a NUL */
extern void topic_id_to_hex(const uint8_t *id, char *hex);

#endif							/* MQK_TOPIC_ID_H */
