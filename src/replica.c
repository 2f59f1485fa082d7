/*-------------------------------------------------------------------------
 *
 * replica.c
 *	  The data node's side of replication: the parts of the replica API
 *	  (src/sql/60_replica*.sql) that need C.  Appending fetched records at
 *	  the leader's offsets, truncating a divergent suffix, waiting for new
 *	  records (a follower's long poll) and for the high watermark
 *	  (mq.produce_await, the acks=all half of the produce contract that
 *	  src/sql/31_produce_acks.sql owns).  Refusing produce and consume on a partition this node
 *	  does not lead is leadership.c's.
 *
 * Who decides what.  The broker (broker/mq-broker) decides roles and
 * epochs from the coordinator and tells the node with
 * mq.replica_become_leader / mq.replica_become_follower; the node only
 * enforces them.  Every replica-side call names the caller's leader epoch
 * and is refused when it differs from the node's (MQ024 when the caller's
 * is older, MQ025 when it is newer), because advisory locks on the
 * coordinator are not leases: a paused broker may still believe it leads.
 * The epoch checks themselves are in SQL (mq._replica_fence); the
 * functions here run after them, under the partition's produce lock.
 *
 * A node's leadership lives only as long as its broker.  The broker's
 * session on its node holds an advisory lock (mq.replica_attach_broker);
 * once a node has had a broker, a leader whose broker is gone (killed,
 * or cut off from its node) takes no produce, serves no reads and
 * acknowledges no acks=all: nobody would tell it that it was deposed,
 * and its clients should move to the new leader now rather than time
 * out.  Nodes that never had a broker (tests playing the broker by hand)
 * are not affected.
 *
 * Durability.  An acks=all write on a leader commits without its own
 * flush, so that followers fetch it while the leader's WAL is written; the
 * high watermark counts the leader's log end only once flushed
 * (mq._replica_durable_log_end), and the producer's wait starts that flush
 * at once (commit_wait.c).
 *
 * Waiting.  The producer's wait (here) and the followers' long polls
 * (replica_wait.c) use notify.c: an append wakes the partition's waiters
 * at commit, and so does every high-watermark, ISR or role change made by
 * the replica API (mq._replica_notify).  A waiter reads the partition's change
 * counter before it looks, so a change between its look and its sleep is
 * never missed; there is no sleep loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_replica_lock);
PG_FUNCTION_INFO_V1(mq_replica_progress_lock);
PG_FUNCTION_INFO_V1(mq_replica_notify);
PG_FUNCTION_INFO_V1(mq_replica_durable_log_end);
PG_FUNCTION_INFO_V1(mq_produce_await);
PG_FUNCTION_INFO_V1(mq_produce_outside_block);
PG_FUNCTION_INFO_V1(mq_replica_await_hwm);
PG_FUNCTION_INFO_V1(mq_replica_append_records);
PG_FUNCTION_INFO_V1(mq_replica_truncate_records);

/* mq.produce_await's wait when timeout_ms is NULL or below 1 */
#define PRODUCE_TIMEOUT_MS	30000


/* mq._replica_lock(topic_id, partition): the produce lock, until commit */
Datum
mq_replica_lock(PG_FUNCTION_ARGS)
{
	mq_lock_partition_class(PG_GETARG_INT32(0), PG_GETARG_INT32(1), MQ_LOCK_PRODUCE);
	PG_RETURN_VOID();
}

/*
 * mq._replica_progress_lock(topic_id, partition): one follower's fetch at
 * a time from recording its progress to its commit.  Two followers
 * reporting the same new log end at once each computed the high watermark
 * under a snapshot without the other's (uncommitted) progress, so neither
 * moved it; both then long-polled with nothing left to wake them, and an
 * acks=all write waited out replica.fetch.wait.max.ms.  Held to commit,
 * so the second fetch's statements see the first's progress.  Fetches
 * take it before any row lock; role changes, which lock rows, never take
 * it, so it adds no deadlock.
 */
Datum
mq_replica_progress_lock(PG_FUNCTION_ARGS)
{
	mq_lock_partition_class(PG_GETARG_INT32(0), PG_GETARG_INT32(1), MQ_LOCK_PROGRESS);
	PG_RETURN_VOID();
}

