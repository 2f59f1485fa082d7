/*-------------------------------------------------------------------------
 *
 * idempotence.c
 *	  Idempotent producers: producer ids and epochs, per-partition sequence
 *	  checks that drop retried batches, and fencing of older epochs.
 *
 * mq.producer holds one row per producer id with its current epoch; a
 * transactional id maps to one producer id whose epoch init_producer
 * bumps.  mq.producer_state holds, per partition and producer, the epoch
 * and the first/last sequence and base offset of its last five batches
 * (Kafka allows five in flight), written in the same transaction as the
 * records, so it is exactly as durable as they are.  The records also
 * carry producer id, epoch and sequence, so a replica can rebuild the
 * state from the log it copied.
 *
 * Ids and state mq does not have, epochs a producer starts itself.  As on
 * a Kafka partition leader since KIP-360, a producer the partition has no
 * state of (new to it, or idle past mq.producer_id_expiration_ms) starts
 * at any sequence, and any batch of an id the node does not know
 * registers it: one issued by another node of a cluster (ids are
 * cluster-wide there, src/sql/63_producer_ids.sql, and a producer writes
 * to every partition leader with the id one node issued), one that
 * expired (kafkajs goes on with its sequences after a day idle), one from
 * before a restore.  init_producer skips registered ids
 * (mq._next_local_producer_id), so such an id is never handed out again.
 * A batch at sequence 0 with a newer epoch of an id that has no
 * transactional id starts that epoch: librdkafka and Java's idempotent
 * producers bump their own epoch after batches timed out.
 *
 * Fencing.  Every idempotent send (and fenced offset commit) holds a
 * shared lock on its producer id until its transaction ends, then reads
 * the current epoch with the latest snapshot.  init_producer bumps the
 * epoch and then takes that lock exclusively, so it waits for in-flight
 * transactions of the old epoch to finish, and any send queued behind it
 * sees the new epoch and is refused.  Maintenance's expiry takes it
 * exclusively too, without waiting: it skips ids a send holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_lock_producer);
PG_FUNCTION_INFO_V1(mq_try_lock_producer);

#define MQ_PRODUCER_HISTORY 5

/* the producer's lock, until the transaction ends; false: taken (!wait) */
static bool
lock_producer(int64 producer_id, LOCKMODE mode, bool wait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (producer_id >> 32),
						 (uint32) producer_id, MQ_LOCK_PRODUCER);
	return LockAcquire(&tag, mode, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/* mq._lock_producer(producer_id): init_producer's wait for the old epoch */
Datum
mq_lock_producer(PG_FUNCTION_ARGS)
{
	(void) lock_producer(PG_GETARG_INT64(0), ExclusiveLock, true);
	PG_RETURN_VOID();
}

/* mq._try_lock_producer(producer_id): expiry's, if no send holds it */
Datum
mq_try_lock_producer(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(lock_producer(PG_GETARG_INT64(0), ExclusiveLock, false));
}

/* What a node knows of a producer id, read by read_producer */
typedef struct ProducerRow
{
	bool		found;			/* mq.producer has the id */
	int32		epoch;			/* its current epoch, when found */
	bool		transactional;	/* found with a transactional id */
	bool		cluster;		/* ids are cluster-wide (a broker attached) */
} ProducerRow;

/*
 * The producer's row.  Read with the latest snapshot: an epoch bumped
 * since our snapshot must count.
 */
static void
read_producer(int64 producer_id, ProducerRow *row)
{
	static SPIPlanPtr plan = NULL;
	MqSpiSave	spi;
	Datum		arg = Int64GetDatum(producer_id);
	bool		isnull;

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtype = INT8OID;

		plan = mq_spi_prepare("SELECT p.producer_epoch, p.transactional_id IS NOT NULL, "
							  "       EXISTS (SELECT 1 FROM mq.replica_broker) "
							  "  FROM (SELECT 1) AS one "
							  "  LEFT JOIN mq.producer p ON p.producer_id = $1",
							  1, &argtype);
	}
	if (SPI_execute_plan(plan, &arg, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "mq: producer lookup failed");
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		d = SPI_getbinval(tup, desc, 1, &isnull);

		row->found = !isnull;
		row->epoch = row->found ? DatumGetInt32(d) : 0;
		row->transactional = row->found && DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		row->cluster = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	}
	mq_spi_end(&spi);
	PopActiveSnapshot();
}

