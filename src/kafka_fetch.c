/*-------------------------------------------------------------------------
 *
 * kafka_fetch.c
 *	  mq.kafka_fetch: the records of one or more partitions already
 *	  encoded as Kafka record batches (kafka_batch.c), for mq-kafka's
 *	  Fetch v4+, which copies the bytes into its response.
 *
 * Each partition is read exactly as mq.fetch reads it (fetch.c: the same
 * argument checks, READ on the topic, the high watermark of a replicated
 * partition and its leader check, the caller's snapshot, compaction's
 * gaps), and encoded as mq-kafka's encoder encodes fetched rows: a record
 * keeps its timestamp and type (a NULL log timestamp is LogAppendTime,
 * its time created_at), its headers as Kafka's list (headers.c), null
 * keys and values; a new batch starts when the type changes, and for
 * LogAppendTime when the millisecond does, since clients give every
 * record of such a batch its maxTimestamp.
 *
 * Byte limits (KIP-74), counted as mq-kafka counts them: a record costs
 * its key, value and header bytes, 24 bytes, 4 a header, and 61 when it
 * opens a batch.  Records are added while partition_max_bytes and
 * the call's response_max_bytes allow, except that the first record of
 * the call is always returned whole, so a consumer always makes progress.
 * Partitions are read in the arrays' order, each with what the ones
 * before it left of response_max_bytes.
 *
 * The function returns a row at a time (value per call), so that called
 * in a select list its rows stream to the client without a tuplestore.
 *
 * Locking: that of mq.fetch (log_reader.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_kafka_fetch);

/* 2000-01-01 (PostgreSQL's epoch) in Unix milliseconds */
#define PG_EPOCH_MS INT64CONST(946684800000)
#define BATCH_HEADER_SIZE 61
#define MAX_PREALLOC (16 * 1024 * 1024)

/* the arguments, one element per partition */
enum
{
	ARG_TOPIC,
	ARG_PARTITION,
	ARG_FROM,
	ARG_MAX_RECORDS,
	ARG_MAX_BYTES,
	NARRAYS
};

/* What the call keeps between its rows. */
typedef struct KafkaFetch
{
	int			n;				/* elements */
	Datum	   *elems[NARRAYS];
	bool	   *nulls[NARRAYS];
	int			next;			/* the element to read next */
	int64		response_max;
	int64		total;			/* bytes counted so far, all partitions */
	MemoryContext rowcxt;		/* reset for each record */
} KafkaFetch;

/* One partition's result. */
typedef struct PartOut
{
	StringInfoData buf;			/* the batches, after a bytea header */
	int64		next_offset;
	int32		records;
	int64		bytes;			/* as the limits count them */
} PartOut;

static void
load_arrays(KafkaFetch *k, FunctionCallInfo fcinfo)
{
	static const char *const names[NARRAYS] = {"topics", "partitions", "from_offsets",
											   "partition_max_records", "partition_max_bytes"};
	static const Oid types[NARRAYS] = {TEXTOID, INT4OID, INT8OID, INT4OID, INT4OID};

	for (int a = 0; a < NARRAYS; a++)
	{
		ArrayType  *arr;
		int			n;

		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s must not be null", names[a])));
		arr = PG_GETARG_ARRAYTYPE_P(a);
		if (ARR_NDIM(arr) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s must be a one-dimensional array", names[a])));
		if (ARR_ELEMTYPE(arr) != types[a])
			elog(ERROR, "mq.kafka_fetch: %s of the wrong type", names[a]);
		k->elems[a] = mq_array_elems(arr, types[a], &k->nulls[a], &n);
		if (a > 0 && n != k->n)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s has %d elements, topics %d", names[a], n, k->n),
					 errhint("Give one element per partition in every array.")));
		k->n = n;
	}
	k->response_max = PG_ARGISNULL(NARRAYS) ? PG_INT64_MAX : PG_GETARG_INT32(NARRAYS);
	if (k->response_max < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("response_max_bytes must be positive, not " INT64_FORMAT, k->response_max)));
}

/* the element's partition, offset, max_records and max_bytes, checked */
static void
element_args(KafkaFetch *k, int i, NullableDatum *args, int64 *max_bytes)
{
	static const char *const names[NARRAYS] = {NULL, "partition", "from_offset",
											   "partition_max_records", "partition_max_bytes"};

	for (int a = ARG_TOPIC; a <= ARG_MAX_RECORDS; a++)
	{
		args[a].value = k->elems[a][i];
		args[a].isnull = k->nulls[a][i];
	}
	for (int a = ARG_PARTITION; a < NARRAYS; a++)
		if (k->nulls[a][i])
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("%s %d must not be null", names[a], i + 1)));
	*max_bytes = DatumGetInt32(k->elems[ARG_MAX_BYTES][i]);
	if (*max_bytes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("partition_max_bytes %d must be positive, not " INT64_FORMAT, i + 1, *max_bytes)));
	/* mq.fetch's max_wait_ms, min_records, max_bytes: none */
	for (int a = 4; a < 7; a++)
	{
		args[a].value = (Datum) 0;
		args[a].isnull = true;
	}
}

