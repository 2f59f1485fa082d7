/*-------------------------------------------------------------------------
 *
 * produce.c
 *	  mq.send and mq.send_batch: argument checking, partition choice, and
 *	  handing each partition's records to the log in one append;
 *	  mq._check_records: the checks before an append, without it.
 *
 * A batch is split by partition and the partitions are appended in
 * ascending order, so two batches that touch the same partitions always
 * take their produce locks in the same order and cannot deadlock on each
 * other.  Within a partition records keep their order in the batch.
 * Records without a key and without an explicit partition all go to one
 * partition per call (Kafka's "sticky" choice), the next one round-robin.
 * A record's timestamp (CreateTime) is checked against the topic's
 * message.timestamp.difference.max.ms before anything is appended.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_send);
PG_FUNCTION_INFO_V1(mq_send_text);
PG_FUNCTION_INFO_V1(mq_send_batch);
PG_FUNCTION_INFO_V1(mq_send_batch_text);
PG_FUNCTION_INFO_V1(mq_check_records);

/* argument positions shared by all send functions */
#define ARG_TOPIC		0
#define ARG_KEY			1
#define ARG_VALUE		2
#define ARG_HEADERS		3
#define ARG_PARTITION	4
#define ARG_PRODUCER_ID 5
#define ARG_EPOCH		6
#define ARG_SEQUENCE	7
/* mq.send: timestamp, header_list; mq.send_batch: timestamps, timestamp */
#define ARG_TIMESTAMP	8
#define ARG_HEADER_LIST	9
#define ARG_TIMESTAMPS	8
#define ARG_BATCH_TIMESTAMP 9
/* mq.send_batch(bytea[]) and mq._check_records: a Kafka batch's size as sent */
#define ARG_BATCH_BYTES 10

/* text or jsonb as UTF-8 bytes, the way Kafka's string serializer sends it */
static bytea *
text_datum_to_bytea(Datum d, Oid type)
{
	char	   *s;
	char	   *utf8;
	int			len;
	bytea	   *result;

	if (type == JSONBOID)
		s = JsonbToCString(NULL, &DatumGetJsonbP(d)->root, VARSIZE(DatumGetJsonbP(d)));
	else
		s = text_to_cstring(DatumGetTextPP(d));
	len = strlen(s);
	utf8 = pg_server_to_any(s, len, PG_UTF8);
	if (utf8 != s)
		len = strlen(utf8);
	result = palloc(VARHDRSZ + len);
	SET_VARSIZE(result, VARHDRSZ + len);
	memcpy(VARDATA(result), utf8, len);
	return result;
}

static int
cmp_by_partition(const void *a, const void *b)
{
	const MqRecordIn *ra = a;
	const MqRecordIn *rb = b;

	if (ra->partition != rb->partition)
		return ra->partition < rb->partition ? -1 : 1;
	return ra->input_index < rb->input_index ? -1 : ra->input_index > rb->input_index;
}

static void
read_producer(FunctionCallInfo fcinfo, MqProducer *producer)
{
	int			given = !PG_ARGISNULL(ARG_PRODUCER_ID) + !PG_ARGISNULL(ARG_EPOCH) +
		!PG_ARGISNULL(ARG_SEQUENCE);

	producer->present = (given == 3);
	if (given != 0 && given != 3)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_id, producer_epoch and base_sequence must be given together")));
	if (!producer->present)
		return;
	producer->producer_id = PG_GETARG_INT64(ARG_PRODUCER_ID);
	producer->producer_epoch = PG_GETARG_INT32(ARG_EPOCH);
	producer->base_sequence = PG_GETARG_INT32(ARG_SEQUENCE);
	if (producer->producer_id < 0 || producer->producer_epoch < 0 || producer->base_sequence < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_id, producer_epoch and base_sequence must not be negative")));
	/* Kafka's epoch is an int16 */
	if (producer->producer_epoch > PG_INT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("producer_epoch must be from 0 to %d, not %d", PG_INT16_MAX, producer->producer_epoch)));
}