/* mq._replica_notify(topic_id, partition): wake the partition's waiters at commit */
Datum
mq_replica_notify(PG_FUNCTION_ARGS)
{
	mq_notify_at_commit(PG_GETARG_INT32(0), PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}

/*
 * The partition's log end in the latest snapshot (replica_wait.c), or -1
 * when its topic is gone there: dropped by mq (mq.replica_drop_topic when
 * the coordinator deletes it) after the caller's snapshot was taken, its
 * segment tables with it, which the caller's topic cache may still list.
 * A segment table gone while the latest catalog, read again, still lists
 * it was dropped by something other than mq: MQ074 (mq_segment_open).
 */
int64
mq_replica_log_end_fresh(int32 topic_id, int32 partition)
{
	for (int reads = 1;; reads++)
	{
		MqTopic    *topic;
		MqPartition *part;
		int64		leo;

		AcceptInvalidationMessages();	/* segments created since we looked */
		PushActiveSnapshot(GetLatestSnapshot());
		topic = mq_topic_by_id(topic_id, true);
		if (topic == NULL)
		{
			PopActiveSnapshot();
			return -1;
		}
		part = mq_topic_partition(topic, partition);
		leo = reads < 3 ? mq_log_end_offset_ok(part, GetActiveSnapshot())
			: mq_log_end_offset(part, GetActiveSnapshot());
		PopActiveSnapshot();
		if (leo >= 0)
			return leo;
		mq_topic_cache_reset(); /* a segment it listed is gone: read again */
		CHECK_FOR_INTERRUPTS();
	}
}

/* the same, MQ006 when the topic is gone */
int64
mq_replica_log_end_now(int32 topic_id, int32 partition)
{
	int64		leo = mq_replica_log_end_fresh(topic_id, partition);

	if (leo < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
				 errmsg("partition %d of topic id %d does not exist", partition, topic_id)));
	return leo;
}

/*
 * mq._replica_durable_log_end(topic_id, partition): the log end as a new
 * snapshot sees it, once every commit that snapshot sees is flushed here
 * (notify.c).  The leader's own share of the high watermark: an acks=all
 * write commits without waiting for its flush and is replicated at once,
 * so the leader's log end counts only once its WAL is on disk.  Usually
 * the producer's mq.produce_await has flushed it already, and this returns
 * at once.
 */
Datum
mq_replica_durable_log_end(PG_FUNCTION_ARGS)
{
	int32		topic_id = PG_GETARG_INT32(0);
	int64		leo = mq_replica_log_end_now(topic_id, PG_GETARG_INT32(1));

	mq_notify_flush_visible(topic_id);
	PG_RETURN_INT64(leo);
}

/*
 * mq.produce_await(topic, partition, last_offset, await_epoch,
 * await_min_isr, timeout_ms): the wait of the produce contract
 * (31_produce_acks.sql) after the commit.  NULL at once when last_offset
 * or await_epoch is NULL (mq.produce_records owes no wait); otherwise
 * returns the high watermark once it passes last_offset while this node
 * still leads in await_epoch and the ISR still has await_min_isr members,
 * or raises not_leader, not_enough_replicas_after_append or
 * request_timed_out (commit_wait.c).  timeout_ms NULL or below 1: 30000.
 */
Datum
mq_produce_await(PG_FUNCTION_ARGS)
{
	char	   *topic_name;
	int32		timeout_ms;
	MqTopic    *topic;
	MqReplicaState st;

	/*
	 * nothing owed first: CALL mq.produce of acks 0 or 1 without a
	 * partition comes here after its commit, which an error would report
	 * as failed (a client's retry writing the records twice)
	 */
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topic and partition must not be null")));
	if (PG_GETARG_INT64(2) < 0 || PG_GETARG_INT64(2) == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("last_offset must be an offset, not " INT64_FORMAT, PG_GETARG_INT64(2))));
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("await_min_isr must not be null when await_epoch is given")));
	timeout_ms = PG_ARGISNULL(5) || PG_GETARG_INT32(5) < 1 ? PRODUCE_TIMEOUT_MS : PG_GETARG_INT32(5);
	topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	/* the wait of a write, open to its callers: producers only */
	mq_acl_check(MQ_RES_TOPIC, topic_name, MQ_ACL_WRITE);
	topic = mq_topic_lookup(topic_name, false);
	mq_replica_await_records(topic_name, topic->topic_id, PG_GETARG_INT32(1), PG_GETARG_INT32(3),
							 PG_GETARG_INT64(2) + 1, PG_GETARG_INT32(4), timeout_ms);
	mq_replica_read_state(topic->topic_id, PG_GETARG_INT32(1), &st);
	PG_RETURN_INT64(st.high_watermark);
}