/* a log row as a record on the wire, in the row context; its byte count */
static int64
wire_record(TupleTableSlot *slot, MqWireRecord *r, bool *log_append)
{
	Datum	   *v = slot->tts_values;
	bool	   *isnull = slot->tts_isnull;
	int64		size = 24;

	slot_getsomeattrs(slot, Anum_log_timestamp);
	r->offset = DatumGetInt64(v[Anum_log_msg_offset - 1]);
	r->keylen = r->valuelen = -1;
	if (!isnull[Anum_log_key - 1])
	{
		bytea	   *b = DatumGetByteaPP(v[Anum_log_key - 1]);

		r->key = VARDATA_ANY(b);
		r->keylen = VARSIZE_ANY_EXHDR(b);
		size += r->keylen;
	}
	if (!isnull[Anum_log_value - 1])
	{
		bytea	   *b = DatumGetByteaPP(v[Anum_log_value - 1]);

		r->value = VARDATA_ANY(b);
		r->valuelen = VARSIZE_ANY_EXHDR(b);
		size += r->valuelen;
	}
	r->nheaders = 0;
	if (!isnull[Anum_log_headers - 1])
		r->nheaders = Max(mq_header_list_wire(DatumGetJsonbP(v[Anum_log_headers - 1]),
											  &r->hkeys, &r->hkeylens, &r->hvals, &r->hvallens), 0);
	for (int h = 0; h < r->nheaders; h++)
		size += 4 + Max(r->hkeylens[h], 0) + Max(r->hvallens[h], 0);
	*log_append = isnull[Anum_log_timestamp - 1];
	r->timestamp_ms = DatumGetTimestampTz(v[*log_append ? Anum_log_created_at - 1 :
										  Anum_log_timestamp - 1]) / 1000 + PG_EPOCH_MS;
	return size;
}

/*
 * Read element i's partition and encode its records into out, within
 * max_bytes and what is left of the call's limit.
 */
static void
encode_partition(KafkaFetch *k, int i, PartOut *out)
{
	NullableDatum args[7];
	int64		max_bytes;
	MqFeed		feed;
	TupleTableSlot *slot;
	MqBatchWriter w;
	bool		open = false,
				open_append = false;
	int64		ts_open = 0;

	element_args(k, i, args, &max_bytes);
	mq_fetch_feed_begin(&feed, args, 7);
	out->next_offset = DatumGetInt64(args[ARG_FROM].value);
	while ((slot = mq_feed_next(&feed)) != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(k->rowcxt);
		MqWireRecord r;
		bool		log_append;
		int64		size = wire_record(slot, &r, &log_append) + (open ? 0 : BATCH_HEADER_SIZE);

		if (k->total > 0 && (out->bytes + size > max_bytes || k->total + size > k->response_max))
		{
			MemoryContextSwitchTo(old);
			break;				/* full */
		}
		if (open && (log_append != open_append || (log_append && r.timestamp_ms != ts_open)))
		{
			mq_batch_end(&w);
			open = false;
		}
		if (!open)
		{
			mq_batch_begin(&w, &out->buf, r.offset, r.timestamp_ms, log_append);
			open = true;
			open_append = log_append;
			ts_open = r.timestamp_ms;
		}
		mq_batch_add(&w, &r);
		MemoryContextSwitchTo(old);
		MemoryContextReset(k->rowcxt);
		out->bytes += size;
		k->total += size;
		out->next_offset = r.offset + 1;
		out->records++;
	}
	if (open)
		mq_batch_end(&w);
	mq_feed_end(&feed);
}

/*
 * The buffer to start element i's batches with: what its limits allow
 * (records encode in fewer bytes than they count for), up to a cap, so
 * that a megabyte of batches is not copied as the buffer doubles.
 */
static int
expected_size(KafkaFetch *k, int i)
{
	int64		n = k->nulls[ARG_MAX_BYTES][i] ? 0 : DatumGetInt32(k->elems[ARG_MAX_BYTES][i]);

	n = Min(n, k->response_max - k->total);
	return (int) Max(Min(n, MAX_PREALLOC), 0) + VARHDRSZ + 64;
}

/*
 * mq.kafka_fetch(topics text[], partitions integer[], from_offsets
 * bigint[], partition_max_records integer[], partition_max_bytes
 * integer[], response_max_bytes integer) RETURNS TABLE (item integer, next_offset
 * bigint, records integer, bytes bigint, batches bytea): a row per element
 * whose topic is not null, in order.
 */
Datum
mq_kafka_fetch(PG_FUNCTION_ARGS)
{
	FuncCallContext *fc;
	KafkaFetch *k;
	PartOut		out;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	int			i;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;

		fc = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "mq.kafka_fetch must return a composite type");
		fc->tuple_desc = BlessTupleDesc(desc);
		k = palloc0(sizeof(KafkaFetch));
		load_arrays(k, fcinfo);
		k->rowcxt = AllocSetContextCreate(fc->multi_call_memory_ctx, "mq kafka_fetch record",
										  ALLOCSET_DEFAULT_SIZES);
		fc->user_fctx = k;
		MemoryContextSwitchTo(old);
	}
	fc = SRF_PERCALL_SETUP();
	k = fc->user_fctx;
	while (k->next < k->n && k->nulls[ARG_TOPIC][k->next])
		k->next++;				/* a null topic: no row */
	if (k->next >= k->n)
		SRF_RETURN_DONE(fc);
	i = k->next++;
	memset(&out, 0, sizeof(out));
	initStringInfo(&out.buf);
	enlargeStringInfo(&out.buf, expected_size(k, i));
	appendBinaryStringInfo(&out.buf, "\0\0\0\0", VARHDRSZ);
	encode_partition(k, i, &out);
	SET_VARSIZE(out.buf.data, out.buf.len);
	values[0] = Int32GetDatum(i + 1);
	values[1] = Int64GetDatum(out.next_offset);
	values[2] = Int32GetDatum(out.records);
	values[3] = Int64GetDatum(out.bytes);
	values[4] = PointerGetDatum(out.buf.data);
	SRF_RETURN_NEXT(fc, HeapTupleGetDatum(heap_form_tuple(fc->tuple_desc, values, nulls)));
}
