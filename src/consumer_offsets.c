/*-------------------------------------------------------------------------
 *
 * consumer_offsets.c
 *	  The __consumer_offsets topic: every offset commit (mq.commit_offset,
 *	  mq.commit_polled, auto-commit polls, and so mq-kafka's OffsetCommit)
 *	  appended as a record in Kafka's own key/value format, so that Kafka
 *	  tools that read the topic (Burrow, kafka-consumer-groups' offsets
 *	  formatter) see mq's groups.
 *
 * The topic is an ordinary mq topic (cleanup.policy compact) that
 * mq.ensure_consumer_offsets (src/sql/53_consumer_offsets.sql) creates on
 * first need; until it exists commits append nothing.  The record of a
 * commit is appended in the committing transaction through mq's produce
 * path, so its offset is gapless and visible exactly when the commit is
 * (docs/design.md, "__consumer_offsets").  Key: OffsetCommitKey version 1
 * (group, topic, partition); value: OffsetCommitValue version 3 (offset,
 * leader epoch -1, metadata, commit timestamp); a null value (tombstone)
 * when mq.delete_group forgets the offset.  mq-kafka's groups add their
 * metadata (GroupMetadataKey version 2, the GroupMetadataValue mq-kafka
 * encodes) with each save of their state, and SQL groups theirs with each
 * new generation (55_consumer_offsets.sql encodes it).  The partition is
 * Kafka's: abs(Java hashCode of the group id) modulo the topic's
 * partition count.  On a node of a replicated cluster (one with an
 * attached broker) the topic is not replicated: each node appends the
 * commits it takes to two partitions of its own, broker id * 2 + the
 * group's hash modulo 2, and every node's mq-kafka serves its own two as
 * their leader (docs/design.md, "__consumer_offsets in a cluster").
 *
 * Only this file appends to the topic: every produce to it (produce.c) is
 * refused (MQ070, Kafka's INVALID_TOPIC_EXCEPTION).
 *
 * Lock order (this file owns it).  Appending takes the __consumer_offsets
 * partition's produce lock until the transaction ends (log.c).  Taken at
 * each commit, in the middle of a transaction, that lock made deadlocks
 * out of ordinary patterns: T1 produces to topic X, then commits an
 * offset (waiting for T2's lock of __consumer_offsets partition 0), while
 * T2 committed first and now produces to X (waiting for T1); or two
 * members of one group commit partitions 0 and 1 in opposite orders, each
 * waiting for the other's offset row with the lock in hand
 * (test/isolation/specs/consumer-offsets-lock-order.spec).  So a commit
 * only queues its record, and the transaction appends its queue at
 * pre-commit (and before PREPARE), after everything else it did, grouped
 * by partition in ascending order: the __consumer_offsets produce locks
 * are the last locks any transaction takes, so one waiting for them holds
 * none that their holder, itself at pre-commit, could need.  Records of a
 * rolled-back subtransaction leave the queue.  Visibility is unchanged:
 * the records are in the topic exactly when the commit is.  The
 * callbacks are registered after notify.c's and produce_lock.c's (mq.c),
 * so they run before those at pre-commit (PostgreSQL calls the last
 * registered first): notify.c counts the topics the commit touched and
 * produce_lock.c looks at the produce locks held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_consumer_offsets_append);
PG_FUNCTION_INFO_V1(mq_consumer_offsets_flush);

/* Kafka's GroupMetadataManager formats */
#define OFFSET_KEY_VERSION		1
#define OFFSET_VALUE_VERSION	3
#define GROUP_KEY_VERSION		2

static void
put_i16(StringInfo s, int16 v)
{
	uint16		u = pg_hton16((uint16) v);

	appendBinaryStringInfo(s, (char *) &u, 2);
}

static void
put_i32(StringInfo s, int32 v)
{
	uint32		u = pg_hton32((uint32) v);

	appendBinaryStringInfo(s, (char *) &u, 4);
}

static void
put_i64(StringInfo s, int64 v)
{
	uint64		u = pg_hton64((uint64) v);

	appendBinaryStringInfo(s, (char *) &u, 8);
}

/* Kafka's STRING: int16 length, then UTF-8 bytes */
static void
put_str(StringInfo s, const char *p, int len)
{
	if (len > PG_INT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("a string of %d bytes does not fit a __consumer_offsets record", len)));
	put_i16(s, (int16) len);
	appendBinaryStringInfo(s, p, len);
}

static bytea *
to_bytea(StringInfo s)
{
	bytea	   *b = palloc(VARHDRSZ + s->len);

	SET_VARSIZE(b, VARHDRSZ + s->len);
	memcpy(VARDATA(b), s->data, s->len);
	return b;
}

/*
 * Java's String.hashCode of a UTF-8 string: 31*h + c over its UTF-16
 * code units (a character above U+FFFF counts as its surrogate pair).
 */
