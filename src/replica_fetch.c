/*-------------------------------------------------------------------------
 *
 * replica_fetch.c
 *	  The records' read of a follower's fetch on the leader
 *	  (mq._replica_fetch_records, called by mq._replica_fetch in
 *	  src/sql/60_replica_fetch.sql): a range of a partition's records and
 *	  the producer batches that end in it, as arrays of mq.replica_batch.
 *
 * Why C.  The partition's table is known only at run time, so in
 * PL/pgSQL the read was a dynamic EXECUTE, parsed and planned on every
 * fetch: 3.2 ms of the leader's 5.8 ms per acks=all record on the loaded
 * test machine (docs/benchmarks.md, "Where an acks=all record's time
 * goes").  Here the statements are prepared once per partition table
 * (SPI_prepare, SPI_keepplan) and kept for the session in a hash table
 * keyed by the table's OID.  The plan cache re-plans them when a segment
 * is attached or detached (a relcache invalidation of the partitioned
 * table); an entry remembers its table's qualified name, so an OID reused
 * by another table after a topic's deletion is prepared again.  The cache
 * is emptied when it holds MAX_ENTRIES tables (topics deleted over a
 * session's life).
 *
 * Locking and visibility: as the SQL it replaces.  Each statement runs
 * with a new snapshot (a volatile function's), as the extension owner
 * with the pinned search_path (spi.c); the caller (mq._replica_fetch) has
 * checked the leader epoch.  No locks beyond the tables' AccessShareLock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_replica_fetch_records);

/* partition tables whose plans a session keeps */
#define MAX_ENTRIES		1024

/* the read's result columns, after the arrays of RECORD_ATTNOS */
#define RECORD_COLUMNS	9
#define COL_COUNT		(RECORD_COLUMNS + 1)
#define COL_LO			(RECORD_COLUMNS + 2)
#define COL_HI			(RECORD_COLUMNS + 3)

/* the batch's attributes the read fills, in the read's column order */
static const int record_attnos[RECORD_COLUMNS] = {
	RB_CREATED_AT, RB_KEYS, RB_VALS, RB_HEADERS, RB_PRODUCER_IDS,
	RB_PRODUCER_EPOCHS, RB_SEQUENCES, RB_TIMESTAMPS, RB_OFFSETS
};

/* ... and those the producer batches fill */
#define BATCH_COLUMNS	5
static const int batch_attnos[BATCH_COLUMNS] = {
	RB_BATCH_PRODUCER, RB_BATCH_EPOCH, RB_BATCH_FIRST, RB_BATCH_LAST, RB_BATCH_OFFSET
};

typedef struct ReadPlans
{
	Oid			relid;			/* the hash key */
	char		name[2 * NAMEDATALEN + 8];	/* its qualified name when prepared */
	SPIPlanPtr	plan[2];		/* [listed]: with each record's offset */
} ReadPlans;

static HTAB *read_plans = NULL;
static SPIPlanPtr batches_plan = NULL;

static const char *const batches_sql =
"SELECT array_agg(s.producer_id ORDER BY x.o), array_agg(s.producer_epoch ORDER BY x.o),"
"       array_agg(x.f ORDER BY x.o), array_agg(x.l ORDER BY x.o), array_agg(x.o ORDER BY x.o)"
"  FROM mq.producer_state s"
" CROSS JOIN LATERAL unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)"
" WHERE s.topic_id OPERATOR(pg_catalog.=) $1 AND s.partition OPERATOR(pg_catalog.=) $2"
"   AND x.o OPERATOR(pg_catalog.+) mq._batch_length(x.f, x.l) OPERATOR(pg_catalog.-) 1"
"       BETWEEN $3 AND $4 OPERATOR(pg_catalog.-) 1";

static void
reset_plans(void)
{
	HASH_SEQ_STATUS seq;
	ReadPlans  *e;

	hash_seq_init(&seq, read_plans);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		for (int i = 0; i < 2; i++)
			if (e->plan[i] != NULL)
				SPI_freeplan(e->plan[i]);
		(void) hash_search(read_plans, &e->relid, HASH_REMOVE, NULL);
	}
}

static SPIPlanPtr
prepare_read(const char *name, bool listed)
{
	StringInfoData sql;
	SPIPlanPtr	plan;
	Oid			types[2] = {INT8OID, INT8OID};
	const char *cols[] = {"created_at", "key", "value", "headers", "producer_id",
						  "producer_epoch", "sequence", "\"timestamp\""};

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int i = 0; i < lengthof(cols); i++)
		appendStringInfo(&sql, "pg_catalog.array_agg(%s ORDER BY msg_offset), ", cols[i]);
	appendStringInfo(&sql, "%s, pg_catalog.count(*), pg_catalog.min(msg_offset), pg_catalog.max(msg_offset)"
					 " FROM %s WHERE msg_offset OPERATOR(pg_catalog.>=) $1"
					 " AND msg_offset OPERATOR(pg_catalog.<) $2",
					 listed ? "pg_catalog.array_agg(msg_offset ORDER BY msg_offset)" : "NULL::pg_catalog.int8[]",
					 name);
	plan = SPI_prepare_cursor(sql.data, 2, types, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "mq: SPI_prepare failed for \"%s\": %s", sql.data,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/* The read's plan for relid (listed: with each record's offset). */
static SPIPlanPtr
read_plan(Oid relid, bool listed)
{
	char	   *name;
	ReadPlans  *e;
	bool		found;

	if (read_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ReadPlans);
		read_plans = hash_create("mq replica fetch plans", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
	e = hash_search(read_plans, &relid, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->name, name) != 0)
	{
		reset_plans();			/* an OID reused: rare, start afresh */
		e = NULL;
	}
	if (e == NULL)
	{
		if (hash_get_num_entries(read_plans) >= MAX_ENTRIES)
			reset_plans();
		if (strlen(name) >= sizeof(e->name))
			elog(ERROR, "mq: partition table name too long: %s", name);
		e = hash_search(read_plans, &relid, HASH_ENTER, &found);
		strlcpy(e->name, name, sizeof(e->name));
		e->plan[0] = e->plan[1] = NULL;
	}
	if (e->plan[listed] == NULL)
		e->plan[listed] = prepare_read(name, listed);
	return e->plan[listed];
}

/* Run plan with args; its one row's columns copied into values/nulls (memory: cxt). */
static void
run_one_row(SPIPlanPtr plan, Datum *args, int ncols, Datum *values, bool *nulls,
			MemoryContext cxt)
{
	TupleDesc	desc;

	if (SPI_execute_plan(plan, args, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "mq: replica fetch read failed");
	desc = SPI_tuptable->tupdesc;
	for (int i = 0; i < ncols; i++)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], desc, i + 1, &nulls[i]);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		Form_pg_attribute att = TupleDescAttr(desc, i);

		values[i] = nulls[i] ? (Datum) 0 : datumCopy(d, att->attbyval, att->attlen);
		MemoryContextSwitchTo(old);
	}
}