/*
 * The checks of an append that come before anything is written and need
 * no lock: the caller's write right, the topic and partition, the size
 * (of the Kafka batch the records came in, or else of each record), and
 * each record's key (compacted topics) and timestamp.  The producer's
 * epoch and sequences are the append's.
 */
static MqTopic *
check_records(FunctionCallInfo fcinfo, MqRecordIn *recs, int n)
{
	char	   *topic_name;
	MqTopic    *topic;

	if (PG_ARGISNULL(ARG_TOPIC))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("topic must not be null")));
	topic_name = text_to_cstring(PG_GETARG_TEXT_PP(ARG_TOPIC));
	mq_acl_check(MQ_RES_TOPIC, topic_name, MQ_ACL_WRITE);
	mq_consumer_offsets_check_write(topic_name);	/* before any record check */
	topic = mq_topic_lookup(topic_name, false);
	if (!PG_ARGISNULL(ARG_PARTITION))
		(void) mq_topic_partition(topic, PG_GETARG_INT32(ARG_PARTITION));
	/* max.message.bytes: the whole call fails before anything is appended */
	if (PG_NARGS() > ARG_BATCH_BYTES && !PG_ARGISNULL(ARG_BATCH_BYTES) && PG_GETARG_INT32(ARG_BATCH_BYTES) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("batch_bytes must be positive, not %d", PG_GETARG_INT32(ARG_BATCH_BYTES)),
				 errhint("Give the size of the Kafka record batch the records came in, or null.")));
	mq_check_record_sizes(topic, recs, n,
						  PG_NARGS() > ARG_BATCH_BYTES && !PG_ARGISNULL(ARG_BATCH_BYTES) ?
						  PG_GETARG_INT32(ARG_BATCH_BYTES) : -1);
	/* compacted topics refuse records without a key (compact.c) */
	mq_check_compacted_keys(topic, recs, n);
	mq_check_timestamps(topic, recs, n);
	return topic;
}

/*
 * Assign partitions, append partition by partition, and return one row
 * (partition, msg_offset) per record in input order.
 */
static void
send_records(FunctionCallInfo fcinfo, MqRecordIn *recs, int n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqTopic    *topic = check_records(fcinfo, recs, n);
	char	   *topic_name = pstrdup(topic->name);	/* the cache may be rebuilt */
	MqProducer	producer;
	int64	   *offsets;
	int32	   *partitions;
	int32		sticky = -1;

	read_producer(fcinfo, &producer);

	InitMaterializedSRF(fcinfo, 0);
	if (n == 0)
	{
		/*
		 * Nothing to send, but an idempotent producer's epoch is checked,
		 * and registered at sequence 0 where ids are cluster-wide: mqctl
		 * pipeline does so in a transaction of its own before its first
		 * prepared step, so that no prepared part holds the producer's row.
		 */
		if (producer.present)
			mq_producer_check_epoch(producer.producer_id, producer.producer_epoch,
									producer.base_sequence);
		return;
	}

	for (int i = 0; i < n; i++)
	{
		recs[i].input_index = i;
		if (!PG_ARGISNULL(ARG_PARTITION))
			recs[i].partition = mq_topic_partition(topic, PG_GETARG_INT32(ARG_PARTITION))->partition;
		else if (recs[i].key != NULL)
			recs[i].partition = mq_default_partition(recs[i].key, topic->npartitions);
		else
		{
			if (sticky < 0)
				sticky = mq_default_partition(NULL, topic->npartitions);
			recs[i].partition = sticky;
		}
	}
	if (producer.present && n > 1)
	{
		for (int i = 1; i < n; i++)
			if (recs[i].partition != recs[0].partition)
				ereport(ERROR,
						(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
						 errmsg("an idempotent batch must go to a single partition"),
						 errdetail("Sequence numbers are counted per producer and partition; this batch spans partitions %d and %d.",
								   recs[0].partition, recs[i].partition),
						 errhint("Give the partition, or split the batch by mq.partition_for().")));
	}

	if (producer.present)
		mq_producer_check_epoch(producer.producer_id, producer.producer_epoch,
								producer.base_sequence);

	offsets = palloc(sizeof(int64) * n);
	partitions = palloc(sizeof(int32) * n);
	qsort(recs, n, sizeof(MqRecordIn), cmp_by_partition);
	for (int i = 0; i < n;)
	{
		int			j = i;
		int64		base;

		while (j < n && recs[j].partition == recs[i].partition)
			j++;
		base = mq_log_append(topic_name, recs[i].partition, recs + i, j - i,
							 producer.present ? &producer : NULL);
		for (int k = i; k < j; k++)
		{
			offsets[recs[k].input_index] = base + (k - i);
			partitions[recs[k].input_index] = recs[k].partition;
		}
		i = j;
	}

	for (int i = 0; i < n; i++)
	{
		Datum		values[2] = {Int32GetDatum(partitions[i]), Int64GetDatum(offsets[i])};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * mq.send's headers: the jsonb as given, or Kafka's list (header_list)
 * stored in its jsonb form (headers.c); and its timestamp.
 */
static void
send_args(FunctionCallInfo fcinfo, MqRecordIn *rec)
{
	bool		has_list = PG_NARGS() > ARG_HEADER_LIST && !PG_ARGISNULL(ARG_HEADER_LIST);

	if (has_list && !PG_ARGISNULL(ARG_HEADERS))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("give headers or header_list, not both")));
	if (has_list)
		rec->headers = JsonbPGetDatum(mq_header_list_to_jsonb(PG_GETARG_ARRAYTYPE_P(ARG_HEADER_LIST)));
	else
		rec->headers = PG_ARGISNULL(ARG_HEADERS) ? (Datum) 0 : PG_GETARG_DATUM(ARG_HEADERS);
	rec->has_timestamp = PG_NARGS() > ARG_TIMESTAMP && !PG_ARGISNULL(ARG_TIMESTAMP);
	if (rec->has_timestamp)
		rec->timestamp = PG_GETARG_TIMESTAMPTZ(ARG_TIMESTAMP);
}

