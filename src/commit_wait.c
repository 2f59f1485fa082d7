/*-------------------------------------------------------------------------
 *
 * commit_wait.c
 *	  Acknowledging what a transaction wrote to replicated partitions:
 *	  the committed-offsets version a commit makes on the leader, the
 *	  session's list of what its last transaction must still get
 *	  replicated, and mq.await_commit, which waits for it (Kafka's
 *	  commitSync and acks=all for a whole transaction).
 *
 * A commit of group offsets on a replicated partition bumps the
 * partition's row of mq.offset_version in the same transaction (so
 * commits of one partition are serialized by that row, and versions
 * follow commit order); followers copy all of the partition's committed
 * offsets with the version and report the version they applied on their
 * next fetch (src/sql/60_replica_fetch.sql).  Records a transaction appends to
 * a replicated partition are acknowledged by the high watermark.
 *
 * Each write notes (partition, leader epoch, records end, offsets
 * version) in a transaction-local list, which becomes the session's
 * pending acknowledgements when the transaction commits (subtransaction
 * aborts drop their notes, a top-level abort drops all).  mq.await_commit
 * waits on the node's notify.c counter until, for each of them, this node
 * still leads in that epoch, the high watermark covers the records, every
 * in-sync replica applied the offsets version, and the ISR is at least
 * min.insync.replicas; it raises MQ020, MQ022 or MQ023 otherwise, exactly
 * as mq.produce's acks=all wait does (replica.c calls the same loop).
 *
 * A transaction that is prepared (PREPARE TRANSACTION) keeps its notes in
 * the session under its transaction id, and mq.txn_finish (twophase.c)
 * makes them the session's pending acknowledgements when it commits that
 * transaction, so that the same session's mq.await_commit waits for what
 * the part wrote, whatever the session committed between the PREPARE and
 * the finish (mqctl pipeline sends outputs again on it meanwhile; handing
 * the notes over at PREPARE let a later commit replace them, and the wait
 * then acknowledged an input part on a node that had resigned).
 * mq.txn_notes shows the notes before PREPARE, for the commit decision
 * that recovery reads (src/sql/64_twophase.sql).
 *
 * The leader's own flush: an acks=all write commits without waiting for
 * it (31_produce_acks.sql), so the wait first flushes the session's last
 * commit, while the followers fetch; the high watermark counts the
 * leader's records only once flushed (replica.c).
 *
 * Locking: the version row is held until the committing transaction
 * ends; the wait holds nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_await_commit);
PG_FUNCTION_INFO_V1(mq_txn_notes);

typedef struct PendingAck
{
	int32		topic_id;
	int32		partition;
	int32		leader_epoch;
	int64		records_end;	/* -1: no records */
	int64		offsets_version;	/* -1: no offsets */
	int			nest_level;		/* subtransaction that wrote it */
} PendingAck;

/* this transaction's notes (kept in TopMemoryContext, grown as needed) */
static PendingAck *xact_acks = NULL;
static int	n_xact_acks = 0;
static int	xact_acks_size = 0;
static PendingAck *session_acks = NULL;
static int	n_session_acks = 0;

/* the notes of transactions this session prepared, by transaction id */
#define MAX_PREPARED_NOTES 16
typedef struct PreparedNotes
{
	TransactionId xid;
	PendingAck *acks;
	int			n;
} PreparedNotes;
static PreparedNotes prepared[MAX_PREPARED_NOTES];
static int	n_prepared = 0;
static TransactionId preparing_xid = InvalidTransactionId;

/* Note a write in this transaction, merging with an earlier one. */
static void
note(int32 topic_id, int32 partition, int32 epoch, int64 records_end, int64 version)
{
	PendingAck *a = NULL;

	for (int i = 0; i < n_xact_acks; i++)
		if (xact_acks[i].topic_id == topic_id && xact_acks[i].partition == partition &&
			xact_acks[i].nest_level == GetCurrentTransactionNestLevel())
			a = &xact_acks[i];
	if (a == NULL)
	{
		if (n_xact_acks == xact_acks_size)
		{
			xact_acks_size = Max(16, xact_acks_size * 2);
			xact_acks = xact_acks == NULL ?
				MemoryContextAlloc(TopMemoryContext, sizeof(PendingAck) * xact_acks_size) :
				repalloc(xact_acks, sizeof(PendingAck) * xact_acks_size);
		}
		a = &xact_acks[n_xact_acks++];
		a->topic_id = topic_id;
		a->partition = partition;
		a->records_end = -1;
		a->offsets_version = -1;
		a->nest_level = GetCurrentTransactionNestLevel();
	}
	a->leader_epoch = epoch;
	a->records_end = Max(a->records_end, records_end);
	a->offsets_version = Max(a->offsets_version, version);
}

