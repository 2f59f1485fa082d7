/*-------------------------------------------------------------------------
 *
 * topic.c
 *	  The per-backend cache of topic structure: ids, partition count and
 *	  each partition's segments (offset range, table, index).
 *
 * The hot paths must not query the catalog on every call, so they read
 * this cache.  It holds only what changes through DDL: creating or
 * dropping a segment invalidates the partition table's relcache entry,
 * creating a partition invalidates the topic table's, and alter_topic
 * sends an invalidation itself (mq._invalidate, at the end of this
 * file).  A relcache callback on any of those relations marks the whole
 * cache stale, and so does any invalidation while a topic is being read
 * (its snapshot may predate a commit that came during a lock wait); the
 * next lookup rebuilds it.
 * Values that change without DDL (high watermark, log start) are read
 * from the catalog where they are needed; a compaction pass, and a
 * follower's copy of a leader's gaps, send an invalidation for the
 * cleaner point (readers' gap bound) they move.
 *
 * A stale cache is not freed at once: callers may still hold pointers
 * into it, so its memory is handed to the current transaction and goes
 * away when that ends.
 *
 * A segment's index OID is only a hint: REINDEX CONCURRENTLY replaces an
 * index with a new one under the same name and drops the old one, and it
 * invalidates the segment's table, which the cache does not watch (it
 * would be rebuilt whenever any segment is vacuumed).  So whoever scans a
 * segment opens and locks its table first, which brings the relcache up to
 * date, and takes the index from the table's current index list
 * (mq_segment_index_open).  Table OIDs survive VACUUM FULL, CLUSTER and
 * REINDEX; only DDL of mq's own (watched above) changes them.
 *
 * A segment the cache lists may be gone when it is locked (a maintenance
 * pass dropped it meanwhile): the reader resets the cache and reads the
 * catalog again, as mq._log_end_offset (log_end.c) and the produce path
 * (log.c, append_log_end) do; one still missing then was dropped behind
 * mq's back, MQ074 (mq_segment_open).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_invalidate);

static MemoryContext cache_cxt = NULL;
static HTAB *topic_cache = NULL;	/* name -> MqTopic */
static HTAB *watched_rels = NULL;	/* relids whose invalidation matters */
static bool cache_stale = false;
static bool loading = false;	/* load_topic is reading the catalog */

/*
 * While a topic is being read, any invalidation makes the cache stale: the
 * read's snapshot was taken before its locks, and a commit (a segment
 * made) that came during a wait for one (VACUUM FULL or CLUSTER of
 * mq.partition_state, say) is not in it, while its invalidation, for a
 * table not watched yet, would otherwise be dropped.
 */
static void
mq_relcache_callback(Datum arg, Oid relid)
{
	if (topic_cache == NULL || cache_stale)
		return;
	if (loading || !OidIsValid(relid) ||
		hash_search(watched_rels, &relid, HASH_FIND, NULL) != NULL)
		cache_stale = true;
}

void
mq_topic_cache_init(void)
{
	CacheRegisterRelcacheCallback(mq_relcache_callback, (Datum) 0);
}

void
mq_topic_cache_reset(void)
{
	cache_stale = true;
}

/* Drop a stale cache (into the transaction's memory) and start afresh. */
static void
ensure_cache(void)
{
	HASHCTL		ctl;

	if (topic_cache != NULL && !cache_stale)
		return;

	if (cache_cxt != NULL)
	{
		if (IsTransactionState())
			MemoryContextSetParent(cache_cxt, CurTransactionContext);
		else
			MemoryContextDelete(cache_cxt);
	}
	cache_cxt = AllocSetContextCreate(CacheMemoryContext, "mq topic cache",
									  ALLOCSET_SMALL_SIZES);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(((MqTopic *) 0)->name);
	ctl.entrysize = sizeof(MqTopic);
	ctl.hcxt = cache_cxt;
	topic_cache = hash_create("mq topics", 16, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(Oid);
	ctl.hcxt = cache_cxt;
	watched_rels = hash_create("mq watched relations", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	cache_stale = false;
}

static void
watch(Oid relid)
{
	hash_search(watched_rels, &relid, HASH_ENTER, NULL);
}

static int64
spi_int64(int row, int col, bool *isnull)
{
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[row],
									   SPI_tuptable->tupdesc, col, isnull));
}

