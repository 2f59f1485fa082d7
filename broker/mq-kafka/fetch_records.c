/*-------------------------------------------------------------------------
 *
 * fetch_records.c
 *	  The records of one partition of a Fetch response, from the rows of
 *	  its statement (h_fetch.c): record batches (v4+), or message sets
 *	  down-converted to format v0 or v1 (v0-v3, msgset.h).  Loop thread.
 *
 * With v4+ the database encodes the batches by default (mq.kafka_fetch,
 * src/kafka_fetch.c, under the same rules as below, byte for byte), and
 * they are copied (copy_partition); encode_partition encodes rows of
 * mq.fetch here for v0-v3, and for v4+ with --fetch-encoder=daemon.
 *
 * Byte limits (KIP-74): records are added while the partition's and the
 * response's limits allow, except that the first record of the response
 * is always returned whole, so a consumer can always make progress.
 * Records keep mq's timestamp and type (mq.record.timestamp,
 * timestamp_type) and headers (header_list); a new batch starts when the
 * type changes, and for LogAppendTime when the millisecond does, since
 * clients give every record of such a batch its maxTimestamp.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include "batch.h"
#include "fetch.h"
#include "kjson.h"
#include "msgset.h"
#include "pgbinary.h"
#include "util.h"

/* 2000-01-01 (PostgreSQL's epoch) in Unix milliseconds */
#define PG_EPOCH_MS INT64_C(946684800000)

#define MAX_HEADERS 1024

/* a record's timestamp (ms), its type, and its headers */
static int64_t
row_meta(PGresult *res, int row, bool *log_append, KSlice *hk, KSlice *hv, int *nh)
{
	int			nv = 0;

	*log_append = !PQgetisnull(res, row, COL_LOG_APPEND) &&
		PQgetvalue(res, row, COL_LOG_APPEND)[0] == 1;
	*nh = 0;
	if (!PQgetisnull(res, row, COL_HKEYS) &&
		(!pg_array_elems(PQgetvalue(res, row, COL_HKEYS), PQgetlength(res, row, COL_HKEYS), hk,
						 MAX_HEADERS, nh) ||
		 !pg_array_elems(PQgetvalue(res, row, COL_HVALS), PQgetlength(res, row, COL_HVALS), hv,
						 MAX_HEADERS, &nv) ||
		 nv != *nh))
		*nh = 0; /* not a list we can read: no headers */
	if (PQgetisnull(res, row, COL_TS))
		return 0;
	/* binary timestamptz: microseconds since 2000-01-01 UTC */
	return mq_get_int64(res, row, COL_TS) / 1000 + PG_EPOCH_MS;
}

/* a record's size as the byte limits count it */
static size_t
record_size(int klen, int vlen, const KSlice *hk, const KSlice *hv, int nh)
{
	size_t		size = (klen > 0 ? klen : 0) + (vlen > 0 ? vlen : 0) + 24;

	for (int h = 0; h < nh; h++)
		size += 4 + (hk[h].len > 0 ? hk[h].len : 0) + (hv[h].len > 0 ? hv[h].len : 0);
	return size;
}

/*
 * The records of one partition (rows[0..n), in offset order) as batches;
 * fp->next_offset becomes the offset after the last one written.
 */
void
encode_partition(PGresult *res, const FRow *rows, int n, FPart *fp, size_t *total,
				 int32_t max_total, KWriter *recs, int magic)
{
	static KSlice hk[MAX_HEADERS],
				hv[MAX_HEADERS];
	KBatchEnc	e;
	bool		open = false;
	bool		open_append = false;
	int64_t		ts_open = 0;
	size_t		part = 0;

	for (int k = 0; k < n; k++)
	{
		int			row = rows[k].row;
		int64_t		ts;
		int			klen = PQgetisnull(res, row, COL_KEY) ? -1 : PQgetlength(res, row, COL_KEY);
		int			vlen = PQgetisnull(res, row, COL_VALUE) ? -1 : PQgetlength(res, row, COL_VALUE);
		int			nh;
		bool		log_append;
		size_t		size;

		ts = row_meta(res, row, &log_append, hk, hv, &nh);
		size = magic < 2 ? msgset_size(magic, klen, vlen) :
			record_size(klen, vlen, hk, hv, nh) + (open ? 0 : KBATCH_HEADER_SIZE);
		if (*total > 0 && (part + size > (size_t) fp->max_bytes || *total + size > (size_t) max_total))
			break;				/* full */
		if (magic < 2)
			msgset_add(recs, magic, rows[k].offset, ts, log_append, PQgetvalue(res, row, COL_KEY),
					   klen, PQgetvalue(res, row, COL_VALUE), vlen);
		else
		{
			if (open && (log_append != open_append || (log_append && ts != ts_open)))
			{
				batch_end(&e);
				open = false;
			}
			if (!open)
			{
				batch_begin(&e, recs, rows[k].offset, 0, ts, log_append);
				open = true;
				open_append = log_append;
				ts_open = ts;
			}
			batch_add(&e, rows[k].offset, ts, PQgetvalue(res, row, COL_KEY), klen,
					  PQgetvalue(res, row, COL_VALUE), vlen, hk, hv, nh);
		}
		part += size;
		*total += size;
		fp->next_offset = rows[k].offset + 1;
		fp->returned++;
		fp->returned_bytes = part;
	}
	if (open)
		batch_end(&e);
}

/*
 * The batches mq.kafka_fetch encoded for one partition (row of res, -1:
 * none), as encode_partition would have: it applied the same limits.
 */
void
copy_partition(PGresult *res, int row, FPart *fp, size_t *total, KWriter *recs)
{
	int32_t		n;

	if (row < 0 || PQgetisnull(res, row, COL_B_BATCHES))
		return;
	n = mq_get_int32(res, row, COL_B_RECORDS);
	if (n <= 0)
		return;
	kw_raw(recs, PQgetvalue(res, row, COL_B_BATCHES), PQgetlength(res, row, COL_B_BATCHES));
	fp->next_offset = mq_get_int64(res, row, COL_OFFSET);
	fp->returned = n;
	fp->returned_bytes = (size_t) mq_get_int64(res, row, COL_B_BYTES);
	*total += fp->returned_bytes;
}