/* log.c: this transaction's records of a replicated partition end at end */
void
mq_commit_note_records(MqTopic *topic, int32 partition, int32 epoch, int64 end)
{
	note(topic->topic_id, partition, epoch, end, -1);
}

/*
 * offsets.c, before it stores a committed offset of a replicated
 * partition: only its leader takes commits (MQ020 elsewhere); bump the
 * partition's offsets version and note it.
 */
void
mq_commit_note_offsets(MqTopic *topic, int32 partition)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2] = {Int32GetDatum(topic->topic_id), Int32GetDatum(partition)};
	bool		isnull;
	int64		version;
	int32		epoch = mq_replica_check_leader(topic, partition);
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[2] = {INT4OID, INT4OID};

		plan = mq_spi_prepare("INSERT INTO mq.offset_version AS v (topic_id, partition, version) "
							  "VALUES ($1, $2, 1) ON CONFLICT (topic_id, partition) "
							  "DO UPDATE SET version = v.version OPERATOR(pg_catalog.+) 1 "
							  "RETURNING v.version",
							  2, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "mq: offsets version update failed");
	version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	mq_spi_end(&spi);
	note(topic->topic_id, partition, epoch, -1, version);
	mq_notify_at_commit(topic->topic_id, partition);	/* wake the followers' fetches */
}

/* The largest records end and offsets version noted for a's partition. */
static int64
max_records_end(const PendingAck *a)
{
	int64		v = -1;

	for (int i = 0; i < n_xact_acks; i++)
		if (xact_acks[i].topic_id == a->topic_id && xact_acks[i].partition == a->partition)
			v = Max(v, xact_acks[i].records_end);
	return v;
}

static int64
max_version(const PendingAck *a)
{
	int64		v = -1;

	for (int i = 0; i < n_xact_acks; i++)
		if (xact_acks[i].topic_id == a->topic_id && xact_acks[i].partition == a->partition)
			v = Max(v, xact_acks[i].offsets_version);
	return v;
}

/* The partition's committed-offsets version (0 when never led). */
int64
mq_offsets_version(int32 topic_id, int32 partition)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2] = {Int32GetDatum(topic_id), Int32GetDatum(partition)};
	Oid			argtypes[2] = {INT4OID, INT4OID};
	int64		v = 0;

	(void) mq_spi_get_int64(&plan, "SELECT mq._offsets_version($1, $2)", 2, argtypes, args, &v);
	return v;
}

/* The version every in-sync replica applied in the epoch. */
static int64
acked_version(int32 topic_id, int32 partition, int32 epoch)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[3] = {Int32GetDatum(topic_id), Int32GetDatum(partition), Int32GetDatum(epoch)};
	Oid			argtypes[3] = {INT4OID, INT4OID, INT4OID};
	int64		v = -1;

	(void) mq_spi_get_int64(&plan, "SELECT mq._offsets_acked_version($1, $2, $3)",
							3, argtypes, args, &v);
	return v;
}

/* Has this node's ISR got what the acknowledgement needs? */
static bool
replicated(const PendingAck *a, MqReplicaState *st)
{
	if (a->records_end >= 0 && st->high_watermark < a->records_end)
		return false;
	return a->offsets_version < 0 ||
		acked_version(a->topic_id, a->partition, a->leader_epoch) >= a->offsets_version;
}

/*
 * Wait until what a names is on every in-sync replica while this node
 * leads in its epoch with at least min_isr of them; raise not_leader,
 * not_enough_replicas_after_append or request_timed_out otherwise.
 */