/* The topic's row of mq.topic, with the config keys the C code uses. */
static bool
read_topic_row(MqTopic *t, const char *name)
{
	Datum		arg[1] = {CStringGetTextDatum(name)};
	Oid			argtype[1] = {TEXTOID};
	bool		isnull;
	int			ret;

	ret = SPI_execute_with_args("SELECT topic_id, relid::oid, partitions, "
								"       (config OPERATOR(pg_catalog.->>) 'max.message.bytes')::pg_catalog.int8, "
								"       (config OPERATOR(pg_catalog.->>) 'message.timestamp.type') "
								"         IS NOT DISTINCT FROM 'LogAppendTime', "
								"       coalesce(NULLIF((config OPERATOR(pg_catalog.->>) "
								"           'message.timestamp.before.max.ms')::pg_catalog.int8, 9223372036854775807), "
								"         (config OPERATOR(pg_catalog.->>) 'message.timestamp.difference.max.ms')::pg_catalog.int8), "
								"       coalesce(config OPERATOR(pg_catalog.->>) 'cleanup.policy', 'delete') "
								"         OPERATOR(pg_catalog.<>) 'delete', "
								"       coalesce(NULLIF((config OPERATOR(pg_catalog.->>) "
								"           'message.timestamp.after.max.ms')::pg_catalog.int8, 9223372036854775807), "
								"         (config OPERATOR(pg_catalog.->>) 'message.timestamp.difference.max.ms')::pg_catalog.int8) "
								"  FROM mq.topic WHERE topic_name = $1",
								1, argtype, arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "mq: topic lookup failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	t->topic_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	t->relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	t->npartitions = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	t->max_message_bytes = spi_int64(0, 4, &isnull);
	if (isnull)
		t->max_message_bytes = -1;
	t->log_append_time = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5, &isnull));
	/* Kafka 3.6+: each side falls back to the difference when not set */
	t->timestamp_before_ms = spi_int64(0, 6, &isnull);
	if (isnull)
		t->timestamp_before_ms = -1;
	t->compacted = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 7, &isnull));
	t->timestamp_after_ms = spi_int64(0, 8, &isnull);
	if (isnull)
		t->timestamp_after_ms = -1;
	return true;
}

/* Read a topic's structure from the catalog into a cache entry. */
static bool
load_topic(MqTopic *t, const char *name)
{
	Datum		arg[1];
	Oid			argtype[1] = {TEXTOID};
	bool		isnull;
	uint64		n;
	int			ret;
	MqSpiSave	spi;

	/*
	 * Read the newest committed structure (and our own changes), not the
	 * transaction's snapshot: under REPEATABLE READ that would miss segments
	 * that maintenance created since the transaction began.
	 */
	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (!read_topic_row(t, name))
	{
		mq_spi_end(&spi);
		PopActiveSnapshot();
		return false;
	}
	watch(t->relid);

	t->parts = MemoryContextAllocZero(cache_cxt, sizeof(MqPartition) * t->npartitions);
	for (int p = 0; p < t->npartitions; p++)
		t->parts[p].partition = p;

	argtype[0] = INT4OID;
	arg[0] = Int32GetDatum(t->topic_id);
	ret = SPI_execute_with_args("SELECT p.partition, p.relid::oid, p.log_start_offset, "
								"       p.high_watermark IS NOT NULL, "
								"       (SELECT pg_catalog.max(c.clean_end) FROM mq.cleaner_pass c "
								"         WHERE c.topic_id = p.topic_id AND c.partition = p.partition) "
								"  FROM mq.partition_state p WHERE p.topic_id = $1",
								1, argtype, arg, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "mq: partition lookup failed: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int32		p = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));

		if (p < 0 || p >= t->npartitions)
			continue;			/* being added by an uncommitted add_partitions */
		watch(DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull)));
		t->parts[p].log_start = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		t->parts[p].replicated = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		t->parts[p].cleaner_point = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		if (isnull)
			t->parts[p].cleaner_point = 0;
	}

	ret = SPI_execute_with_args("SELECT s.partition, s.base_offset, s.end_offset, s.relid::oid, "
								"       (SELECT i.indexrelid FROM pg_catalog.pg_index i "
								"         WHERE i.indrelid = s.relid AND i.indisunique "
								"           AND i.indkey = '2'::pg_catalog.int2vector LIMIT 1) "
								"  FROM mq.segment s WHERE s.topic_id = $1 "
								" ORDER BY s.partition, s.base_offset",
								1, argtype, arg, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "mq: segment lookup failed: %s", SPI_result_code_string(ret));
	n = SPI_processed;
	for (uint64 i = 0; i < n;)
	{
		int32		p = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		uint64		j = i;
		MqPartition *part;

		while (j < n && DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[j], SPI_tuptable->tupdesc, 1, &isnull)) == p)
			j++;
		if (p >= 0 && p < t->npartitions)
		{
			part = &t->parts[p];
			part->nsegs = (int) (j - i);
			part->segs = MemoryContextAlloc(cache_cxt, sizeof(MqSegment) * part->nsegs);
			for (uint64 k = i; k < j; k++)
			{
				MqSegment  *seg = &part->segs[k - i];

				seg->base = spi_int64(k, 2, &isnull);
				seg->end = spi_int64(k, 3, &isnull);
				seg->relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 4, &isnull));
				seg->indexid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 5, &isnull));
				if (isnull)
					seg->indexid = InvalidOid;
			}
		}
		i = j;
	}
	mq_spi_end(&spi);
	PopActiveSnapshot();
	return true;
}

