/*-------------------------------------------------------------------------
 *
 * producer.h
 *	  The producing engine: batches of records sent to a topic, for "mqctl
 *	  produce" and "mqctl perf produce": the acks setting, idempotence
 *	  (producer id, epoch and sequence numbers), the split of a batch by
 *	  partition, the calls of mq.produce_records() or mq.produce(), and retries
 *	  after a lost connection.  The command-line options that configure it
 *	  are producer_options.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_PRODUCER_H
#define MQCTL_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "mqconn.h"
#include "pgbinary.h"
#include "route.h"

typedef enum MqAcks
{
	MQ_ACKS_0,					/* asynchronous commit */
	MQ_ACKS_1,					/* a durable commit on the leader */
	MQ_ACKS_ALL					/* and every in-sync replica (mq.produce) */
} MqAcks;

/* How a producer delivers; producer_options.c fills it from the command line. */
typedef struct ProducerConfig
{
	int32_t		partition;		/* -1: by key, or spread over partitions */
	int			batch_size;		/* records per batch (the commands' loops) */
	MqAcks		acks;
	bool		idempotent;
	int			request_timeout_ms;	/* acks=all: mq.produce's wait, 0: its default */
} ProducerConfig;

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
	int32_t		base_sequence;	/* sequence of the first record; -1: sent without producer id */
	int			first;			/* in MqProducer.order */
	int			count;
	bool		sent;			/* cluster: acknowledged by its leader */
} ProducerPart;

typedef struct MqProducer
{
	PGconn	   *conn;			/* NULL when routed */
	MqRouter   *router;			/* non-NULL: a cluster, through its coordinator */
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
 * Prepare conn for producing to topic as cfg says: check the topic, get a
 * producer id (idempotent), apply acks, prepare the statements.  keyed:
 * records have keys; want_offsets: keep where each record went.  Exits
 * through mqctl_fail() on an error.
 */
extern void producer_init(MqProducer *pr, PGconn *conn, const char *topic,
						  const ProducerConfig *cfg, bool keyed, bool want_offsets);
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

/*
 * producer_call.c, below producer.c and producer_route.c: a session's
 * prepared statements (PARTITION_SQL among them: mq.partition_for over a
 * bytea[] of keys, prepared when keyed; a pooler in transaction mode
 * cannot break them, mqconn.h), the key and value arrays
 * of records order[first .. first+count), and one part's call.
 */
#define PARTITION_SQL \
	"SELECT mq.partition_for($1, u.k)" \
	"  FROM unnest($2::bytea[]) WITH ORDINALITY AS u(k, i) ORDER BY u.i"
extern bool producer_setup_session(MqProducer *pr, PGconn *conn, MqError *err);
extern void producer_build_arrays(MqProducer *pr, int first, int count);
extern bool producer_send_part(MqProducer *pr, PGconn *conn, const ProducerPart *part,
							   MqError *err);

/*
 * producer_route.c: a producer given the coordinator's address.
 * producer_route_open() routes when conn's database is a coordinator that
 * knows the topic (it then owns conn); producer_home() is the connection
 * for calls any node answers (pr->conn, or a leader's); deliver sends
 * every part to its partition's leader, following leader changes.
 */
typedef bool (*ProducerAssign) (MqProducer *pr, MqError *err);
extern bool producer_route_open(MqProducer *pr, PGconn *conn);
extern PGconn *producer_home(MqProducer *pr, MqError *err);
extern bool producer_route_deliver(MqProducer *pr, ProducerAssign assign, MqError *err);
extern void producer_route_close(MqProducer *pr);

#endif							/* MQCTL_PRODUCER_H */
