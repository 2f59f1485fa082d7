/*-------------------------------------------------------------------------
 *
 * replica_fetch_cache.c
 *	  What a fetch session's backend on the leader remembers between its
 *	  follower's fetches (mq.replica_fetch_many, src/sql/60_replica_fetch.sql):
 *	  for each partition found idle, the partition's change counter
 *	  (notify.c) read before that look, the fetch offset looked at, and
 *	  what the look found (offsets version, when its progress was last
 *	  recorded).  While the counter has not moved, nothing that a
 *	  look reads has changed (records, high watermark, offsets, roles and
 *	  epochs all move it), so the next fetch at the same offset takes the
 *	  remembered answer instead of looking: a fetch of 256 partitions
 *	  looks only at those that changed, not at all 256 for every record.
 *
 * mq._replica_fetch_recall reads each counter first, then the entry; an
 * entry is used only if its counter and offset are the ones read now.  It
 * is used when the partition's progress is due too (recorded_at plus the
 * fetch's wait, which mq.replica_fetch_many adds): mq.replica_fetch_many
 * records that progress with mq._replica_fetch_refresh, which checks again
 * what it relies on (epoch, log end, high watermark, the follower's
 * progress) and leaves a partition that changed to a full fetch.  So an
 * idle follower's partitions cost no look once remembered; before, each
 * was looked at again every wait (docs/benchmarks.md, "Idle fetch
 * sessions without looks").  mq._replica_fetch_remember stores what the
 * looks found for the idle partitions with the counters read before them,
 * and forgets the others.  A hashed slot shared with another partition
 * moves the counter too: one more look, never one missed.
 * mq._replica_fetch_restamp moves the recorded time of the partitions
 * whose progress the fetch recorded without a look
 * (mq._replica_fetch_refresh), which moves no counter.  Without shared
 * memory the counters never move, and nothing is remembered.
 *
 * Locking: none; backend-local memory (TopMemoryContext), one per
 * backend, keyed by follower, topic id and partition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_replica_fetch_recall);
PG_FUNCTION_INFO_V1(mq_replica_fetch_remember);
PG_FUNCTION_INFO_V1(mq_replica_fetch_restamp);
PG_FUNCTION_INFO_V1(mq_replica_fetch_forget);

typedef struct CacheKey
{
	int32		replica_id;
	int32		topic_id;
	int32		partition;
} CacheKey;

typedef struct CacheEntry
{
	CacheKey	key;
	uint64		counter;
	int64		fetch_offset;
	int32		leader_epoch;	/* the follower's, as it asked */
	int64		asked_version;	/* the offsets version it asked with */
	int64		offsets_version;
	TimestampTz recorded_at;	/* the follower's progress last recorded */
} CacheEntry;

static HTAB *cache = NULL;

static HTAB *
get_cache(void)
{
	HASHCTL		ctl;

	if (cache)
		return cache;
	ctl.keysize = sizeof(CacheKey);
	ctl.entrysize = sizeof(CacheEntry);
	cache = hash_create("mq replica fetch cache", 256, &ctl, HASH_ELEM | HASH_BLOBS);
	return cache;
}

/*
 * mq._replica_fetch_recall(replica_id, topics, partitions, leader_epochs,
 * fetch_offsets, offsets_versions): per partition its topic id (NULL: no
 * such topic), its change counter, and whether it is known idle (asked
 * the same way as at the look; then its remembered offsets version and
 * when its progress was recorded).
 */
