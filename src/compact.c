/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  The parts of log compaction that need C: removing the records a
 *	  cleaning pass makes obsolete, past the trigger that keeps log tables
 *	  append-only (log.c, mq_refuse_log_change), and refusing records
 *	  without a key on compacted topics at produce, as Kafka does.  What to
 *	  clean, when, and the cleaner point are decided in
 *	  src/sql/72_compaction.sql.
 *
 * A pass over [log_start, clean_end) keeps, for every non-null key, only
 * the record with the highest offset, where the candidates for "newer"
 * are the records of the dirty range [cleaner_point, clean_end) (Kafka's
 * offset map): records below the cleaner point are already the latest of
 * their key within it.  Tombstones (null value) below tomb_end that are
 * the latest of their key go too.  Records with a null key are kept.
 *
 * Kafka's cleaner rewrites the segments it cleans and their time index
 * from the records that remain, so the pass then recomputes the running
 * maximum timestamp (max_timestamp, src/timeindex_write.c) of a segment
 * that lost records when its last row's is stale: a segment's largest
 * timestamp, which retention.ms and the time lookup read from its last
 * row, no longer counts records the pass removed (recompute_max_timestamps).
 *
 * Locking: one DELETE over the partition's table restricted to offsets
 * below clean_end, which the caller keeps below the segment being written
 * and below the high watermark.  It takes ROW EXCLUSIVE on the partition
 * and the segments it touches: producers (ROW EXCLUSIVE on the active
 * segment) and readers (ACCESS SHARE) never wait for it, and readers see
 * the old or the new contents as their MVCC snapshot says.  Two passes of
 * one partition (the maintenance worker's and an mq.compact() call) run
 * one after the other: each first takes the partition's compaction lock
 * (MQ_LOCK_COMPACT, until its transaction ends), so the second sees the
 * first's cleaner point instead of recording the same pass again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_compact_delete);
PG_FUNCTION_INFO_V1(mq_lock_compaction);

/* mq._lock_compaction(topic_id, partition): waits for another pass */
Datum
mq_lock_compaction(PG_FUNCTION_ARGS)
{
	mq_lock_partition_class(PG_GETARG_INT32(0), PG_GETARG_INT32(1), MQ_LOCK_COMPACT);
	PG_RETURN_VOID();
}

/*
 * Produce to a compacted topic: every record needs a key (Kafka's
 * InvalidRecordException, "compacted topic cannot accept message without
 * key").  The whole call fails before anything is appended.  The replica
 * path does not check: the leader did.
 */
void
mq_check_compacted_keys(MqTopic *topic, MqRecordIn *recs, int n)
{
	if (!topic->compacted)
		return;
	for (int i = 0; i < n; i++)
		if (recs[i].key == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_RECORD),
					 errmsg("a record without a key cannot be produced to compacted topic \"%s\"", topic->name),
					 errdetail("Record %d of the call has a null key; nothing of the call was written.", i + 1),
					 errhint("Give every record a key, or use a topic whose cleanup.policy is \"delete\".")));
}

/*
 * After a pass removed records: in each segment that lost some (the keys
 * of removed) whose last remaining row stores a running maximum above its
 * own timestamp, set every row's max_timestamp to the running maximum of
 * the segment's remaining rows (NULL when that is its own timestamp, as
 * log.c stores it).  Where the last row stores none, its own timestamp is
 * already the segment's largest (removing records never raises one): one
 * index probe, no scan, the usual case when timestamps grow with the
 * offset.  Earlier rows may then keep a stale maximum, which the time
 * lookup's forward read already steps over (timeindex.c).
 */