MqTopic *
mq_topic_lookup(const char *name, bool missing_ok)
{
	MqTopic    *t;
	bool		found;
	char		key[sizeof(((MqTopic *) 0)->name)];

	if (strlen(name) >= sizeof(key))
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_TOPIC),
				 errmsg("topic \"%.60s...\" does not exist", name)));
	}
	memset(key, 0, sizeof(key));
	strlcpy(key, name, sizeof(key));

	ensure_cache();
	t = hash_search(topic_cache, key, HASH_FIND, &found);
	if (found)
		return t;

	t = hash_search(topic_cache, key, HASH_ENTER, &found);
	loading = true;
	PG_TRY();
	{
		found = load_topic(t, name);
	}
	PG_CATCH();
	{
		loading = false;
		cache_stale = true;
		PG_RE_THROW();
	}
	PG_END_TRY();
	loading = false;

	if (!found)
	{
		/* a stale flag set while loading may have replaced the table */
		if (!cache_stale)
			hash_search(topic_cache, key, HASH_REMOVE, NULL);
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_TOPIC),
				 errmsg("topic \"%s\" does not exist", name),
				 errhint("Create it with mq.create_topic(), or list topics in the view mq.topics.")));
	}
	return t;
}

MqTopic *
mq_topic_lookup_text(text *name)
{
	return mq_topic_lookup(text_to_cstring(name), false);
}

MqTopic *
mq_topic_by_id(int32 topic_id, bool missing_ok)
{
	static SPIPlanPtr plan = NULL;	/* on every log end and acks=all wait */
	Datum		arg[1] = {Int32GetDatum(topic_id)};
	Oid			argtype[1] = {INT4OID};
	char	   *name = NULL;
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	if (plan == NULL)
		plan = mq_spi_prepare("SELECT topic_name FROM mq.topic"
							  " WHERE topic_id OPERATOR(pg_catalog.=) $1", 1, argtype);
	if (SPI_execute_plan(plan, arg, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		name = MemoryContextStrdup(CurTransactionContext,
								   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	mq_spi_end(&spi);
	if (name == NULL && missing_ok)
		return NULL;
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_TOPIC),
				 errmsg("topic with id %d does not exist", topic_id)));
	return mq_topic_lookup(name, missing_ok);
}

MqPartition *
mq_topic_partition(MqTopic *topic, int32 partition)
{
	if (partition < 0 || partition >= topic->npartitions)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_UNKNOWN_PARTITION),
				 errmsg("partition %d of topic \"%s\" does not exist", partition, topic->name),
				 errdetail("The topic has %d partition%s, numbered from 0.",
						   topic->npartitions, topic->npartitions == 1 ? "" : "s")));
	return &topic->parts[partition];
}

/*
 * Is this index usable as a segment's offset index: unique on msg_offset
 * alone, no predicate or expression, and valid, ready and live (not a
 * REINDEX CONCURRENTLY copy being built, or the old one being dropped)?
 */
static bool
offset_index(Oid indexid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexid));
	Form_pg_index form;
	bool		ok;

	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_index) GETSTRUCT(tup);
	ok = form->indisunique && form->indisvalid && form->indisready && form->indislive &&
		form->indnatts == 1 && form->indkey.values[0] == Anum_log_msg_offset &&
		heap_attisnull(tup, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(tup, Anum_pg_index_indpred, NULL);
	ReleaseSysCache(tup);
	return ok;
}

/*
 * Open a segment's table with lockmode; MQ074 when it is gone although
 * the topic's catalog lists it.
 */
Relation
mq_segment_open(MqSegment *seg, LOCKMODE lockmode)
{
	Relation	rel = try_table_open(seg->relid, lockmode);

	/* dropped behind mq's back: maintenance drops a segment's row with it */
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_LOG_TABLE_MISSING),
				 errmsg("the log table of the segment of offsets " INT64_FORMAT " to " INT64_FORMAT " is missing",
						seg->base, seg->end),
				 errdetail("mq.segment lists relation %u, which was dropped by something other than mq.",
						   seg->relid),
				 errhint("Restore the database into a new one from a dump; drop topics with mq.drop_topic.")));
	return rel;
}

/*
 * Open the unique index on msg_offset of a segment whose table rel is open
 * and locked (see the top of this file); the cached OID is tried first.
 */
Relation
mq_segment_index_open(MqSegment *seg, Relation rel, LOCKMODE lockmode)
{
	List	   *indexes = RelationGetIndexList(rel);
	Oid			found = InvalidOid;
	ListCell   *lc;

	if (list_member_oid(indexes, seg->indexid) && offset_index(seg->indexid))
		found = seg->indexid;
	foreach(lc, indexes)
	{
		if (OidIsValid(found))
			break;
		if (offset_index(lfirst_oid(lc)))
			found = lfirst_oid(lc);
	}
	list_free(indexes);
	if (!OidIsValid(found))
		elog(ERROR, "mq: segment \"%s\" has no valid unique index on msg_offset",
			 RelationGetRelationName(rel));
	seg->indexid = found;		/* the hint for next time */
	return index_open(found, lockmode);
}

/* mq._invalidate(rel): make every backend reload its cached topic structure. */
Datum
mq_invalidate(PG_FUNCTION_ARGS)
{
	CacheInvalidateRelcacheByRelid(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}