/*
 * mq._produce_outside_block(): the procedure mq.produce commits before it
 * waits, which PostgreSQL refuses inside a transaction block with a
 * message about transaction termination; this says why first.
 */
Datum
mq_produce_outside_block(PG_FUNCTION_ARGS)
{
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_MQ_IN_TRANSACTION_BLOCK),
				 errmsg("mq.produce cannot run inside a transaction block"),
				 errhint("It commits before it waits for the acknowledgement: call it with autocommit, "
						 "or call mq.produce_records in the transaction and mq.produce_await after it.")));
	PG_RETURN_VOID();
}

/*
 * mq._replica_await_hwm: 0.1.0's acks=all wait, kept for 0.1.0's mq-kafka
 * and install script (docs/operations.md, "Upgrades").
 */
Datum
mq_replica_await_hwm(PG_FUNCTION_ARGS)
{
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	MqTopic    *topic;
	MqReplicaState st;

	mq_acl_check(MQ_RES_TOPIC, topic_name, MQ_ACL_WRITE);
	topic = mq_topic_lookup(topic_name, false);
	mq_replica_await_records(topic_name, topic->topic_id, partition, PG_GETARG_INT32(3),
							 PG_GETARG_INT64(2), PG_GETARG_INT32(4), PG_GETARG_INT32(5));
	mq_replica_read_state(topic->topic_id, partition, &st);
	PG_RETURN_INT64(st.high_watermark);
}

/* Elements of an array attribute of the batch; n = -1 when it is null. */
static Datum *
batch_array(HeapTupleHeader batch, int attno, Oid elemtype, bool **nulls, int *n)
{
	bool		isnull;
	Datum		d = GetAttributeByNum(batch, attno, &isnull);

	*nulls = NULL;
	*n = 0;
	if (isnull)
		return NULL;
	return mq_array_elems(DatumGetArrayTypeP(d), elemtype, nulls, n);
}

static void
check_len(int n, int expected, const char *what)
{
	if (n != expected)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("replica batch has %d %s for %d records", n, what, expected)));
}

/*
 * The records of a replica batch, with the leader's append times, Kafka
 * timestamps (NULL: LogAppendTime) and producer fields; returns how many.
 */
static int
batch_records(HeapTupleHeader batch, int32 partition, MqRecordIn **precs, MqRecordMeta **pmeta)
{
	Datum	   *ts,
			   *keys,
			   *vals,
			   *hdrs,
			   *pids,
			   *pepochs,
			   *seqs,
			   *kts;
	bool	   *tsn,
			   *ktsn,
			   *keyn,
			   *valn,
			   *hdrn,
			   *pidn,
			   *pepn,
			   *seqn;
	int			n,
				k;
	MqRecordIn *recs;
	MqRecordMeta *meta;

	ts = batch_array(batch, RB_CREATED_AT, TIMESTAMPTZOID, &tsn, &n);
	if (n == 0)
		return 0;
	keys = batch_array(batch, RB_KEYS, BYTEAOID, &keyn, &k);
	check_len(k, n, "keys");
	vals = batch_array(batch, RB_VALS, BYTEAOID, &valn, &k);
	check_len(k, n, "values");
	hdrs = batch_array(batch, RB_HEADERS, JSONBOID, &hdrn, &k);
	check_len(k, n, "headers");
	pids = batch_array(batch, RB_PRODUCER_IDS, INT8OID, &pidn, &k);
	check_len(k, n, "producer ids");
	pepochs = batch_array(batch, RB_PRODUCER_EPOCHS, INT4OID, &pepn, &k);
	check_len(k, n, "producer epochs");
	seqs = batch_array(batch, RB_SEQUENCES, INT4OID, &seqn, &k);
	check_len(k, n, "sequences");
	kts = batch_array(batch, RB_TIMESTAMPS, TIMESTAMPTZOID, &ktsn, &k);
	if (kts != NULL)
		check_len(k, n, "timestamps");

	*precs = recs = palloc0(sizeof(MqRecordIn) * n);
	*pmeta = meta = palloc0(sizeof(MqRecordMeta) * n);
	for (int i = 0; i < n; i++)
	{
		if (tsn[i])
			ereport(ERROR, (errcode(ERRCODE_MQ_INVALID_ARGUMENT),
							errmsg("replica batch record %d has no timestamp", i + 1)));
		recs[i].partition = partition;
		recs[i].input_index = i;
		recs[i].key = keyn[i] ? NULL : DatumGetByteaPP(keys[i]);
		recs[i].value = valn[i] ? NULL : DatumGetByteaPP(vals[i]);
		recs[i].headers = hdrn[i] ? (Datum) 0 : hdrs[i];
		meta[i].created_at = DatumGetTimestampTz(ts[i]);
		/* the leader's Kafka timestamp exactly, NULL (LogAppendTime) included */
		recs[i].has_timestamp = kts != NULL && !ktsn[i];
		if (recs[i].has_timestamp)
			recs[i].timestamp = DatumGetTimestampTz(kts[i]);
		meta[i].has_producer = !pidn[i] && !pepn[i] && !seqn[i];
		if (meta[i].has_producer)
		{
			meta[i].producer_id = DatumGetInt64(pids[i]);
			meta[i].producer_epoch = DatumGetInt32(pepochs[i]);
			meta[i].sequence = DatumGetInt32(seqs[i]);
		}
	}
	return n;
}

