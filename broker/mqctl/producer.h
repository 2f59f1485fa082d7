/*-------------------------------------------------------------------------
 *
 * producer.h
 *	  Batches of records sent to a topic, for "mqctl produce" and "mqctl
 *	  perf produce": the acks setting, idempotence (producer id, epoch and
 *	  sequence numbers), the split of a batch by partition, the calls of
 *	  mq.send_batch() or mq.produce(), and retries after a lost connection.
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
	MQ_ACKS_ALL					/* and every in-sync replica (mq.produce) */
} MqAcks;

/* The value of --acks: 0, 1, all or -1 (Kafka's other name for all). */
extern MqAcks producer_parse_acks(const CliParser *p, const char *arg);

/* Help text of --acks and --no-idempotence, shared by produce and perf produce */
#define PRODUCER_DELIVERY_HELP \
"      --acks=ACKS        1 (default): each batch is committed as the server's\n" \
"                         synchronous_commit says (durable by default);\n" \
"                         0: asynchronous commit (fast, a crash may lose\n" \
"                         the last batches); all: also wait until every\n" \
"                         in-sync replica has it (mq.produce; the same as 1\n" \
"                         on a partition that is not replicated)\n" \
"      --no-idempotence   no producer id: a batch is not retried after a lost\n" \
"                         connection (by default it is, and the server drops\n" \
"                         the duplicate)\n"

/* One record of the batch: where its bytes are in MqProducer.data. */
typedef struct ProducerRecord
{
	size_t		key_off;
	int32_t		key_len;		/* -1: no key */
	size_t		value_off;
	int32_t		value_len;
	int32_t		partition;		/* once assigned; -1: the server decides */
	int64_t		offset;			/* once sent */
} ProducerRecord;

/* The records of a batch that go to one partition, in one call. */
typedef struct ProducerPart
{
	int32_t		partition;		/* -1: the server decides (not idempotent) */
	int32_t		base_sequence;	/* idempotent: sequence of the first record */
	int			first;			/* in MqProducer.order */
	int			count;
} ProducerPart;

typedef struct MqProducer
{
	PGconn	   *conn;
	const char *topic;
	int32_t		partition;		/* -1: by key, or spread over partitions */
	bool		keyed;			/* records have keys (else all keys NULL) */
	bool		want_offsets;	/* keep (partition, offset) of every record */
	MqAcks		acks;
	bool		idempotent;
	int			timeout_ms;		/* acks=all: mq.produce's wait, 0: its default */
	int32_t		npartitions;	/* at init: for spreading keyless records */

	/* idempotence: mq.init_producer()'s id and epoch, sequences per partition */
	int64_t		producer_id;
	int32_t		producer_epoch;
	int32_t    *next_sequence;	/* npartitions entries */
	int32_t		next_spread;	/* the partition of the next keyless batch */

	/* the batch: records and their bytes */
	ProducerRecord *records;
	int			nrecords;
	int			cap_records;
	char	   *data;
	size_t		data_len;
	size_t		data_cap;
	size_t		bytes;			/* key and value bytes in the batch */

	/* its assignment to partitions and sequences, kept for retries */
	bool		assigned;
	int		   *order;			/* record indices grouped by partition */
	ProducerPart *parts;
	int			nparts;

	MqArray		keys;			/* bytea[] parameters of one call */
	MqArray		values;
} MqProducer;

/*
 * Prepare conn for producing to topic: check the topic, get a producer id
 * (idempotent), apply acks, prepare the statements.  timeout_ms bounds the
 * wait of acks=all (0: the server's default).  Exits through mqctl_fail()
 * on an error.
 */
extern void producer_init(MqProducer *pr, PGconn *conn, const char *topic,
						  int32_t partition, bool keyed, bool want_offsets,
						  MqAcks acks, bool idempotent, int timeout_ms);
/* Append a record to the batch; key is ignored unless the producer is keyed. */
extern void producer_add(MqProducer *pr, const char *key, size_t keylen,
						 const char *value, size_t valuelen);
static inline int
producer_pending(const MqProducer *pr)
{
	return pr->nrecords;
}

/*
 * Send the batch as a new batch: assign partitions (and, idempotent, the
 * next sequence numbers), then send it in one transaction (with acks=all,
 * one per partition).  An idempotent producer that loses its connection
 * reconnects and sends the same batch again for a while, which the server
 * recognises as a retry.  The records stay, so that the same records can
 * be sent again as a new batch (perf does) or emptied with
 * producer_clear().  With want_offsets, records[i].partition and
 * records[i].offset say where each record went.
 */
extern bool producer_send(MqProducer *pr, MqError *err);

/*
 * Send the last batch again exactly as a retry after a lost reply would:
 * same partitions, same sequence numbers.  An idempotent producer gets
 * the original offsets back and writes nothing.  (For tests.)
 */
extern bool producer_retry(MqProducer *pr, MqError *err);

extern void producer_clear(MqProducer *pr);
extern void producer_free(MqProducer *pr);

#endif							/* MQCTL_PRODUCER_H */