static void
replica_await(const char *topic_name, const PendingAck *a, int32 min_isr, int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), Max(timeout_ms, 0));

	/*
	 * The write did not wait for its flush (an acks=all write on a leader
	 * commits without it): flush now, while the followers fetch it.  The
	 * high watermark waits for that flush too; this starts it at once, and
	 * covers the offsets version, which the high watermark does not.  The
	 * commit may be another session's (mq-kafka waits on a pooled
	 * connection): every commit of the topic visible now is flushed.
	 */
	if (!RecoveryInProgress())
		XLogFlush(XactLastCommitEnd);
	mq_notify_flush_visible(a->topic_id);
	for (;;)
	{
		uint64		seen = mq_notify_part_counter(a->topic_id, a->partition);
		MqReplicaState st;
		bool		done;

		mq_replica_read_state(a->topic_id, a->partition, &st);
		if (!st.found)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
					 errmsg("partition %d of topic \"%s\" does not exist", a->partition, topic_name)));
		done = st.leader_epoch == a->leader_epoch && replicated(a, &st);
		if (st.leader_epoch != a->leader_epoch || strcmp(st.role, "leader") != 0)
		{
			if (done)
				return;			/* replicated before it resigned */
			mq_replica_raise_not_leader(topic_name, a->partition, &st);
		}
		if (!done)
			mq_replica_check_broker(topic_name, a->partition, &st);
		else if (st.isr_size < min_isr)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_NOT_ENOUGH_REPLICAS_AFTER_APPEND),
					 errmsg("writes to \"%s\" partition %d were committed but the in-sync replicas shrank to %d, below min.insync.replicas %d",
							topic_name, a->partition, st.isr_size, min_isr),
					 errdetail("They are committed on the leader and may or may not survive a failover."),
					 errhint("Retry with the same producer id and sequence: an idempotent retry is not written twice.")));
		else
			return;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_REQUEST_TIMED_OUT),
					 errmsg("timed out after %d ms waiting for the in-sync replicas of \"%s\" partition %d",
							timeout_ms, topic_name, a->partition),
					 errdetail("The high watermark is " INT64_FORMAT "; the writes are committed on the leader only.",
							   st.high_watermark),
					 errhint("Retry with the same producer id and sequence: an idempotent retry is not written twice.")));

		/*
		 * A broker's death sends no notification: look again at least every
		 * 250 ms (check_broker above) rather than sleep until the deadline.
		 */
		(void) mq_notify_part_wait(a->topic_id, a->partition, seen,
								   Min(deadline, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 250)));
		CHECK_FOR_INTERRUPTS();
	}
}

/* replica.c's acks=all wait for records: the same loop */
void
mq_replica_await_records(const char *topic_name, int32 topic_id, int32 partition,
						 int32 epoch, int64 target, int32 min_isr, int timeout_ms)
{
	PendingAck	a = {topic_id, partition, epoch, target, -1, 0};

	replica_await(topic_name, &a, min_isr, timeout_ms);
}

static int32
topic_min_isr(int32 topic_id)
{
	static SPIPlanPtr plan = NULL;
	Datum		arg = Int32GetDatum(topic_id);
	Oid			argtype = INT4OID;
	int64		v = 1;

	(void) mq_spi_get_int64(&plan,
							"SELECT coalesce((config OPERATOR(pg_catalog.->>) 'min.insync.replicas')::bigint, 1) "
							"FROM mq.topic WHERE topic_id OPERATOR(pg_catalog.=) $1",
							1, &argtype, &arg, &v);
	return (int32) v;
}

/*
 * mq.await_commit(timeout_ms): wait until everything the session's last
 * committed transaction wrote to replicated partitions (records sent,
 * offsets committed) is on every in-sync replica.  Returns how many
 * partitions it waited for; the list is consumed either way.
 */
Datum
mq_await_commit(PG_FUNCTION_ARGS)
{
	int			timeout_ms = PG_ARGISNULL(0) ? 30000 : PG_GETARG_INT32(0);
	int			n = n_session_acks;
	PendingAck *acks = session_acks;

	session_acks = NULL;
	n_session_acks = 0;
	for (int i = 0; i < n; i++)
	{
		MqTopic    *topic = mq_topic_by_id(acks[i].topic_id, false);

		replica_await(topic->name, &acks[i], topic_min_isr(acks[i].topic_id), timeout_ms);
	}
	if (acks)
		pfree(acks);
	PG_RETURN_INT32(n);
}

/*
 * mq.txn_notes(): what this transaction wrote to replicated partitions so
 * far, as a jsonb array of {topic, partition, epoch, records_end,
 * offsets_version} (-1: none of that kind), one per partition.
 */
