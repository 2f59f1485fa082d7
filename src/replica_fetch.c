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
 * The reads return rows in offset order and the batch's arrays are built
 * here from them.  As one row of array_agg(... ORDER BY msg_offset) per
 * column, PostgreSQL 15 sorted the rows once per aggregate: fourteen
 * sorts a fetch (nine columns, five of producer batches), 0.27 of the
 * leader's 0.35 ms for a one-record fetch and 1.9 ms of a 1,000-record
 * one (docs/benchmarks.md, "The leader's read without an ordered
 * aggregate per column").  The read always returns each record's offset,
 * so a range with compaction's gaps needs no second read.
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
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_replica_fetch_records);

/* partition tables whose plans a session keeps */
#define MAX_ENTRIES		1024

/* the read's columns, in the batch's attributes */
#define RECORD_COLUMNS	9
static const int record_attnos[RECORD_COLUMNS] = {
	RB_CREATED_AT, RB_KEYS, RB_VALS, RB_HEADERS, RB_PRODUCER_IDS,
	RB_PRODUCER_EPOCHS, RB_SEQUENCES, RB_TIMESTAMPS, RB_OFFSETS
};
static const char *const record_cols[RECORD_COLUMNS] = {
	"created_at", "key", "value", "headers", "producer_id",
	"producer_epoch", "sequence", "\"timestamp\"", "msg_offset"
};

/* ... and the producer batches' */
#define BATCH_COLUMNS	5
static const int batch_attnos[BATCH_COLUMNS] = {
	RB_BATCH_PRODUCER, RB_BATCH_EPOCH, RB_BATCH_FIRST, RB_BATCH_LAST, RB_BATCH_OFFSET
};

typedef struct ReadPlans
{
	Oid			relid;			/* the hash key */
	char		name[2 * NAMEDATALEN + 8];	/* its qualified name when prepared */
	SPIPlanPtr	plan;
} ReadPlans;

static HTAB *read_plans = NULL;
static SPIPlanPtr batches_plan = NULL;

static const char *const batches_sql =
"SELECT s.producer_id, s.producer_epoch, x.f, x.l, x.o"
"  FROM mq.producer_state s"
" CROSS JOIN LATERAL unnest(s.batch_first, s.batch_last, s.batch_offset) AS x(f, l, o)"
" WHERE s.topic_id OPERATOR(pg_catalog.=) $1 AND s.partition OPERATOR(pg_catalog.=) $2"
"   AND x.o OPERATOR(pg_catalog.+) mq._batch_length(x.f, x.l) OPERATOR(pg_catalog.-) 1"
"       BETWEEN $3 AND $4 OPERATOR(pg_catalog.-) 1"
" ORDER BY x.o";

static void
reset_plans(void)
{
	HASH_SEQ_STATUS seq;
	ReadPlans  *e;

	hash_seq_init(&seq, read_plans);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->plan != NULL)
			SPI_freeplan(e->plan);
		(void) hash_search(read_plans, &e->relid, HASH_REMOVE, NULL);
	}
}

static SPIPlanPtr
prepare_read(const char *name)
{
	StringInfoData sql;
	SPIPlanPtr	plan;
	Oid			types[2] = {INT8OID, INT8OID};

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int i = 0; i < RECORD_COLUMNS; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", record_cols[i]);
	appendStringInfo(&sql, " FROM %s WHERE msg_offset OPERATOR(pg_catalog.>=) $1"
					 " AND msg_offset OPERATOR(pg_catalog.<) $2 ORDER BY msg_offset", name);
	plan = SPI_prepare_cursor(sql.data, 2, types, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "mq: SPI_prepare failed for \"%s\": %s", sql.data,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/* The read's plan for relid. */
static SPIPlanPtr
read_plan(Oid relid)
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
		e->plan = NULL;
	}
	if (e->plan == NULL)
		e->plan = prepare_read(name);
	return e->plan;
}

/* Run plan with args; the number of rows (SPI_tuptable holds them). */
static uint64
run_rows(SPIPlanPtr plan, Datum *args)
{
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "mq: replica fetch read failed");
	return SPI_processed;
}

/*
 * Column col of SPI_tuptable's rows as an array into the batch's attribute
 * attno (memory: cxt); NULL when there are no rows, as array_agg's.
 */
static void
column_array(int col, int attno, Datum *values, bool *nulls, MemoryContext cxt)
{
	uint64		n = SPI_processed;
	TupleDesc	desc = SPI_tuptable->tupdesc;
	Datum	   *d;
	bool	   *dnulls;
	MemoryContext old;

	nulls[attno - 1] = (n == 0);
	values[attno - 1] = (Datum) 0;
	if (n == 0)
		return;
	d = palloc(n * sizeof(Datum));
	dnulls = palloc(n * sizeof(bool));
	for (uint64 r = 0; r < n; r++)
		d[r] = SPI_getbinval(SPI_tuptable->vals[r], desc, col + 1, &dnulls[r]);
	old = MemoryContextSwitchTo(cxt);
	values[attno - 1] = mq_array_of(d, dnulls, (int) n, SPI_gettypeid(desc, col + 1));
	MemoryContextSwitchTo(old);
	pfree(d);
	pfree(dnulls);
}

/* The offset in row r of the records' read. */
static int64
row_offset(uint64 r)
{
	bool		isnull;

	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
									   RECORD_COLUMNS, &isnull));
}

/*
 * The records of [from, end) into values/nulls (the batch's attributes),
 * one row each in offset order.  Consecutive from the fetch offset: no
 * offsets (compaction's gaps list them).
 */
static void
read_records(Oid relid, int64 from, int64 end, Datum *values, bool *nulls, MemoryContext cxt)
{
	Datum		args[2] = {Int64GetDatum(from), Int64GetDatum(end)};
	uint64		n = run_rows(read_plan(relid), args);
	bool		consecutive = n == 0 || (row_offset(0) == from &&
										 row_offset(n - 1) == from + (int64) n - 1);

	for (int i = 0; i < RECORD_COLUMNS; i++)
		if (record_attnos[i] != RB_OFFSETS || !consecutive)
			column_array(i, record_attnos[i], values, nulls, cxt);
	if (consecutive)
		nulls[RB_OFFSETS - 1] = true;
}

/* The producer batches whose last record lies in [from, end), by offset. */
static void
read_batches(int32 topic_id, int32 partition, int64 from, int64 end, Datum *values,
			 bool *nulls, MemoryContext cxt)
{
	Oid			types[4] = {INT4OID, INT4OID, INT8OID, INT8OID};
	Datum		args[4] = {Int32GetDatum(topic_id), Int32GetDatum(partition),
					 Int64GetDatum(from), Int64GetDatum(end)};

	if (batches_plan == NULL)
		batches_plan = mq_spi_prepare(batches_sql, 4, types);
	(void) run_rows(batches_plan, args);
	for (int i = 0; i < BATCH_COLUMNS; i++)
		column_array(i, batch_attnos[i], values, nulls, cxt);
}

/*
 * mq._replica_fetch_records(b, topic_id, partition, relid, fetch_offset,
 * end): b with the records of [fetch_offset, end) and the producer batches
 * whose last record lies there.  The batch lists each record's offset when
 * they are not consecutive from the fetch offset (compaction's gaps).
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
	read_records(PG_GETARG_OID(3), PG_GETARG_INT64(4), PG_GETARG_INT64(5), values, nulls, cxt);
	read_batches(PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT64(4), PG_GETARG_INT64(5),
				 values, nulls, cxt);
	mq_spi_end(&spi);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