/*
 * Register the epoch a batch starts (starts_epoch): insert an id issued by
 * another node, or move a known id to the newer epoch.
 */
static void
register_epoch(int64 producer_id, int32 epoch)
{
	static SPIPlanPtr plan = NULL;
	MqSpiSave	spi;
	Datum		args[2] = {Int64GetDatum(producer_id), Int32GetDatum(epoch)};

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[2] = {INT8OID, INT4OID};

		plan = mq_spi_prepare("INSERT INTO mq.producer AS p (producer_id, producer_epoch) "
							  "VALUES ($1, $2) ON CONFLICT (producer_id) DO UPDATE "
							  "SET producer_epoch = GREATEST(p.producer_epoch, EXCLUDED.producer_epoch), "
							  "    last_used = pg_catalog.now()",
							  2, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "mq: producer registration failed");
	mq_spi_end(&spi);
}

/*
 * Whether a batch (or a fenced offset commit, base_sequence -1) starts its
 * producer's epoch here (above): any batch of an unknown id; a batch at
 * sequence 0 of a newer epoch of an id without a transactional id.  In a
 * cluster a fenced offset commit also registers an unknown id or starts
 * a newer epoch of a foreign one (a transactional id's, from
 * mq_coord.init_producer, whose consumer may commit where it never
 * produced); elsewhere it must name a producer the node knows.  The
 * epochs of transactional ids issued here are this node's own.
 */
static bool
starts_epoch(const ProducerRow *row, int32 epoch, int32 base_sequence)
{
	if (!row->found)
		return row->cluster || base_sequence >= 0;
	return !row->transactional && epoch > row->epoch &&
		(base_sequence == 0 || (row->cluster && base_sequence < 0));
}

/*
 * Check that the producer exists and that the epoch is its current one,
 * holding the producer's shared lock until the transaction ends.
 * base_sequence is the batch's first sequence (-1 for an offset commit);
 * an epoch the batch starts (starts_epoch) is registered first.
 */
void
mq_producer_check_epoch(int64 producer_id, int32 epoch, int32 base_sequence)
{
	ProducerRow row;

	/* Kafka's epoch is an int16: no other is ever registered */
	if (epoch < 0 || epoch > PG_INT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_epoch must be from 0 to %d, not %d", PG_INT16_MAX, epoch)));
	(void) lock_producer(producer_id, ShareLock, true);
	read_producer(producer_id, &row);
	if (starts_epoch(&row, epoch, base_sequence))
	{
		register_epoch(producer_id, epoch);
		read_producer(producer_id, &row);
	}

	if (!row.found)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_PRODUCER_ID),
				 errmsg("producer id " INT64_FORMAT " is unknown or has expired", producer_id),
				 errhint("Call mq.init_producer() to get a producer id; ids expire after mq.producer_id_expiration_ms without use.")));
	if (epoch < row.epoch)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_PRODUCER_FENCED),
				 errmsg("producer " INT64_FORMAT " with epoch %d has been fenced by epoch %d",
						producer_id, epoch, row.epoch),
				 errdetail("Another instance called mq.init_producer() with the same transactional id."),
				 errhint("This instance must stop producing; the newer one has taken over.")));
	/* a newer epoch a batch does not start: not at 0, as Kafka's leader says */
	if (epoch > row.epoch && !row.transactional && base_sequence > 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_OUT_OF_ORDER_SEQUENCE),
				 errmsg("out-of-order sequence %d from producer " INT64_FORMAT " epoch %d: expected 0",
						base_sequence, producer_id, epoch),
				 errdetail("A new epoch of a producer starts at sequence 0.")));
	if (epoch > row.epoch)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_PRODUCER_EPOCH),
				 errmsg("producer " INT64_FORMAT " has epoch %d, not %d", producer_id, row.epoch, epoch),
				 errhint("Use the epoch that mq.init_producer() returned.")));
}

static int32 *
int4_array(Datum d, int *n)
{
	ArrayType  *a = DatumGetArrayTypeP(d);

	*n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	return (int32 *) ARR_DATA_PTR(a);
}