static int32
java_string_hash(const char *p, int len)
{
	uint32		h = 0;
	const unsigned char *s = (const unsigned char *) p;
	const unsigned char *end = s + len;

	while (s < end)
	{
		int			n = pg_utf_mblen(s);
		pg_wchar	c = (s + n <= end) ? utf8_to_unicode(s) : *s;

		if (c > 0xFFFF)
		{
			c -= 0x10000;
			h = 31 * h + (0xD800 + (c >> 10));
			h = 31 * h + (0xDC00 + (c & 0x3FF));
		}
		else
			h = 31 * h + c;
		s += Max(n, 1);
	}
	return (int32) h;
}

/* Kafka's partitionFor: Utils.abs(groupId.hashCode) % partitions */
int32
mq_consumer_offsets_partition(const char *group, int len, int32 npartitions)
{
	int32		h = java_string_hash(group, len);

	h = (h == PG_INT32_MIN) ? 0 : Abs(h);
	return h % npartitions;
}

/*
 * Refuse a produce to __consumer_offsets (produce.c asks before any other
 * check of the records; this file appends through log.c directly).
 */
void
mq_consumer_offsets_check_write(const char *topic_name)
{
	if (strcmp(topic_name, MQ_CONSUMER_OFFSETS) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INTERNAL_TOPIC),
				 errmsg("cannot write to internal topic \"%s\"", topic_name),
				 errhint("Offset commits (mq.commit_offset, Kafka's OffsetCommit) append to it.")));
}

/*
 * A record the transaction will append at pre-commit: in
 * TopTransactionContext, with the subtransaction that made it.
 */
typedef struct PendingRecord
{
	char	   *group;			/* chooses the partition */
	int			glen;
	bytea	   *key;
	bytea	   *value;			/* NULL: a tombstone */
	SubTransactionId subid;
	int			seq;			/* order of making, kept within a partition */
	int32		partition;		/* set when appending */
} PendingRecord;

static List *pending = NIL;
static int	pending_seq = 0;

/* Does the topic exist now (a fresh snapshot: it may have been created while we waited)? */
static MqTopic *
find_topic(void)
{
	MqTopic    *topic;

	PushActiveSnapshot(GetLatestSnapshot());
	topic = mq_topic_lookup(MQ_CONSUMER_OFFSETS, true);
	PopActiveSnapshot();
	return topic;
}

/*
 * Queue one record for the group's partition (see Lock order above), if
 * the topic exists: a commit made before it does is among the records its
 * creator writes first (mq.ensure_consumer_offsets), this transaction's
 * own commits included.
 */
static void
append_record(const char *group, int glen, bytea *key, bytea *value)
{
	MemoryContext old;
	PendingRecord *r;

	if (find_topic() == NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	r = palloc(sizeof(PendingRecord));

	r->group = pnstrdup(group, glen);
	r->glen = glen;
	r->key = (bytea *) PG_DETOAST_DATUM_COPY(PointerGetDatum(key));
	r->value = value ? (bytea *) PG_DETOAST_DATUM_COPY(PointerGetDatum(value)) : NULL;
	r->subid = GetCurrentSubTransactionId();
	r->seq = pending_seq++;
	r->partition = 0;
	pending = lappend(pending, r);
	MemoryContextSwitchTo(old);
}

static int
pending_cmp(const ListCell *a, const ListCell *b)
{
	const PendingRecord *x = lfirst(a);
	const PendingRecord *y = lfirst(b);

	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* the broker attached to this node (mq.replica_broker), or -1: none */
static int32
attached_broker(void)
{
	static SPIPlanPtr plan = NULL;
	int64		id = -1;

	if (!mq_spi_get_int64(&plan, "SELECT broker_id::bigint FROM mq.replica_broker", 0, NULL, NULL, &id))
		return -1;
	return (int32) id;
}

/*
 * The partition of the group's records: Kafka's for the group on a node
 * of its own; on a node with an attached broker, one of the two of its
 * broker id (id * 2 + the group's hash modulo 2), or -1 when the topic
 * does not have them yet (mq.ensure_consumer_offsets adds them).
 */
static int32
record_partition(const char *group, int glen, MqTopic *topic, int32 broker)
{
	int32		p;

	if (broker < 0)
		return mq_consumer_offsets_partition(group, glen, topic->npartitions);
	if (broker > (PG_INT32_MAX - MQ_CO_NODE_PARTITIONS) / MQ_CO_NODE_PARTITIONS)
		return -1;
	p = broker * MQ_CO_NODE_PARTITIONS +
		mq_consumer_offsets_partition(group, glen, MQ_CO_NODE_PARTITIONS);
	return p < topic->npartitions ? p : -1;
}

/*
 * Append the queue, partition by partition in ascending order, each
 * partition's records in the order they were made.  Returns the number of
 * records appended.
 */
static int
flush_pending(void)
{
	List	   *recs = pending;
	MqTopic    *topic;
	MqRecordIn *in;
	ListCell   *lc;
	int			n = 0;
	int32		broker;

	pending = NIL;
	if (recs == NIL)
		return 0;
	topic = find_topic();
	if (topic == NULL)
		return 0;				/* dropped since */
	broker = attached_broker();
	foreach(lc, recs)
	{
		PendingRecord *r = lfirst(lc);

		r->partition = record_partition(r->group, r->glen, topic, broker);
		if (r->partition < 0)
			recs = foreach_delete_current(recs, lc);	/* none of its own yet */
	}
	if (recs == NIL)
		return 0;
	list_sort(recs, pending_cmp);
	in = palloc0(sizeof(MqRecordIn) * list_length(recs));
	PushActiveSnapshot(GetTransactionSnapshot());
	for (int i = 0; i < list_length(recs); i += n)
	{
		int32		p = ((PendingRecord *) list_nth(recs, i))->partition;

		for (n = 0; i + n < list_length(recs); n++)
		{
			PendingRecord *r = list_nth(recs, i + n);

			if (r->partition != p)
				break;
			in[n].key = r->key;
			in[n].value = r->value;
			in[n].partition = p;
		}
		(void) mq_log_append(MQ_CONSUMER_OFFSETS, p, in, n, NULL);
	}
	PopActiveSnapshot();
	return list_length(recs);
}

static void
co_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			(void) flush_pending();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			pending = NIL;		/* its memory went with the transaction */
			pending_seq = 0;
			break;
		default:
			break;
	}
}

