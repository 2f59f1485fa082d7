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
 * clients give every record of such a batch its maxTimestamp.  A batch
 * carries the leader epoch its records were written under
 * (fetch_epochs.c), and a new one starts where an epoch starts.
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
	int32_t		epoch_open = 0;
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
		int32_t		epoch = fetch_epoch_at(fp, rows[k].offset);

		if (rows[k].offset >= fp->epochs_end)
			break;				/* epochs not read: the next Fetch */
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
			if (open && (log_append != open_append || (log_append && ts != ts_open) ||
						 epoch != epoch_open))
			{
				batch_end(&e);
				open = false;
			}
			if (!open)
			{
				batch_begin(&e, recs, rows[k].offset, epoch, ts, log_append);
				open = true;
				epoch_open = epoch;
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
 * none), as encode_partition would have: it applied the same limits.  The
 * database does not know leader epochs: each batch gets the epoch of its
 * records (partitionLeaderEpoch is outside the CRC), which is one epoch
 * only if no epoch begins among them; else false, and nothing is copied.
 */
bool
copy_partition(PGresult *res, int row, FPart *fp, size_t *total, KWriter *recs)
{
	int32_t		n;
	const uint8_t *p;
	int			len;
	int64_t		first,
				last;
	int32_t		epoch;
	size_t		start = recs->len;

	if (row < 0 || PQgetisnull(res, row, COL_B_BATCHES))
		return true;
	n = mq_get_int32(res, row, COL_B_RECORDS);
	p = (const uint8_t *) PQgetvalue(res, row, COL_B_BATCHES);
	len = PQgetlength(res, row, COL_B_BATCHES);
	if (n <= 0 || len < KBATCH_HEADER_SIZE)
		return true;
	first = 0;
	for (int i = 0; i < 8; i++)
		first = (first << 8) | p[i];
	last = mq_get_int64(res, row, COL_OFFSET) - 1;
	epoch = fetch_epoch_at(fp, first);
	if (last >= fp->epochs_end || fetch_epoch_at(fp, last) != epoch)
		return false;
	kw_raw(recs, p, len);
	for (size_t q = start; q + 12 <= recs->len;)
	{
		const uint8_t *b = recs->buf + q + 8;
		uint32_t	blen = ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16) | ((uint32_t) b[2] << 8) | b[3];

		kw_put_i32_at(recs, q + 12, epoch);
		q += 12 + blen;
	}
	fp->next_offset = last + 1;
	fp->returned = n;
	fp->returned_bytes = (size_t) mq_get_int64(res, row, COL_B_BYTES);
	*total += fp->returned_bytes;
	return true;
}
