/*-------------------------------------------------------------------------
 *
 * h_fetch.c
 *	  Fetch (v0-v17): reading records of many partitions with one
 *	  statement, encoding them as record batches within the byte limits,
 *	  and long polling by parking the request in the daemon.
 *
 * Loop thread.  The request is decoded once; each attempt is a job of one
 * statement (fetch_sql.c: mq.partitions for the bounds, a LATERAL
 * mq.fetch per partition, so only records below the high watermark are
 * read).  With
 * fewer than min_bytes and time left, the request is parked: it holds no
 * database connection.  A
 * parked fetch is retried at once when a Produce through this daemon
 * commits to one of its topics, when the database says one of its topics
 * moved its high watermark (fetch_watch.c: records appended by any
 * producer, or acknowledged by a replicated partition's followers), every --recheck-ms as a safety net,
 * and a last time at its deadline.  A response
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
 * v12+ is flexible; of its tagged fields only the diverging epoch is
 * sent (current leader, snapshot id and node endpoints are for leader
 * changes and replicas): a partition whose last_fetched_epoch (v12+)
 * shows the fetcher's log diverged is answered with it and no records,
 * and the response goes at once (fetch_epochs.c).  v13+ names topics by
 * id (topic_id.h): a first statement resolves the ids to names, and an
 * id no topic has is UNKNOWN_TOPIC_ID.  v15 moves the replica id into a
 * tagged field, v16 and v17 add tagged fields only.
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
#include "quota.h"
#include "topic_id.h"
#include "util.h"

static FetchState *parked;
static struct event *recheck_ev;

static void fetch_attempt(FetchState *s);
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

/* a new attempt: the statement of this fetch, run by the pool */
static void
fetch_attempt(FetchState *s)
{
	s->watch_gen = fwatch_gen();
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
	if (w->flex && fp->diverging_epoch >= 0)
	{
		kw_uvarint(w, 1);		/* one tagged field: diverging epoch (tag 0) */
		kw_uvarint(w, 0);
		kw_uvarint(w, 4 + 8 + 1);
		kw_i32(w, fp->diverging_epoch);
		kw_i64(w, fp->diverging_end);
		kw_uvarint(w, 0);		/* its own empty tagged fields */
	}
	else
		kw_tags(w);
}

/*
 * Partition fp's error and records (into recs) from its bounds row (row);
 * rows[0..n) are its record rows; *lso and *hw become its bounds.  A
 * fetcher whose log diverged gets no records (fetch_epochs.c).  An offset
 * is out of range below the log start or beyond the log end, as in
 * Kafka: between the high watermark and the log end (a new leader whose
 * high watermark has not caught up with its predecessor's) the answer has
 * no records and no error, and the consumer keeps its position.
 */
static int16_t
encode_bounded(FetchState *s, PGresult *res, int row, const FRow *rows, int n, FPart *fp,
			   KWriter *recs, int64_t *lso, int64_t *hw)
{
	int16_t		code;

	*lso = mq_get_int64(res, row, COL_LSO);
	*hw = mq_get_int64(res, row, COL_HW);
	fetch_epochs_read(res, row, fp);
	code = fetch_epoch_check(res, row, fp);
	if (code == KERR_NONE)
		code = fetch_diverging(res, row, fp, *lso);
	if (fp->diverging_epoch >= 0)
		s->diverged = true;
	if (code != KERR_NONE || fp->diverging_epoch >= 0)
		return code;
	if (fp->offset < *lso ||
		fp->offset > (PQgetisnull(res, row, COL_LEO) ? *hw : mq_get_int64(res, row, COL_LEO)))
		code = KERR_OFFSET_OUT_OF_RANGE;
	if (!fetch_batched(s))
		encode_partition(res, rows, n, fp, &s->bytes, s->max_bytes, recs, s->magic);
	else if (!copy_partition(res, n > 0 ? rows[0].row : -1, fp, &s->bytes, recs))
		s->reread = true;		/* batches across a leader epoch change: read rows */
	return code;
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
	s->diverged = false;
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
			fp->diverging_epoch = -1;
			kw_reset(&recs);
			if (res && bounds[k] >= 0)
				code = encode_bounded(s, res, bounds[k], rows + first, next - first, fp, &recs,
									  &lso, &hw);
			else if (res && s->ids && s->topics[t].len == 0)
				code = KERR_UNKNOWN_TOPIC_ID;
			fp->high_watermark = hw;
			if (fsess_keep(s, k, code, hw, lso, recs.len) || fp->diverging_epoch >= 0)
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
	if (s->final || s->failed || s->diverged || s->bytes >= (size_t) s->min_bytes || left <= 1000 ||
		conn_closed(req->conn))
	{
		if (!s->failed && s->bytes > 0 && !conn_closed(req->conn))
			ahead_after(s, &fetch_ops);
		fsess_sent(s);
		req->throttle_ms = quota_record(req, KQUOTA_FETCH, (int64_t) req->resp.len);
		if (req->api_version >= 1)
			kw_put_i32_at(&req->resp, 0, req->throttle_ms);
		req_finish(req);
		return;
	}
	/* a read-ahead's record counts may have been short: retries go by bytes */
	for (int32_t k = 0; k < s->nparts; k++)
		s->parts[k].max_records = 0;
	if (fwatch_missed(s, s->watch_gen))
	{
		fetch_attempt(s);		/* a topic changed after this read began */
		return;
	}
	s->next = parked;
	if (parked)
		parked->prev = s;
	parked = s;
	tv.tv_sec = left / 1000000;
	tv.tv_usec = left % 1000000;
	evtimer_add(s->timer, &tv);
	fwatch_park(s);
	tv.tv_sec = fwatch_recheck_ms() / 1000;
	tv.tv_usec = (fwatch_recheck_ms() % 1000) * 1000;
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

/* the database says partition's high watermark moved (fetch_watch.c) */
static void
fetch_wake_partition(const char *topic, int32_t partition)
{
	FetchState *s = parked;

	while (s)
	{
		FetchState *next = s->next;

		for (int32_t k = 0; k < s->nparts; k++)
			if (s->parts[k].partition == partition &&
				kslice_eq(s->topics[s->parts[k].topic], topic))
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
			fp->last_fetched_epoch = v >= 12 ? kr_i32(r) : -1;
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
	{
		recheck_ev = evtimer_new(kbase, on_recheck, NULL);
		fwatch_init(fetch_wake_partition);
	}
	if (s->ids)
		fetch_resolve(s, fetch_start);
	else
		fetch_start(s);
}