/* A subtransaction's records go with its abort, or to its parent. */
static void
co_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	foreach(lc, pending)
	{
		PendingRecord *r = lfirst(lc);

		if (r->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			pending = foreach_delete_current(pending, lc);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			r->subid = parentSubid;
	}
}

void
mq_consumer_offsets_init(void)
{
	RegisterXactCallback(co_xact_callback, NULL);
	RegisterSubXactCallback(co_subxact_callback, NULL);
}

/*
 * mq._consumer_offsets_flush(): append the transaction's queued records
 * now rather than at its commit, so that it reads them back itself (the
 * tests); it then holds the produce locks for the rest of the transaction,
 * out of the lock order above.  Returns the number appended.
 */
Datum
mq_consumer_offsets_flush(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(flush_pending());
}

/*
 * Record a commit of next (or, with next < 0, its deletion: a tombstone)
 * by group for topic_name's partition, with its metadata (NULL: none),
 * made at the given time.
 */
void
mq_consumer_offsets_note(text *group, const char *topic_name, int32 partition,
						 int64 next, text *metadata, TimestampTz at)
{
	StringInfoData k;
	StringInfoData v;
	const char *g = VARDATA_ANY(group);
	int			glen = VARSIZE_ANY_EXHDR(group);
	int64		at_ms = at / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;

	initStringInfo(&k);
	put_i16(&k, OFFSET_KEY_VERSION);
	put_str(&k, g, glen);
	put_str(&k, topic_name, strlen(topic_name));
	put_i32(&k, partition);
	if (next < 0)
	{
		append_record(g, glen, to_bytea(&k), NULL);
		return;
	}
	initStringInfo(&v);
	put_i16(&v, OFFSET_VALUE_VERSION);
	put_i64(&v, next);
	put_i32(&v, -1);			/* leader epoch: not known to mq's commits */
	if (metadata != NULL)
		put_str(&v, VARDATA_ANY(metadata), VARSIZE_ANY_EXHDR(metadata));
	else
		put_str(&v, "", 0);
	put_i64(&v, at_ms);
	append_record(g, glen, to_bytea(&k), to_bytea(&v));
}

/*
 * Append a group's metadata record: GroupMetadataKey version 2 (the
 * group) and the GroupMetadataValue mq-kafka encoded (NULL: the group is
 * gone, a tombstone).
 */
static void
note_group(text *group, bytea *value)
{
	StringInfoData k;

	if (value != NULL)
		mq_check_group_value(value);
	initStringInfo(&k);
	put_i16(&k, GROUP_KEY_VERSION);
	put_str(&k, VARDATA_ANY(group), VARSIZE_ANY_EXHDR(group));
	append_record(VARDATA_ANY(group), VARSIZE_ANY_EXHDR(group), to_bytea(&k), value);
}

/*
 * mq._consumer_offsets_append(group_id, topic, partition, next_offset,
 * metadata, group_value, committed_at): the record of a commit
 * (next_offset NULL: a tombstone; committed_at NULL: now); with topic NULL, the group's metadata record, group_value
 * being its GroupMetadataValue (NULL: a tombstone).  For the backfill when
 * the topic is created, mq.delete_group and mq.kafka_group_save.
 */
Datum
mq_consumer_offsets_append(PG_FUNCTION_ARGS)
{
	text	   *group;

	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	group = PG_GETARG_TEXT_PP(0);
	if (PG_ARGISNULL(1))
		note_group(group, PG_ARGISNULL(5) ? NULL : PG_GETARG_BYTEA_P(5));
	else
		mq_consumer_offsets_note(group, text_to_cstring(PG_GETARG_TEXT_PP(1)),
								 PG_GETARG_INT32(2),
								 PG_ARGISNULL(3) ? -1 : PG_GETARG_INT64(3),
								 PG_ARGISNULL(4) ? NULL : PG_GETARG_TEXT_PP(4),
								 PG_ARGISNULL(6) ? GetCurrentTimestamp() : PG_GETARG_TIMESTAMPTZ(6));
	PG_RETURN_VOID();
}