static void
recompute_max_timestamps(Datum removed)
{
	Oid			argtypes[1] = {JSONBOID};
	Datum		args[1] = {removed};
	StringInfoData sql;
	List	   *segs = NIL;
	ListCell   *lc;

	if (SPI_execute_with_args("SELECT k FROM pg_catalog.jsonb_object_keys($1) k",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "mq: listing compacted segments failed");
	for (uint64 i = 0; i < SPI_processed; i++)
		segs = lappend(segs, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	initStringInfo(&sql);
	foreach(lc, segs)
	{
		const char *seg = lfirst(lc);
		bool		isnull;

		resetStringInfo(&sql);
		appendStringInfo(&sql, "SELECT max_timestamp IS NOT NULL FROM %s ORDER BY msg_offset DESC LIMIT 1", seg);
		if (SPI_execute(sql.data, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "mq: reading the timestamps of \"%s\" failed", seg);
		if (SPI_processed == 0 ||
			!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
			continue;
		resetStringInfo(&sql);
		appendStringInfo(&sql,
						 "UPDATE %s s SET max_timestamp = NULLIF(w.m, w.ts) "
						 "  FROM (SELECT msg_offset, max_timestamp, coalesce(\"timestamp\", created_at) AS ts, "
						 "               pg_catalog.max(coalesce(\"timestamp\", created_at)) OVER (ORDER BY msg_offset) AS m "
						 "          FROM %s) w "
						 " WHERE s.msg_offset OPERATOR(pg_catalog.=) w.msg_offset AND w.max_timestamp IS NOT NULL "
						 "   AND w.max_timestamp IS DISTINCT FROM NULLIF(w.m, w.ts)",
						 seg, seg);
		if (SPI_execute(sql.data, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "mq: recomputing the timestamps of \"%s\" failed", seg);
	}
	pfree(sql.data);
}

/*
 * mq._compact_delete(partition_table, log_start, cleaner_point, clean_end,
 * tomb_end): remove what a pass makes obsolete.  Returns a jsonb object
 * from each segment that lost records (as regclass text) to how many
 * ("removed") and the latest append time among them ("modified").
 */
Datum
mq_compact_delete(PG_FUNCTION_ARGS)
{
	Oid			part = PG_GETARG_OID(0);
	Oid			argtypes[4] = {INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		args[4] = {PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3), PG_GETARG_DATUM(4)};
	char	   *rel;
	StringInfoData sql;
	MqSpiSave	spi;
	Datum		result = (Datum) 0;
	bool		isnull = true;

	mq_spi_begin(&spi);
	rel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(part)), get_rel_name(part));
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH m AS (SELECT key, pg_catalog.max(msg_offset) AS o FROM %s "
					 "            WHERE msg_offset >= $2 AND msg_offset < $3 AND key IS NOT NULL GROUP BY key), "
					 "d AS (DELETE FROM %s s USING m "
					 "       WHERE s.msg_offset >= $1 AND s.msg_offset < $3 AND s.key OPERATOR(pg_catalog.=) m.key "
					 "         AND s.msg_offset < m.o RETURNING s.tableoid, s.created_at), "
					 "t AS (DELETE FROM %s s "
					 "       WHERE s.msg_offset >= $1 AND s.msg_offset < $4 AND s.value IS NULL AND s.key IS NOT NULL "
					 "         AND NOT EXISTS (SELECT 1 FROM m WHERE m.key OPERATOR(pg_catalog.=) s.key AND m.o > s.msg_offset) "
					 "       RETURNING s.tableoid, s.created_at) "
					 "SELECT pg_catalog.jsonb_object_agg(x.tableoid::pg_catalog.regclass::pg_catalog.text, "
					 "         pg_catalog.jsonb_build_object('removed', x.n, 'modified', x.m)) "
					 "  FROM (SELECT u.tableoid, pg_catalog.count(*) AS n, pg_catalog.max(u.created_at) AS m "
					 "          FROM (SELECT tableoid, created_at FROM d UNION ALL SELECT tableoid, created_at FROM t) u "
					 "         GROUP BY u.tableoid) x",
					 rel, rel, rel);
	mq_allow_log_change = true;
	PG_TRY();
	{
		if (SPI_execute_with_args(sql.data, 4, argtypes, args, NULL, false, 0) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "mq: compacting \"%s\" failed", rel);
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
		{
			result = SPI_datumTransfer(result, false, -1);
			recompute_max_timestamps(result);
		}
	}
	PG_FINALLY();
	{
		mq_allow_log_change = false;
	}
	PG_END_TRY();
	mq_spi_end(&spi);
	if (isnull)
		PG_RETURN_JSONB_P(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"))));
	PG_RETURN_DATUM(result);
}