static void
bad_offsets(const char *why, int i, int64 off, int64 bound)
{
	ereport(ERROR,
			(errcode(ERRCODE_MQ_INVALID_REPLICA_OFFSETS),
			 errmsg("replica batch record %d has offset " INT64_FORMAT ", %s " INT64_FORMAT, i + 1, off, why, bound),
			 errdetail("Nothing of the batch was written."),
			 errhint("A leader sends record offsets only for a range with compaction gaps, rising from the follower's log end.")));
}

/*
 * The offsets of a batch's n records: NULL when the batch carries none
 * (they are base, base + 1, ...), else one per record, strictly rising,
 * from base (the follower's log end, checked under the lock) and below
 * the leader's log end.  Checked before anything is written.
 */
static int64 *
batch_offsets(HeapTupleHeader batch, int n, int64 base)
{
	bool	   *nulls;
	int			k;
	Datum	   *elems = batch_array(batch, RB_OFFSETS, INT8OID, &nulls, &k);
	bool		isnull;
	Datum		leo;
	int64	   *offsets;

	if (elems == NULL)
		return NULL;			/* the common case: nothing more to read */
	leo = GetAttributeByNum(batch, RB_LOG_END_OFFSET, &isnull);
	if (k != n)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_REPLICA_OFFSETS),
				 errmsg("replica batch has %d offsets for %d records", k, n),
				 errdetail("Nothing of the batch was written.")));
	if (n == 0)
		return NULL;
	offsets = palloc(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_REPLICA_OFFSETS),
					 errmsg("replica batch record %d has no offset", i + 1),
					 errdetail("Nothing of the batch was written.")));
		offsets[i] = DatumGetInt64(elems[i]);
		if (i == 0 && offsets[i] < base)
			bad_offsets("below the batch's base offset", i, offsets[i], base);
		if (i > 0 && offsets[i] <= offsets[i - 1])
			bad_offsets("not above the previous record's", i, offsets[i], offsets[i - 1]);
	}
	if (!isnull && offsets[n - 1] >= DatumGetInt64(leo))
		bad_offsets("not below the leader's log end", n - 1, offsets[n - 1], DatumGetInt64(leo));
	return offsets;
}

/*
 * mq._replica_append_records(topic, partition, batch): append the batch's
 * records from its base offset on (consecutively, or at the offsets it
 * lists where compaction left gaps), then record the producer batches that
 * end inside it in mq.producer_state, oldest first, so that the follower
 * drops the same retries the leader would.  Returns the new log end (the
 * last record's offset + 1).  The caller (mq.replica_append) has checked
 * the epoch under the lock.
 */
