/*-------------------------------------------------------------------------
 *
 * h_fetch.c
 *	  Fetch (v4-v11): reading records of many partitions with one
 *	  statement, encoding them as record batches within the byte limits,
 *	  and long polling by parking the request in the daemon.
 *
 * Loop thread.  The request is decoded once; each attempt is a job of one
 * statement (mq.partitions for the bounds, a LATERAL mq.fetch per
 * partition, so only records below the high watermark are read).  With
 * fewer than min_bytes and time left, the request is parked: it holds no
 * database connection.  A
 * parked fetch is retried at once when a Produce through this daemon
 * commits to one of its topics, every --recheck-ms for records appended
 * by other producers (SQL), and a last time at its deadline.  A response
 * that leaves records behind starts the consumer's next read at once
 * (fetch_ahead.c), and the next Fetch takes it if it asks for just that.
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

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "fetch.h"
#include "kerr.h"
#include "kjson.h"
#include "pgbinary.h"
#include "util.h"

/*
 * One row per partition with its bounds (record columns null), then the
 * records, with no ORDER BY: rows are put in order by the daemon
 * (fetch_order), which costs less than a sort in the backend.  Each
 * partition's records stop before the one that would pass the partition's
 * byte limit ($5), which mq.fetch's max_bytes counts as it reads (key and
 * value sizes plus 24 bytes a record; the first record always passes), so
 * records that cannot be sent are neither read nor transferred; the
 * daemon checks the limits again, so the cut is only an economy.
 */
#define FETCH_SQL \
	"WITH r AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, u.n, u.mb, s.log_start_offset AS lso," \
	"                  s.high_watermark AS hw, s.log_end_offset AS leo" \
	"             FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::int4[])" \
	"                  WITH ORDINALITY AS u(t, p, o, n, mb, i)" \
	"             JOIN mq.partitions s ON s.topic = u.t AND s.partition = u.p)" \
	" SELECT r.i, r.lso, r.hw, NULL::int8, NULL::timestamptz, NULL::bytea, NULL::bytea," \
	"        NULL::bool, NULL::text[], NULL::bytea[] FROM r" \
	" UNION ALL" \
	" SELECT r.i, NULL, NULL, f.msg_offset, coalesce(f.timestamp, f.created_at), f.key, f.value," \
	"        f.timestamp_type = 'LogAppendTime'," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.key" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.value" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END" \
	"   FROM r CROSS JOIN LATERAL mq.fetch(r.t, r.p, CASE WHEN r.o >= r.lso AND r.o < r.hw" \
	"                                      THEN r.o ELSE r.leo END, r.n, max_bytes => r.mb) f"

/* result columns */
enum
{
	COL_I,						/* the partition's index in the request, from 1 */
	COL_LSO,					/* bounds row: log start offset, high watermark */
	COL_HW,
	COL_OFFSET,					/* record row: offset (null on a bounds row) */
	COL_TS,
	COL_KEY,
	COL_VALUE,
	COL_LOG_APPEND,
	COL_HKEYS,
	COL_HVALS
};

/* a record row of the result, for putting rows in order */
typedef struct FRow
{
	int32_t		part;			/* COL_I */
	int			row;
	int64_t		offset;
} FRow;

/* 2000-01-01 (PostgreSQL's epoch) in Unix milliseconds */
#define PG_EPOCH_MS INT64_C(946684800000)

static FetchState *parked;
static struct event *recheck_ev;

static void fetch_attempt(FetchState *s);
static void fetch_job(FetchState *s);
static void fetch_done(KRequest *req);

/* what the read-ahead runs of this handler's */
static const FetchOps fetch_ops = {fetch_job, fetch_done};

static void
fetch_state_free(void *p)
{
	FetchState *s = p;

	if (s->timer)
		event_free(s->timer);
	kjob_free(&s->job);
	free(s->topics);
	free(s->parts);
	free(s);
}

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
static void
encode_partition(PGresult *res, const FRow *rows, int n, FPart *fp, size_t *total,
				 int32_t max_total, KWriter *recs)
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
		size = record_size(klen, vlen, hk, hv, nh) + (open ? 0 : KBATCH_HEADER_SIZE);
		if (*total > 0 && (part + size > (size_t) fp->max_bytes || *total + size > (size_t) max_total))
			break;				/* full */
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
		part += size;
		*total += size;
		fp->next_offset = rows[k].offset + 1;
		fp->returned++;
		fp->returned_bytes = part;
	}
	if (open)
		batch_end(&e);
}

