/*-------------------------------------------------------------------------
 *
 * h_fetch.c
 *	  Fetch (v0-v17): reading records of many partitions with one
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
 * The records of each partition are encoded within the byte limits
 * (KIP-74): for v4+ by the database (mq.kafka_fetch, FETCH_BATCH_SQL),
 * whose batches fetch_records.c copies, else by fetch_records.c from rows.
 *
 * v0-v3 answer message sets (msgset.h), down-converted as Kafka does:
 * v0-v1 in format v0 (no timestamps), v2-v3 in format v1 (each record's
 * timestamp, and its type in the attributes); headers are dropped.
 * v12+ is flexible (its tagged fields -- diverging epoch, current leader,
 * snapshot id, node endpoints -- are for replicas and leader changes and
 * are not sent); v13+ names topics by id (topic_id.h): a first statement
 * resolves the ids to names, and an id no topic has is UNKNOWN_TOPIC_ID.
 * v15 moves the replica id into a tagged field, v16 and v17 add tagged
 * fields only; last_fetched_epoch (v12+) is for replicas and is ignored.
 * Fetch sessions (KIP-227, v7+) are fetch_session.c's: after decoding, it
 * turns an incremental request into its session's partitions, and the
 * response leaves out the partitions it says have nothing new.  The
 * current leader epoch (v9+) is checked, and each batch carries its
 * records' leader epoch (fetch_epochs.c).
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
#include "msgset.h"
#include "pgbinary.h"
#include "topic_id.h"
#include "util.h"

/* FETCH_EPOCHS + 1 (fetch_epochs.c) */
#define FETCH_EPOCHS_SQL "9"

/* the epochs of a partition's records from r0.o on, for both statements */
#define FETCH_EPOCHS_JOIN \
	" LEFT JOIN LATERAL (SELECT array_agg(q.leader_epoch ORDER BY q.leader_epoch) AS eps," \
	"        array_agg(q.start_offset ORDER BY q.leader_epoch) AS starts FROM (" \
	"     SELECT w.leader_epoch, w.start_offset FROM (" \
	"       SELECT h.leader_epoch, h.start_offset," \
	"              lead(h.start_offset) OVER (ORDER BY h.leader_epoch) AS next_start" \
	"         FROM mq.leader_epochs h WHERE r0.ep > 0 AND h.topic = r0.t AND h.partition = r0.p) w" \
	"      WHERE w.next_start IS NULL OR w.next_start > r0.o" \
	"      ORDER BY w.leader_epoch LIMIT " FETCH_EPOCHS_SQL ") q) e ON r0.lso IS NOT NULL"

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
	"WITH r0 AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, u.n, u.mb, s.log_start_offset AS lso," \
	"                  s.high_watermark AS hw, s.log_end_offset AS leo, s.leader_epoch AS ep" \
	"             FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::int4[])" \
	"                  WITH ORDINALITY AS u(t, p, o, n, mb, i)" \
	"             LEFT JOIN mq.partitions s ON s.topic = u.t AND s.partition = u.p)," \
	" r AS (SELECT * FROM r0 WHERE r0.lso IS NOT NULL)" \
	" SELECT r0.i, CASE WHEN r0.lso IS NULL AND NOT mq.has_topic_privilege(r0.t, 'read') THEN -1" \
	"        ELSE r0.lso END, r0.hw, NULL::int8, NULL::timestamptz, NULL::bytea, NULL::bytea," \
	"        NULL::bool, NULL::text[], NULL::bytea[], r0.ep, e.eps, e.starts FROM r0" \
	FETCH_EPOCHS_JOIN \
	" UNION ALL" \
	" SELECT r.i, NULL, NULL, f.msg_offset, coalesce(f.timestamp, f.created_at), f.key, f.value," \
	"        f.timestamp_type = 'LogAppendTime'," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.key" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END," \
	"        CASE WHEN f.header_list IS NOT NULL THEN ARRAY(SELECT h.value" \
	"          FROM unnest(f.header_list) WITH ORDINALITY h(key, value, n) ORDER BY h.n) END," \
	"        NULL::int4, NULL::int4[], NULL::int8[]" \
	"   FROM r CROSS JOIN LATERAL mq.fetch(r.t, r.p, CASE WHEN r.o >= r.lso AND r.o < r.hw" \
	"                                      THEN r.o ELSE r.leo END, r.n, max_bytes => r.mb) f"


/*
 * v4+: the same bounds rows, then a row per partition with its records as
 * record batches (mq.kafka_fetch, in a select list: its rows stream).
 */