Datum
mq_txn_notes(PG_FUNCTION_ARGS)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < n_xact_acks; i++)
	{
		const PendingAck *a = &xact_acks[i];
		bool		merged = false;

		/* a subtransaction's note of the same partition is one entry */
		for (int j = 0; j < i; j++)
			merged |= xact_acks[j].topic_id == a->topic_id && xact_acks[j].partition == a->partition;
		if (merged)
			continue;
		if (buf.len > 1)
			appendStringInfoChar(&buf, ',');
		appendStringInfoString(&buf, "{\"topic\": ");
		escape_json(&buf, mq_topic_by_id(a->topic_id, false)->name);
		appendStringInfo(&buf, ", \"partition\": %d, \"epoch\": %d, \"records_end\": " INT64_FORMAT
						 ", \"offsets_version\": " INT64_FORMAT "}",
						 a->partition, a->leader_epoch, max_records_end(a), max_version(a));
	}
	appendStringInfoChar(&buf, ']');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/* A copy of this transaction's notes, in TopMemoryContext. */
static PendingAck *
copy_xact_acks(void)
{
	PendingAck *copy = MemoryContextAlloc(TopMemoryContext, sizeof(PendingAck) * n_xact_acks);

	memcpy(copy, xact_acks, sizeof(PendingAck) * n_xact_acks);
	return copy;
}

static void
set_session_acks(PendingAck *acks, int n)
{
	if (session_acks)
		pfree(session_acks);
	session_acks = acks;
	n_session_acks = n;
}

/* At PREPARE: keep the notes for the transaction's mq.txn_finish. */
static void
keep_prepared_notes(void)
{
	if (n_prepared == MAX_PREPARED_NOTES)
	{
		/* the oldest was most likely finished by another session */
		pfree(prepared[0].acks);
		memmove(&prepared[0], &prepared[1], sizeof(PreparedNotes) * (MAX_PREPARED_NOTES - 1));
		n_prepared--;
	}
	prepared[n_prepared].xid = preparing_xid;
	prepared[n_prepared].acks = copy_xact_acks();
	prepared[n_prepared].n = n_xact_acks;
	n_prepared++;
}

/*
 * twophase.c, once prepared transaction xid is finished: a commit makes its
 * notes (none when another session prepared it) the session's pending
 * acknowledgements, a rollback leaves nothing to wait for.
 */
void
mq_commit_wait_finished(TransactionId xid, bool commit)
{
	PendingAck *acks = NULL;
	int			n = 0;

	for (int i = 0; i < n_prepared; i++)
		if (TransactionIdEquals(prepared[i].xid, xid))
		{
			acks = prepared[i].acks;
			n = prepared[i].n;
			memmove(&prepared[i], &prepared[i + 1], sizeof(PreparedNotes) * (n_prepared - i - 1));
			n_prepared--;
			break;
		}
	if (!commit && acks)
	{
		pfree(acks);
		acks = NULL;
		n = 0;
	}
	set_session_acks(acks, n);
}

static void
commit_wait_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_PREPARE)
		preparing_xid = GetTopTransactionIdIfAny();
	if (event == XACT_EVENT_COMMIT && n_xact_acks > 0)
		set_session_acks(copy_xact_acks(), n_xact_acks);
	if (event == XACT_EVENT_PREPARE && n_xact_acks > 0 && TransactionIdIsValid(preparing_xid))
		keep_prepared_notes();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		n_xact_acks = 0;
		preparing_xid = InvalidTransactionId;
	}
}

static void
commit_wait_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

	for (int i = 0; i < n_xact_acks; i++)
	{
		if (xact_acks[i].nest_level < level)
			xact_acks[kept++] = xact_acks[i];
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			xact_acks[i].nest_level = level - 1;	/* the parent's now */
			xact_acks[kept++] = xact_acks[i];
		}
		/* SUBXACT_EVENT_ABORT_SUB: dropped */
	}
	if (event == SUBXACT_EVENT_COMMIT_SUB || event == SUBXACT_EVENT_ABORT_SUB)
		n_xact_acks = kept;
}

void
mq_commit_wait_init(void)
{
	RegisterXactCallback(commit_wait_xact_callback, NULL);
	RegisterSubXactCallback(commit_wait_subxact_callback, NULL);
}