/*
 * The records of [from, end) into values/nulls (the batch's attributes).
 * Consecutive from the fetch offset: no offsets.  Otherwise, unless
 * listed, read again with them (a cleaner pass removed records since the
 * caller looked).
 */
static void
read_records(Oid relid, int64 from, int64 end, bool listed, Datum *values, bool *nulls,
			 MemoryContext cxt)
{
	Datum		args[2] = {Int64GetDatum(from), Int64GetDatum(end)};
	Datum		cols[COL_HI];
	bool		colnulls[COL_HI];

	for (;;)
	{
		int64		count,
					lo,
					hi;

		run_one_row(read_plan(relid, listed), args, COL_HI, cols, colnulls, cxt);
		for (int i = 0; i < RECORD_COLUMNS; i++)
		{
			values[record_attnos[i] - 1] = cols[i];
			nulls[record_attnos[i] - 1] = colnulls[i];
		}
		count = DatumGetInt64(cols[COL_COUNT - 1]);
		lo = colnulls[COL_LO - 1] ? 0 : DatumGetInt64(cols[COL_LO - 1]);
		hi = colnulls[COL_HI - 1] ? 0 : DatumGetInt64(cols[COL_HI - 1]);
		if (count == 0 || (lo == from && hi == from + count - 1))
		{
			nulls[RB_OFFSETS - 1] = true;
			return;
		}
		if (listed)
			return;
		listed = true;
	}
}

/* The producer batches whose last record lies in [from, end). */
static void
read_batches(int32 topic_id, int32 partition, int64 from, int64 end, Datum *values,
			 bool *nulls, MemoryContext cxt)
{
	Oid			types[4] = {INT4OID, INT4OID, INT8OID, INT8OID};
	Datum		args[4] = {Int32GetDatum(topic_id), Int32GetDatum(partition),
					 Int64GetDatum(from), Int64GetDatum(end)};
	Datum		cols[BATCH_COLUMNS];
	bool		colnulls[BATCH_COLUMNS];

	if (batches_plan == NULL)
		batches_plan = mq_spi_prepare(batches_sql, 4, types);
	run_one_row(batches_plan, args, BATCH_COLUMNS, cols, colnulls, cxt);
	for (int i = 0; i < BATCH_COLUMNS; i++)
	{
		values[batch_attnos[i] - 1] = cols[i];
		nulls[batch_attnos[i] - 1] = colnulls[i];
	}
}

/*
 * mq._replica_fetch_records(b, topic_id, partition, relid, fetch_offset,
 * end, listed): b with the records of [fetch_offset, end) and the producer
 * batches whose last record lies there.  The batch lists each record's
 * offset when they are not consecutive from the fetch offset
 * (compaction's gaps); listed: read them with their offsets from the
 * start (the range lies below the last cleaner pass; NULL: no pass).
 */
Datum
mq_replica_fetch_records(PG_FUNCTION_ARGS)
{
	HeapTupleHeader in;
	TupleDesc	desc;
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;
	MemoryContext cxt = CurrentMemoryContext;
	MqSpiSave	spi;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	for (int i = 1; i < 6; i++)
		if (PG_ARGISNULL(i))
			elog(ERROR, "mq: mq._replica_fetch_records: argument %d is null", i + 1);
	in = PG_GETARG_HEAPTUPLEHEADER(0);
	desc = lookup_rowtype_tupdesc_copy(HeapTupleHeaderGetTypeId(in), HeapTupleHeaderGetTypMod(in));
	if (desc->natts < RB_OFFSETS)
		elog(ERROR, "mq: mq.replica_batch has %d attributes, expected %d", desc->natts, RB_OFFSETS);
	values = palloc(desc->natts * sizeof(Datum));
	nulls = palloc(desc->natts * sizeof(bool));
	tuple.t_len = HeapTupleHeaderGetDatumLength(in);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = in;
	heap_deform_tuple(&tuple, desc, values, nulls);

	mq_spi_begin(&spi);
	read_records(PG_GETARG_OID(3), PG_GETARG_INT64(4), PG_GETARG_INT64(5),
				 !PG_ARGISNULL(6) && PG_GETARG_BOOL(6), values, nulls, cxt);
	read_batches(PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT64(4), PG_GETARG_INT64(5),
				 values, nulls, cxt);
	mq_spi_end(&spi);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