#define FETCH_BATCH_SQL \
	"WITH r0 AS (SELECT u.i::int4 AS i, u.t, u.p, u.o, s.log_start_offset AS lso," \
	"                  s.high_watermark AS hw, s.log_end_offset AS leo, s.leader_epoch AS ep" \
	"             FROM unnest($1::text[], $2::int4[], $3::int8[]) WITH ORDINALITY AS u(t, p, o, i)" \
	"             LEFT JOIN mq.partitions s ON s.topic = u.t AND s.partition = u.p)" \
	" SELECT r0.i, CASE WHEN r0.lso IS NULL AND NOT mq.has_topic_privilege(r0.t, 'read') THEN -1" \
	"        ELSE r0.lso END, r0.hw, NULL::int8, NULL::int4, NULL::int8, NULL::bytea," \
	"        NULL::bool, NULL::text[], NULL::bytea[], r0.ep, e.eps, e.starts FROM r0" \
	FETCH_EPOCHS_JOIN \
	" UNION ALL" \
	" SELECT (b.f).item, NULL, NULL, (b.f).next_offset, (b.f).records, (b.f).bytes, (b.f).batches," \
	"        NULL::bool, NULL::text[], NULL::bytea[], NULL::int4, NULL::int4[], NULL::int8[]" \
	"   FROM (SELECT mq.kafka_fetch(" \
	"           ARRAY(SELECT CASE WHEN r0.lso IS NOT NULL THEN r0.t END FROM r0 ORDER BY r0.i), $2," \
	"           ARRAY(SELECT CASE WHEN r0.o >= r0.lso AND r0.o < r0.hw THEN r0.o ELSE r0.leo END" \
	"                   FROM r0 ORDER BY r0.i), $4, $5, $6) AS f OFFSET 0) b"

/* Fetch v4+ answered from the database's batches (not --fetch-encoder=daemon) */
static bool
batched(const FetchState *s)
{
	return s->magic == 2 && !kconfig.fetch_in_daemon && !s->rows_only;
}

/*
 * bounds[k] of a partition the role may not see nor read: Kafka's
 * TOPIC_AUTHORIZATION_FAILED, as SQL's 42501 (whether the topic exists or
 * not); one it may read but that is not there: UNKNOWN_TOPIC_OR_PARTITION
 */
#define BOUNDS_UNAUTHORIZED (-2)

static FetchState *parked;
static struct event *recheck_ev;