Datum
mq_replica_fetch_recall(PG_FUNCTION_ARGS)
{
	int32		replica_id = PG_GETARG_INT32(0);
	bool	   *tn,
			   *pn,
			   *on;
	int			n,
				n2,
				n3;
	bool	   *en,
			   *vn;
	int			n4,
				n5;
	Datum	   *topics = mq_array_elems(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, &tn, &n);
	Datum	   *parts = mq_array_elems(PG_GETARG_ARRAYTYPE_P(2), INT4OID, &pn, &n2);
	Datum	   *epochs = mq_array_elems(PG_GETARG_ARRAYTYPE_P(3), INT4OID, &en, &n4);
	Datum	   *offsets = mq_array_elems(PG_GETARG_ARRAYTYPE_P(4), INT8OID, &on, &n3);
	Datum	   *versions = mq_array_elems(PG_GETARG_ARRAYTYPE_P(5), INT8OID, &vn, &n5);
	Datum	   *out[5];
	bool	   *nulls[5];
	Datum		values[5];
	bool		vnulls[5] = {false};
	static const Oid types[5] = {INT4OID, INT8OID, BOOLOID, INT8OID, TIMESTAMPTZOID};
	TupleDesc	desc;

	if (n2 != n || n3 != n || n4 != n || n5 != n)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("the arrays of _replica_fetch_recall must have one length")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mq: _replica_fetch_recall must return a record");
	for (int c = 0; c < 5; c++)
	{
		out[c] = palloc0(sizeof(Datum) * Max(n, 1));
		nulls[c] = palloc(sizeof(bool) * Max(n, 1));
		memset(nulls[c], true, sizeof(bool) * Max(n, 1));
	}
	for (int i = 0; i < n; i++)
	{
		MqTopic    *t = tn[i] ? NULL : mq_topic_lookup(TextDatumGetCString(topics[i]), true);
		CacheKey	key = {replica_id, t ? t->topic_id : 0, pn[i] ? -1 : DatumGetInt32(parts[i])};
		CacheEntry *e;
		uint64		counter;

		out[2][i] = BoolGetDatum(false);
		nulls[2][i] = false;
		if (t == NULL || pn[i] || on[i] || en[i] || vn[i])
			continue;
		counter = mq_notify_part_counter(t->topic_id, key.partition);
		out[0][i] = Int32GetDatum(t->topic_id);
		out[1][i] = Int64GetDatum((int64) counter);
		nulls[0][i] = nulls[1][i] = false;
		e = mq_notify_watchable() ? hash_search(get_cache(), &key, HASH_FIND, NULL) : NULL;
		if (e == NULL || e->counter != counter || e->fetch_offset != DatumGetInt64(offsets[i]) ||
			e->leader_epoch != DatumGetInt32(epochs[i]) || e->asked_version != DatumGetInt64(versions[i]))
			continue;
		out[2][i] = BoolGetDatum(true);
		out[3][i] = Int64GetDatum(e->offsets_version);
		out[4][i] = TimestampTzGetDatum(e->recorded_at);
		nulls[3][i] = nulls[4][i] = false;
	}
	for (int c = 0; c < 5; c++)
		values[c] = mq_array_of(out[c], nulls[c], n, types[c]);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, vnulls)));
}

/*
 * mq._replica_fetch_remember(replica_id, topic_ids, partitions,
 * leader_epochs, fetch_offsets, asked_versions, counters, idle,
 * offsets_versions, recorded_at): remember the idle partitions' looks, with how
 * they were asked and the counters read before them; forget the others.
 * Elements with a null id, counter or question are skipped.
 */