static int
frow_cmp(const void *a, const void *b)
{
	const FRow *x = a,
			   *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * The result's rows in order: bounds[k] is the bounds row of partition k
 * (-1: none, the partition is unknown), and the record rows sorted by
 * partition and offset, in *rows (*nrows of them; the caller frees).  The
 * backend sends them in that order already, so the sort is only a check.
 */
static void
fetch_order(PGresult *res, int32_t nparts, int *bounds, FRow **rows, int *nrows)
{
	int			ntup = PQntuples(res);
	bool		sorted = true;

	*rows = mq_malloc0(sizeof(FRow) * (ntup > 0 ? ntup : 1));
	*nrows = 0;
	for (int32_t k = 0; k < nparts; k++)
		bounds[k] = -1;
	for (int row = 0; row < ntup; row++)
	{
		int32_t		i = mq_get_int32(res, row, COL_I);
		FRow	   *r;

		if (i < 1 || i > nparts)
			continue;
		if (PQgetisnull(res, row, COL_OFFSET))
		{
			if (!PQgetisnull(res, row, COL_LSO) && !PQgetisnull(res, row, COL_HW))
				bounds[i - 1] = row;
			continue;
		}
		r = &(*rows)[(*nrows)++];
		r->part = i - 1;
		r->row = row;
		r->offset = mq_get_int64(res, row, COL_OFFSET);
		if (*nrows > 1 && frow_cmp(r - 1, r) > 0)
			sorted = false;
	}
	if (!sorted)
		qsort(*rows, *nrows, sizeof(FRow), frow_cmp);
}

/* the statement that reads s's partitions, as s->job */
static void
fetch_job(FetchState *s)
{
	MqArray		a[5];
	static const Oid elem[5] = {MQ_TEXTOID, MQ_INT4OID, MQ_INT8OID, MQ_INT4OID, MQ_INT4OID};
	static const Oid arr[5] = {MQ_TEXTARRAYOID, MQ_INT4ARRAYOID, MQ_INT8ARRAYOID,
				MQ_INT4ARRAYOID, MQ_INT4ARRAYOID};
	KStmt	   *st;

	kjob_free(&s->job);
	st = kjob_add(&s->job, FETCH_SQL, 1);
	for (int i = 0; i < 5; i++)
		mq_array_init(&a[i], elem[i]);
	for (int32_t k = 0; k < s->nparts; k++)
	{
		const FPart *fp = &s->parts[k];
		int32_t		cnt = fp->max_records > 0 ? fp->max_records : fp->max_bytes / 32 + 1;

		mq_array_add(&a[0], s->topics[fp->topic].p, s->topics[fp->topic].len);
		mq_array_add_int32(&a[1], fp->partition);
		mq_array_add_int64(&a[2], fp->offset);
		mq_array_add_int32(&a[3], cnt < 1 ? 1 : cnt > 10000 ? 10000 : cnt);
		mq_array_add_int32(&a[4], fp->max_bytes > 0 ? fp->max_bytes : 1);
	}
	for (int i = 0; i < 5; i++)
	{
		int			len;
		const char *b = mq_array_bytes(&a[i], &len);

		kstmt_binary(st, arr[i], b, len);
		mq_array_free(&a[i]);
	}
}

/* a new attempt: the statement of this fetch, run by the pool */
static void
fetch_attempt(FetchState *s)
{
	fetch_job(s);
	pool_run(s->req, &s->job, fetch_done);
}

/* one partition's response entry */
static void
write_partition(KRequest *req, const FPart *fp, int16_t code, int64_t lso, int64_t hw,
				const KWriter *recs)
{
	KWriter    *w = &req->resp;

	kw_i32(w, fp->partition);
	kw_i16(w, code);
	kw_i64(w, hw);
	kw_i64(w, hw);				/* last stable offset: mq has no open transactions */
	if (req->api_version >= 5)
		kw_i64(w, lso);
	kw_i32(w, 0);				/* aborted transactions */
	if (req->api_version >= 11)
		kw_i32(w, -1);			/* preferred read replica */
	kw_bytes(w, recs->buf, (int32_t) recs->len);
}

/* the response from the attempt's result */
static void
fetch_encode(KRequest *req, FetchState *s)
{
	KWriter    *w = &req->resp;
	KStmt	   *st = &s->job.stmts[0];
	PGresult   *res = st->res;
	int16_t		failed_code;
	int32_t		k = 0;
	int		   *bounds = mq_malloc0(sizeof(int) * (s->nparts > 0 ? s->nparts : 1));
	FRow	   *rows = NULL;
	int			nrows = 0,
				next = 0;
	KWriter		recs;

	kw_reset(w);
	kw_init(&recs);
	s->bytes = 0;
	s->failed = kstmt_failed(st, &failed_code);
	if (s->failed && failed_code == KERR_UNKNOWN_SERVER_ERROR)
		mq_log_warning("fetch: %s", st->err.message);
	if (res)
		fetch_order(res, s->nparts, bounds, &rows, &nrows);
	kw_i32(w, 0);				/* throttle */
	if (req->api_version >= 7)
	{
		kw_i16(w, KERR_NONE);
		kw_i32(w, 0);			/* session id: no fetch sessions */
	}
	kw_i32(w, s->ntopics);
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		size_t		count_at;
		int32_t		cnt = 0;

		kw_strn(w, s->topics[t].p, s->topics[t].len);
		count_at = w->len;
		kw_i32(w, 0);
		for (; k < s->nparts && s->parts[k].topic == t; k++, cnt++)
		{
			FPart	   *fp = &s->parts[k];
			int64_t		lso = -1,
						hw = -1;
			int16_t		code = res ? KERR_UNKNOWN_TOPIC_OR_PARTITION : failed_code;
			int			first = next;

			while (next < nrows && rows[next].part == k)
				next++;
			fp->next_offset = fp->offset;
			fp->returned = 0;
			fp->returned_bytes = 0;
			kw_reset(&recs);
			if (res && bounds[k] >= 0)
			{
				lso = mq_get_int64(res, bounds[k], COL_LSO);
				hw = mq_get_int64(res, bounds[k], COL_HW);
				code = (fp->offset < lso || fp->offset > hw) ? KERR_OFFSET_OUT_OF_RANGE : KERR_NONE;
				encode_partition(res, rows + first, next - first, fp, &s->bytes, s->max_bytes,
								 &recs);
			}
			fp->high_watermark = hw;
			write_partition(req, fp, code, lso, hw, &recs);
		}
		kw_put_i32_at(w, count_at, cnt);
	}
	kw_free(&recs);
	free(rows);
	free(bounds);
}