Datum
mq_replica_append_records(PG_FUNCTION_ARGS)
{
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	HeapTupleHeader batch = PG_GETARG_HEAPTUPLEHEADER(2);
	bool		isnull;
	int64		base = DatumGetInt64(GetAttributeByNum(batch, RB_BASE_OFFSET, &isnull));
	int			n,
				k;
	Datum	   *bp,
			   *be,
			   *bf,
			   *bl,
			   *bo;
	bool	   *bpn,
			   *ben,
			   *bfn,
			   *bln,
			   *bon;
	int			nb;
	MqRecordIn *recs;
	MqRecordMeta *meta;
	int64	   *offsets;
	int64		end;
	MqTopic    *topic;

	if (isnull)
		ereport(ERROR, (errcode(ERRCODE_MQ_INVALID_ARGUMENT),
						errmsg("replica batch has no base offset")));
	n = batch_records(batch, partition, &recs, &meta);
	offsets = batch_offsets(batch, n, base);
	if (n == 0)
		PG_RETURN_INT64(base);
	end = mq_log_append_at(topic_name, partition, recs, meta, n, base, offsets);

	/* producer batches whose last record is in [base, end), in offset order */
	topic = mq_topic_lookup(topic_name, false);
	bp = batch_array(batch, RB_BATCH_PRODUCER, INT8OID, &bpn, &nb);
	be = batch_array(batch, RB_BATCH_EPOCH, INT4OID, &ben, &k);
	check_len(k, nb, "batch epochs");
	bf = batch_array(batch, RB_BATCH_FIRST, INT4OID, &bfn, &k);
	check_len(k, nb, "batch first sequences");
	bl = batch_array(batch, RB_BATCH_LAST, INT4OID, &bln, &k);
	check_len(k, nb, "batch last sequences");
	bo = batch_array(batch, RB_BATCH_OFFSET, INT8OID, &bon, &k);
	check_len(k, nb, "batch offsets");
	for (int i = 0; i < nb; i++)
	{
		MqProducer	p;
		int64		first_off;
		int64		count;

		if (bpn[i] || ben[i] || bfn[i] || bln[i] || bon[i])
			continue;
		first_off = DatumGetInt64(bo[i]);
		count = (int64) DatumGetInt32(bl[i]) - DatumGetInt32(bf[i]) + 1;
		if (count <= 0)			/* sequence wrapped inside the batch */
			count += (int64) PG_INT32_MAX + 1;
		if (first_off + count - 1 < base || first_off + count - 1 >= end)
			continue;
		p.present = true;
		p.producer_id = DatumGetInt64(bp[i]);
		p.producer_epoch = DatumGetInt32(be[i]);
		p.base_sequence = DatumGetInt32(bf[i]);
		mq_producer_record_batch(topic, partition, &p, (int) count, first_off);
	}
	PG_RETURN_INT64(end);
}

/*
 * mq._replica_truncate_records(topic_id, partition, offset): remove the
 * records at and above offset (a follower's divergent suffix).  Returns
 * how many were removed.  The caller holds the produce lock and has
 * checked the epoch; this is the only DELETE the log tables ever see.
 */
Datum
mq_replica_truncate_records(PG_FUNCTION_ARGS)
{
	int32		topic_id = PG_GETARG_INT32(0);
	int32		partition = PG_GETARG_INT32(1);
	int64		offset = PG_GETARG_INT64(2);
	MqSpiSave	spi;
	Datum		args[3] = {Int32GetDatum(topic_id), Int32GetDatum(partition), Int64GetDatum(offset)};
	Oid			argtypes[3] = {INT4OID, INT4OID, INT8OID};
	char	   *relname;
	bool		isnull;
	uint64		removed = 0;
	StringInfoData sql;

	mq_spi_begin(&spi);
	if (SPI_execute_with_args("SELECT relid::pg_catalog.text FROM mq.partition_state "
							  "WHERE topic_id = $1 AND partition = $2",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
				 errmsg("partition %d of topic id %d does not exist", partition, topic_id)));
	relname = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	(void) isnull;

	/* relname is a regclass output: already qualified and quoted */
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s WHERE msg_offset >= $1", relname);
	mq_allow_log_change = true;
	PG_TRY();
	{
		if (SPI_execute_with_args(sql.data, 1, &argtypes[2], &args[2], NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "mq: truncating the replica failed");
		removed = SPI_processed;
	}
	PG_FINALLY();
	{
		mq_allow_log_change = false;
	}
	PG_END_TRY();
	mq_spi_end(&spi);
	PG_RETURN_INT64((int64) removed);
}
