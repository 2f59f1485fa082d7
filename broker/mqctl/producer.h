/*-------------------------------------------------------------------------
 *
 * producer.h
 *	  Batches of records sent with mq.send_batch(), for "mqctl produce" and
 *	  "mqctl perf produce": the acks setting, the batch arrays and the call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PRODUCER_H
#define MQCTL_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "mqconn.h"
#include "pgbinary.h"

typedef enum MqAcks
{
	MQ_ACKS_0,					/* asynchronous commit */
	MQ_ACKS_1,					/* the server's commit setting (durable) */
	MQ_ACKS_ALL					/* every in-sync replica: needs mq-broker */
} MqAcks;

/* The value of --acks; "all" ends mqctl with MQ_EXIT_UNAVAILABLE for now. */
extern MqAcks producer_parse_acks(const CliParser *p, const char *arg);

/* The help text lines of --acks, shared by produce and perf produce. */
#define PRODUCER_ACKS_HELP \
"      --acks=ACKS        1 (default): each batch is committed as the server's\n" \
"                         synchronous_commit says (durable by default);\n" \
"                         0: asynchronous commit (fast, a crash may lose\n" \
"                         the last batches); all: needs mq-broker (not yet)\n"

typedef struct MqProducer
{
	PGconn	   *conn;
	const char *topic;
	int32_t		partition;		/* -1: the server's partitioner decides */
	bool		keyed;			/* records have keys (else all keys NULL) */
	bool		want_offsets;	/* get (partition, offset) of every record */
	MqArray		keys;			/* bytea[] parameters of the next batch */
	MqArray		values;
	size_t		bytes;			/* key and value bytes in the batch */

	/*
	 * Idempotence comes with the exactly-once issue, and goes here:
	 * producer_init() will call mq.init_producer() and keep the producer
	 * id and epoch in this struct, and producer_send() will pass them with
	 * a base_sequence per partition.  The server takes one partition per
	 * idempotent batch, so batches will be split by mq.partition_for() on
	 * the client; a send retried after a lost connection will then get
	 * its original offsets back instead of writing twice.
	 */
} MqProducer;

/*
 * Prepare conn for producing to topic: apply acks, prepare the statement.
 * Exits through mqctl_fail() on an error.
 */
extern void producer_init(MqProducer *pr, PGconn *conn, const char *topic,
						  int32_t partition, bool keyed, bool want_offsets,
						  MqAcks acks);
/* Append a record to the batch; key is ignored unless the producer is keyed. */
extern void producer_add(MqProducer *pr, const char *key, size_t keylen,
						 const char *value, size_t valuelen);
static inline int
producer_pending(const MqProducer *pr)
{
	return pr->values.nelems;
}

/*
 * Send the batch in one transaction.  The batch stays as it is, so it can
 * be sent again (perf does) or emptied with producer_clear().  With
 * want_offsets, *offsets gets a binary result of (partition int4,
 * msg_offset int8), one row per record in batch order.
 */
extern bool producer_send(MqProducer *pr, PGresult **offsets, MqError *err);
extern void producer_clear(MqProducer *pr);
extern void producer_free(MqProducer *pr);

#endif							/* MQCTL_PRODUCER_H */