static void fetch_attempt(FetchState *s);
static void fetch_job(FetchState *s);
static void fetch_done(KRequest *req);
static void fetch_decode_forgotten(KReader *r, FetchState *s);

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
	free(s->ids);
	free(s->names);
	free(s->parts);
	free(s->forgotten);
	free(s->sess_keys);
	free(s);
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
 * (-1: none, the partition is unknown; BOUNDS_UNAUTHORIZED), and the record rows sorted by
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
			else if (!PQgetisnull(res, row, COL_LSO))
				bounds[i - 1] = BOUNDS_UNAUTHORIZED;
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
	st = kjob_add(&s->job, batched(s) ? FETCH_BATCH_SQL : FETCH_SQL, 1);
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
	if (batched(s))
		kstmt_int(st, MQ_INT4OID, s->max_bytes > 0 ? s->max_bytes : 1);
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
	if (req->api_version >= 4)
		kw_i64(w, hw);			/* last stable offset: mq has no open transactions */
	if (req->api_version >= 5)
		kw_i64(w, lso);
	if (req->api_version >= 4)
		kw_array(w, 0);			/* aborted transactions */
	if (req->api_version >= 11)
		kw_i32(w, -1);			/* preferred read replica */
	kw_bytes(w, recs->buf, (int32_t) recs->len);
	kw_tags(w);
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
	size_t		topics_at;
	int32_t		ntopics = 0;

	kw_reset(w);
	kw_init(&recs);
	s->bytes = 0;
	s->failed = kstmt_failed(st, &failed_code);
	if (s->failed && failed_code == KERR_UNKNOWN_SERVER_ERROR)
		mq_log_warning("fetch: %s", st->err.message);
	if (res)
		fetch_order(res, s->nparts, bounds, &rows, &nrows);
	if (req->api_version >= 1)
		kw_i32(w, 0);			/* throttle */
	if (req->api_version >= 7)
	{
		kw_i16(w, KERR_NONE);
		kw_i32(w, s->sess_id);
	}
	topics_at = kw_later(w);
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		size_t		count_at,
					topic_at = w->len;
		int32_t		cnt = 0;

		if (s->ids)
			kw_uuid(w, s->ids + 16 * t);
		else
			kw_strn(w, s->topics[t].p, s->topics[t].len);
		count_at = kw_later(w);
		for (; k < s->nparts && s->parts[k].topic == t; k++)
		{
			FPart	   *fp = &s->parts[k];
			int64_t		lso = -1,
						hw = -1;
			int16_t		code = !res ? failed_code : bounds[k] == BOUNDS_UNAUTHORIZED ? KERR_TOPIC_AUTHORIZATION_FAILED :
				KERR_UNKNOWN_TOPIC_OR_PARTITION;
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
				fetch_epochs_read(res, bounds[k], fp);
				code = fetch_epoch_check(res, bounds[k], fp);
				if (code == KERR_NONE && (fp->offset < lso || fp->offset > hw))
					code = KERR_OFFSET_OUT_OF_RANGE;
				if ((code == KERR_NONE || code == KERR_OFFSET_OUT_OF_RANGE) && !batched(s))
					encode_partition(res, rows + first, next - first, fp, &s->bytes, s->max_bytes,
									 &recs, s->magic);
				else if ((code == KERR_NONE || code == KERR_OFFSET_OUT_OF_RANGE) &&
						 !copy_partition(res, next > first ? rows[first].row : -1, fp, &s->bytes, &recs))
					s->reread = true;	/* batches across a leader epoch change: read rows */
			}
			else if (res && s->ids && s->topics[t].len == 0)
				code = KERR_UNKNOWN_TOPIC_ID;
			fp->high_watermark = hw;
			if (fsess_keep(s, k, code, hw, lso, recs.len))
			{
				write_partition(req, fp, code, lso, hw, &recs);
				cnt++;
			}
		}
		if (cnt == 0 && s->sess_incremental)
		{
			w->len = topic_at;	/* nothing new in the topic */
			continue;
		}
		kw_fill_count(w, count_at, cnt);
		kw_tags(w);
		ntopics++;
	}
	kw_fill_count(w, topics_at, ntopics);
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
	if (s->reread)
	{
		s->reread = false;
		s->rows_only = true;
		fetch_attempt(s);
		return;
	}
	left = s->deadline_us - mq_now_us();
	if (s->final || s->failed || s->bytes >= (size_t) s->min_bytes || left <= 1000 ||
		conn_closed(req->conn))
	{
		if (!s->failed && s->bytes > 0 && !conn_closed(req->conn))
			ahead_after(s, &fetch_ops);
		fsess_sent(s);
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

	if (v <= 14)
		(void) kr_i32(r);		/* replica_id */
	max_wait = kr_i32(r);
	s->min_bytes = kr_i32(r);
	s->max_bytes = v >= 3 ? kr_i32(r) : INT32_MAX;
	s->magic = v >= 4 ? 2 : v >= 2;
	if (v >= 4)
		(void) kr_i8(r);		/* isolation level: LSO is the high watermark */
	s->session_epoch = -1;
	if (v >= 7)
	{
		s->session_id = kr_i32(r);
		s->session_epoch = kr_i32(r);
	}
	s->ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	if (v >= 13)
		s->ids = mq_malloc0(16 * (s->ntopics > 0 ? s->ntopics : 1));
	s->parts = mq_malloc0(sizeof(FPart) * (kr_left(r) / 16 + 1));
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
	{
		int32_t		n;

		if (v >= 13)
		{
			KSlice		id = kr_uuid(r);

			if (id.len == 16)
				memcpy(s->ids + 16 * t, id.p, 16);
			s->topics[t].p = (const uint8_t *) "";
			s->topics[t].len = 0;	/* until resolved */
		}
		else
			s->topics[t] = kr_str(r);
		if (s->topics[t].len < 0)
			r->err = true;		/* a topic name is never null */
		n = kr_array(r, 16);
		for (int32_t i = 0; i < n && !r->err; i++)
		{
			FPart	   *fp = &s->parts[s->nparts++];

			fp->topic = t;
			fp->partition = kr_i32(r);
			fp->current_epoch = v >= 9 ? kr_i32(r) : -1;
			fp->offset = kr_i64(r);
			if (v >= 12)
				(void) kr_i32(r);	/* last fetched epoch */
			if (v >= 5)
				(void) kr_i64(r);	/* log start offset */
			fp->max_bytes = kr_i32(r);
			kr_tags(r);
		}
		kr_tags(r);
	}
	if (v >= 7)
		fetch_decode_forgotten(r, s);
	s->deadline_us = mq_now_us() + (int64_t) (max_wait > 0 ? max_wait : 0) * 1000;
	return !r->err && s->max_bytes >= 0;
}

/* forgotten_topics_data (v7+): partitions leaving the session */
static void
fetch_decode_forgotten(KReader *r, FetchState *s)
{
	int32_t		nt = kr_array(r, 6);

	s->forgotten = mq_malloc0(sizeof(FForgotten) * (kr_left(r) / 4 + 1));
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		KSlice		key = s->req->api_version >= 13 ? kr_uuid(r) : kr_str(r);
		int32_t		n = kr_array(r, 4);

		for (int32_t i = 0; i < n && !r->err; i++)
		{
			s->forgotten[s->nforgotten].key = key;
			s->forgotten[s->nforgotten++].partition = kr_i32(r);
		}
		kr_tags(r);
	}
}

/* a fetch whose topics are known: answer from a read-ahead or read */
static void
fetch_start(FetchState *s)
{
	if (!ahead_take(s, &fetch_ops))
		fetch_attempt(s);
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
	if (!fsess_begin(s))
	{
		req_finish(req);
		return;
	}
	s->timer = evtimer_new(kbase, on_deadline, s);
	if (recheck_ev == NULL)
		recheck_ev = evtimer_new(kbase, on_recheck, NULL);
	if (s->ids)
		fetch_resolve(s, fetch_start);
	else
		fetch_start(s);
}