static int64 *
int8_array(Datum d, int *n)
{
	ArrayType  *a = DatumGetArrayTypeP(d);

	*n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	return (int64 *) ARR_DATA_PTR(a);
}

/* the sequence after s: sequences wrap to 0 after INT32_MAX, as in Kafka */
static int32
next_sequence(int32 s, int64 count)
{
	return (int32) (((int64) s + count) % ((int64) PG_INT32_MAX + 1));
}

/*
 * Is sequence a before b, in the half of the wrapping sequence space that
 * precedes b?  (A batch ahead of the window, a gap, is not.)
 */
static bool
seq_before(int32 a, int32 b)
{
	int64		d = ((int64) b - a + (int64) PG_INT32_MAX + 1) % ((int64) PG_INT32_MAX + 1);

	return d > 0 && d <= ((int64) PG_INT32_MAX + 1) / 2;
}

/*
 * Under the partition's produce lock: decide whether a batch of n records
 * with this producer identity is new (returns false), or a retry of one of
 * the last five batches (returns true and sets *dup_base to the offset the
 * original got).  A batch entirely before those five is a duplicate whose
 * offsets are forgotten (MQ015, Kafka's DUPLICATE_SEQUENCE_NUMBER); any
 * other sequence is a gap (MQ011).  Only before five, though: with fewer
 * remembered, the oldest is the first the partition took of this epoch,
 * which may have come mid-sequence (its state had expired, above), so
 * nothing says an older batch was written: a gap, as Kafka answers it.
 */
bool
mq_producer_check_sequence(MqTopic *topic, int32 partition, MqProducer *p,
						   int n, int64 *dup_base)
{
	static SPIPlanPtr plan = NULL;
	MqSpiSave	spi;
	Datum		args[3];
	bool		isnull;
	bool		found;
	int32		state_epoch = 0;
	int32	   *firsts = NULL,
			   *lasts = NULL;
	int64	   *bases = NULL;
	int			nfirst = 0,
				nlast,
				nbase;
	int32		last_seq = n > 0 ? next_sequence(p->base_sequence, n - 1) : p->base_sequence;
	bool		duplicate = false;

	args[0] = Int32GetDatum(topic->topic_id);
	args[1] = Int32GetDatum(partition);
	args[2] = Int64GetDatum(p->producer_id);

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[3] = {INT4OID, INT4OID, INT8OID};

		plan = mq_spi_prepare("SELECT producer_epoch, batch_first, batch_last, batch_offset "
							  "  FROM mq.producer_state "
							  " WHERE topic_id = $1 AND partition = $2 AND producer_id = $3",
							  3, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: producer state lookup failed");
	found = (SPI_processed == 1);
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		state_epoch = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		firsts = int4_array(SPI_getbinval(tup, desc, 2, &isnull), &nfirst);
		lasts = int4_array(SPI_getbinval(tup, desc, 3, &isnull), &nlast);
		bases = int8_array(SPI_getbinval(tup, desc, 4, &isnull), &nbase);
		Assert(nfirst == nlast && nlast == nbase);
	}

	if (!found)
	{
		/*
		 * none here: a producer new to the partition, or whose state expired,
		 * starts at any sequence, as on Kafka since KIP-360
		 */
	}
	else if (state_epoch != p->producer_epoch)
	{
		/* a new epoch of a producer the partition knows starts at 0 */
		if (p->base_sequence != 0)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_OUT_OF_ORDER_SEQUENCE),
					 errmsg("out-of-order sequence %d from producer " INT64_FORMAT " epoch %d on topic \"%s\" partition %d: expected 0",
							p->base_sequence, p->producer_id, p->producer_epoch, topic->name, partition),
					 errdetail("This is the producer epoch's first batch on this partition.")));
	}
	else
	{
		for (int i = 0; i < nfirst; i++)
		{
			if (firsts[i] != p->base_sequence)
				continue;
			if (lasts[i] != last_seq)
				ereport(ERROR,
						(errcode(ERRCODE_MQ_OUT_OF_ORDER_SEQUENCE),
						 errmsg("retried batch from producer " INT64_FORMAT " does not match the original",
								p->producer_id),
						 errdetail("Sequences %d..%d were written as %d..%d.",
								   p->base_sequence, last_seq, firsts[i], lasts[i])));
			duplicate = true;
			*dup_base = bases[i];
			break;
		}
		if (!duplicate && nfirst == MQ_PRODUCER_HISTORY && seq_before(last_seq, firsts[0]))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_DUPLICATE_SEQUENCE),
					 errmsg("duplicate sequences %d..%d from producer " INT64_FORMAT " epoch %d on topic \"%s\" partition %d",
							p->base_sequence, last_seq, p->producer_id, p->producer_epoch,
							topic->name, partition),
					 errdetail("The batch was written before the last %d batches the partition remembers (from sequence %d on); its offsets are no longer known and nothing was written.",
							   MQ_PRODUCER_HISTORY, firsts[0]),
					 errhint("Treat the batch as acknowledged, as Kafka's DUPLICATE_SEQUENCE_NUMBER is.")));
		if (!duplicate && p->base_sequence != next_sequence(lasts[nfirst - 1], 1))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_OUT_OF_ORDER_SEQUENCE),
					 errmsg("out-of-order sequence %d from producer " INT64_FORMAT " epoch %d on topic \"%s\" partition %d: expected %d",
							p->base_sequence, p->producer_id, p->producer_epoch, topic->name,
							partition, next_sequence(lasts[nfirst - 1], 1)),
					 errdetail("Either a batch was lost or this one is older than the last %d the partition remembers.",
							   MQ_PRODUCER_HISTORY)));
	}
	mq_spi_end(&spi);
	PopActiveSnapshot();
	return duplicate;
}