/* mq.send(topic, key bytea, value bytea, ...) */
Datum
mq_send(PG_FUNCTION_ARGS)
{
	MqRecordIn	rec = {0};

	rec.key = PG_ARGISNULL(ARG_KEY) ? NULL : PG_GETARG_BYTEA_PP(ARG_KEY);
	rec.value = PG_ARGISNULL(ARG_VALUE) ? NULL : PG_GETARG_BYTEA_PP(ARG_VALUE);
	send_args(fcinfo, &rec);
	send_records(fcinfo, &rec, 1);
	return (Datum) 0;
}

/* mq.send(topic, key text, value text|jsonb, ...) */
Datum
mq_send_text(PG_FUNCTION_ARGS)
{
	MqRecordIn	rec = {0};
	Oid			value_type = get_fn_expr_argtype(fcinfo->flinfo, ARG_VALUE);

	rec.key = PG_ARGISNULL(ARG_KEY) ? NULL :
		text_datum_to_bytea(PG_GETARG_DATUM(ARG_KEY), TEXTOID);
	rec.value = PG_ARGISNULL(ARG_VALUE) ? NULL :
		text_datum_to_bytea(PG_GETARG_DATUM(ARG_VALUE), value_type);
	send_args(fcinfo, &rec);
	send_records(fcinfo, &rec, 1);
	return (Datum) 0;
}

/* Elements of a one-dimensional array argument, or NULL when the array is. */
static int
array_arg(FunctionCallInfo fcinfo, int argno, Oid elemtype, const char *what,
		  Datum **elems, bool **nulls)
{
	ArrayType  *arr;
	int			n;

	*elems = NULL;
	*nulls = NULL;
	if (PG_ARGISNULL(argno))
		return -1;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("%s must be a one-dimensional array", what)));
	*elems = mq_array_elems(arr, elemtype, nulls, &n);
	return n;
}