Datum
mq_replica_fetch_remember(PG_FUNCTION_ARGS)
{
	int32		replica_id = PG_GETARG_INT32(0);
	bool	   *nl[9];
	int			n[9];
	static const Oid types[9] = {INT4OID, INT4OID, INT4OID, INT8OID, INT8OID, INT8OID, BOOLOID,
				INT8OID, TIMESTAMPTZOID};
	Datum	   *a[9];

	for (int c = 0; c < 9; c++)
	{
		a[c] = mq_array_elems(PG_GETARG_ARRAYTYPE_P(c + 1), types[c], &nl[c], &n[c]);
		if (n[c] != n[0])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("the arrays of _replica_fetch_remember must have one length")));
	}
	if (!mq_notify_watchable())
		PG_RETURN_VOID();
	for (int i = 0; i < n[0]; i++)
	{
		CacheKey	key;
		CacheEntry *e;
		bool		idle = !nl[6][i] && DatumGetBool(a[6][i]) && !nl[7][i] && !nl[8][i];

		if (nl[0][i] || nl[1][i] || nl[2][i] || nl[3][i] || nl[4][i] || nl[5][i])
			continue;
		key.replica_id = replica_id;
		key.topic_id = DatumGetInt32(a[0][i]);
		key.partition = DatumGetInt32(a[1][i]);
		if (!idle)
		{
			(void) hash_search(get_cache(), &key, HASH_REMOVE, NULL);
			continue;
		}
		e = hash_search(get_cache(), &key, HASH_ENTER, NULL);
		e->leader_epoch = DatumGetInt32(a[2][i]);
		e->fetch_offset = DatumGetInt64(a[3][i]);
		e->asked_version = DatumGetInt64(a[4][i]);
		e->counter = (uint64) DatumGetInt64(a[5][i]);
		e->offsets_version = DatumGetInt64(a[7][i]);
		e->recorded_at = DatumGetTimestampTz(a[8][i]);
	}
	PG_RETURN_VOID();
}

/*
 * The entry of each of these partitions of replica_id, or NULL; a
 * topic_ids or partitions array of another length is refused as what.
 */
static CacheEntry **
find_entries(int32 replica_id, ArrayType *topic_ids, ArrayType *partitions, const char *what, int *n)
{
	bool	   *in,
			   *pn;
	int			n2;
	Datum	   *ids = mq_array_elems(topic_ids, INT4OID, &in, n);
	Datum	   *parts = mq_array_elems(partitions, INT4OID, &pn, &n2);
	CacheEntry **out = palloc0(sizeof(CacheEntry *) * Max(*n, 1));

	if (n2 != *n)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("the arrays of %s must have one length", what)));
	for (int i = 0; i < *n && cache != NULL; i++)
	{
		CacheKey	key = {replica_id, in[i] ? 0 : DatumGetInt32(ids[i]), pn[i] ? -1 : DatumGetInt32(parts[i])};

		out[i] = hash_search(cache, &key, HASH_FIND, NULL);
	}
	return out;
}

/*
 * mq._replica_fetch_restamp(replica_id, topic_ids, partitions, recorded_at):
 * the remembered partitions among these had their progress recorded then.
 */
Datum
mq_replica_fetch_restamp(PG_FUNCTION_ARGS)
{
	int			n;
	CacheEntry **e = find_entries(PG_GETARG_INT32(0), PG_GETARG_ARRAYTYPE_P(1),
								  PG_GETARG_ARRAYTYPE_P(2), "_replica_fetch_restamp", &n);

	for (int i = 0; i < n; i++)
		if (e[i])
			e[i]->recorded_at = PG_GETARG_TIMESTAMPTZ(3);
	PG_RETURN_VOID();
}

/*
 * mq._replica_fetch_forget(replica_id, topic_ids, partitions): these
 * partitions are looked at again at the next fetch.  For the remembered
 * idle ones whose progress the refresh could not record (the high
 * watermark below the follower's log end while another follower lags, or
 * a change under the lock) and a full fetch recorded instead: their
 * remembered time is the old one, and taken as due again they would be
 * fetched in full at every call, without a wait.
 */
Datum
mq_replica_fetch_forget(PG_FUNCTION_ARGS)
{
	int			n;
	CacheEntry **e = find_entries(PG_GETARG_INT32(0), PG_GETARG_ARRAYTYPE_P(1),
								  PG_GETARG_ARRAYTYPE_P(2), "_replica_fetch_forget", &n);

	for (int i = 0; i < n; i++)
		if (e[i])
			(void) hash_search(cache, &e[i]->key, HASH_REMOVE, NULL);
	PG_RETURN_VOID();
}