static void
unpark(FetchState *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		parked = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	evtimer_del(s->timer);
}

static void
retry(FetchState *s, bool final)
{
	unpark(s);
	s->final = final;
	fetch_attempt(s);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	retry(arg, true);
}

static void
on_recheck(evutil_socket_t fd, short what, void *arg)
{
	while (parked)
		retry(parked, false);
}

static void
fetch_done(KRequest *req)
{
	FetchState *s = req->state;
	int64_t		left;
	struct timeval tv;

	fetch_encode(req, s);
	left = s->deadline_us - mq_now_us();
	if (s->final || s->failed || s->bytes >= (size_t) s->min_bytes || left <= 1000 ||
		conn_closed(req->conn))
	{
		if (!s->failed && s->bytes > 0 && !conn_closed(req->conn))
			ahead_after(s, &fetch_ops);
		req_finish(req);
		return;
	}
	/* a read-ahead's record counts may have been short: retries go by bytes */
	for (int32_t k = 0; k < s->nparts; k++)
		s->parts[k].max_records = 0;
	s->next = parked;
	if (parked)
		parked->prev = s;
	parked = s;
	tv.tv_sec = left / 1000000;
	tv.tv_usec = left % 1000000;
	evtimer_add(s->timer, &tv);
	tv.tv_sec = kconfig.recheck_ms / 1000;
	tv.tv_usec = (kconfig.recheck_ms % 1000) * 1000;
	if (!evtimer_pending(recheck_ev, NULL))
		evtimer_add(recheck_ev, &tv);
}

void
fetch_wake_topic(const char *topic)
{
	FetchState *s = parked;

	while (s)
	{
		FetchState *next = s->next;

		for (int32_t t = 0; t < s->ntopics; t++)
			if (kslice_eq(s->topics[t], topic))
			{
				retry(s, false);
				break;
			}
		s = next;
	}
}

/* decode the request; false if malformed */
static bool
fetch_decode(KRequest *req, FetchState *s)
{
	KReader    *r = &req->body;
	int16_t		v = req->api_version;
	int32_t		max_wait;

	(void) kr_i32(r);			/* replica_id */
	max_wait = kr_i32(r);
	s->min_bytes = kr_i32(r);
	s->max_bytes = kr_i32(r);
	(void) kr_i8(r);			/* isolation level: LSO is the high watermark */
	if (v >= 7)
	{
		(void) kr_i32(r);		/* session id */
		(void) kr_i32(r);		/* session epoch */
	}
	s->ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	s->parts = mq_malloc0(sizeof(FPart) * (kr_left(r) / 16 + 1));
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
	{
		int32_t		n;

		s->topics[t] = kr_str(r);
		if (s->topics[t].len < 0)
			r->err = true;		/* a topic name is never null */
		n = kr_array(r, 16);
		for (int32_t i = 0; i < n && !r->err; i++)
		{
			FPart	   *fp = &s->parts[s->nparts++];

			fp->topic = t;
			fp->partition = kr_i32(r);
			if (v >= 9)
				(void) kr_i32(r);	/* current leader epoch */
			fp->offset = kr_i64(r);
			if (v >= 5)
				(void) kr_i64(r);	/* log start offset */
			fp->max_bytes = kr_i32(r);
		}
	}
	s->deadline_us = mq_now_us() + (int64_t) (max_wait > 0 ? max_wait : 0) * 1000;
	return !r->err && s->max_bytes >= 0;
}

void
h_fetch(KRequest *req)
{
	FetchState *s = mq_malloc0(sizeof(FetchState));

	req->state = s;
	req->free_state = fetch_state_free;
	s->req = req;
	if (!fetch_decode(req, s))
	{
		req_abort(req);
		return;
	}
	s->timer = evtimer_new(kbase, on_deadline, s);
	if (recheck_ev == NULL)
		recheck_ev = evtimer_new(kbase, on_recheck, NULL);
	if (!ahead_take(s, &fetch_ops))
		fetch_attempt(s);
}