/* send_batch's arguments as records; *n: how many */
static MqRecordIn *
batch_args(FunctionCallInfo fcinfo, bool text_input, int *n)
{
	Oid			elemtype = text_input ? TEXTOID : BYTEAOID;
	Datum	   *keys,
			   *vals,
			   *hdrs;
	bool	   *knulls,
			   *vnulls,
			   *hnulls;
	int			nkeys = array_arg(fcinfo, ARG_KEY, elemtype, "keys", &keys, &knulls);
	int			nvals = array_arg(fcinfo, ARG_VALUE, elemtype, "vals", &vals, &vnulls);
	int			nhdrs = array_arg(fcinfo, ARG_HEADERS, JSONBOID, "headers", &hdrs, &hnulls);
	Datum	   *tss;
	bool	   *tsnulls;
	int			nts = -1;
	MqRecordIn *recs;

	if (nvals < 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("vals must not be null"),
				 errhint("Pass an empty array to send nothing; a record with a null value is ARRAY[NULL].")));
	if ((nkeys >= 0 && nkeys != nvals) || (nhdrs >= 0 && nhdrs != nvals))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("keys, vals and headers must have the same length"),
				 errdetail("Got %d keys, %d vals and %d headers.",
						   Max(nkeys, 0), nvals, Max(nhdrs, 0)),
				 errhint("Pass NULL for keys or headers to leave them all null.")));
	if (PG_NARGS() > ARG_BATCH_TIMESTAMP)
	{
		nts = array_arg(fcinfo, ARG_TIMESTAMPS, TIMESTAMPTZOID, "timestamps", &tss, &tsnulls);
		if (nts >= 0 && !PG_ARGISNULL(ARG_BATCH_TIMESTAMP))
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("give timestamps or timestamp, not both")));
		if (nts >= 0 && nts != nvals)
			ereport(ERROR,
					(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
					 errmsg("timestamps and vals must have the same length"),
					 errdetail("Got %d timestamps and %d vals.", nts, nvals)));
	}

	recs = palloc0(sizeof(MqRecordIn) * Max(nvals, 1));
	for (int i = 0; i < nvals; i++)
	{
		if (nkeys >= 0 && !knulls[i])
			recs[i].key = text_input ? text_datum_to_bytea(keys[i], TEXTOID) : DatumGetByteaPP(keys[i]);
		if (!vnulls[i])
			recs[i].value = text_input ? text_datum_to_bytea(vals[i], TEXTOID) : DatumGetByteaPP(vals[i]);
		if (nhdrs >= 0 && !hnulls[i])
			recs[i].headers = hdrs[i];
		if (nts >= 0 && !tsnulls[i])
		{
			recs[i].has_timestamp = true;
			recs[i].timestamp = DatumGetTimestampTz(tss[i]);
		}
		else if (nts < 0 && PG_NARGS() > ARG_BATCH_TIMESTAMP && !PG_ARGISNULL(ARG_BATCH_TIMESTAMP))
		{
			recs[i].has_timestamp = true;
			recs[i].timestamp = PG_GETARG_TIMESTAMPTZ(ARG_BATCH_TIMESTAMP);
		}
	}
	*n = nvals;
	return recs;
}

/* mq.send_batch(topic, keys bytea[], vals bytea[], headers jsonb[], ...) */
Datum
mq_send_batch(PG_FUNCTION_ARGS)
{
	int			n;
	MqRecordIn *recs = batch_args(fcinfo, false, &n);

	send_records(fcinfo, recs, n);
	return (Datum) 0;
}

/* mq.send_batch(topic, keys text[], vals text[], ...) */
Datum
mq_send_batch_text(PG_FUNCTION_ARGS)
{
	int			n;
	MqRecordIn *recs = batch_args(fcinfo, true, &n);

	send_records(fcinfo, recs, n);
	return (Datum) 0;
}

/*
 * mq._check_records(the arguments of mq.send_batch): the checks
 * mq.send_batch makes before it writes, without writing: for records kept
 * to be appended later (a Kafka transaction's, staged until it commits),
 * so that they are refused when they come, as Kafka refuses them.
 */
Datum
mq_check_records(PG_FUNCTION_ARGS)
{
	int			n;
	MqRecordIn *recs = batch_args(fcinfo, false, &n);

	(void) check_records(fcinfo, recs, n);
	PG_RETURN_VOID();
}