/*
 * After appending: remember the batch as the producer's newest on this
 * partition, keeping the last five.  One row write per batch.
 */
void
mq_producer_record_batch(MqTopic *topic, int32 partition, MqProducer *p,
						 int n, int64 base)
{
	static SPIPlanPtr plan = NULL;
	MqSpiSave	spi;
	Datum		args[7];

	args[0] = Int32GetDatum(topic->topic_id);
	args[1] = Int32GetDatum(partition);
	args[2] = Int64GetDatum(p->producer_id);
	args[3] = Int32GetDatum(p->producer_epoch);
	args[4] = Int32GetDatum(p->base_sequence);
	args[5] = Int64GetDatum(base);
	args[6] = Int32GetDatum(next_sequence(p->base_sequence, n - 1));

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[7] = {INT4OID, INT4OID, INT8OID, INT4OID, INT4OID, INT8OID, INT4OID};
		char		sql[1024];

		/*
		 * A new epoch replaces the history; the same epoch appends to it and
		 * keeps the newest MQ_PRODUCER_HISTORY entries.
		 */
		snprintf(sql, sizeof(sql),
				 "INSERT INTO mq.producer_state AS s (topic_id, partition, producer_id, producer_epoch, "
				 "       batch_first, batch_last, batch_offset) "
				 "VALUES ($1, $2, $3, $4, ARRAY[$5], ARRAY[$7], ARRAY[$6]) "
				 "ON CONFLICT (topic_id, partition, producer_id) DO UPDATE SET "
				 "  producer_epoch = EXCLUDED.producer_epoch, updated_at = pg_catalog.now(), "
				 "  batch_first = CASE WHEN s.producer_epoch <> EXCLUDED.producer_epoch THEN EXCLUDED.batch_first "
				 "    ELSE (s.batch_first || EXCLUDED.batch_first)[greatest(1, array_length(s.batch_first, 1) + 2 - %d):] END, "
				 "  batch_last = CASE WHEN s.producer_epoch <> EXCLUDED.producer_epoch THEN EXCLUDED.batch_last "
				 "    ELSE (s.batch_last || EXCLUDED.batch_last)[greatest(1, array_length(s.batch_last, 1) + 2 - %d):] END, "
				 "  batch_offset = CASE WHEN s.producer_epoch <> EXCLUDED.producer_epoch THEN EXCLUDED.batch_offset "
				 "    ELSE (s.batch_offset || EXCLUDED.batch_offset)[greatest(1, array_length(s.batch_offset, 1) + 2 - %d):] END",
				 MQ_PRODUCER_HISTORY, MQ_PRODUCER_HISTORY, MQ_PRODUCER_HISTORY);
		plan = mq_spi_prepare(sql, 7, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "mq: producer state update failed");
	mq_spi_end(&spi);
}
