/*-------------------------------------------------------------------------
 *
 * h_offsets.c
 *	  ListOffsets (v1-v3), OffsetCommit (v2-v7) and OffsetFetch (v1-v5).
 *	  Decoded and answered on a database worker; OffsetCommit first asks
 *	  the group coordinator (loop thread) whether the member and
 *	  generation may commit.
 *
 * Committed offsets are mq's own (mq.commit_offset, mq.committed_offset,
 * with the metadata read from mq.consumer_offset), so SQL consumers,
 * mqctl and Kafka clients share them.  ListOffsets by timestamp bisects
 * over created_at (the append time), as mqctl's reset-offsets does.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "kerr.h"
#include "util.h"

#define TS_SQL "SELECT (extract(epoch FROM created_at) * 1000)::int8 FROM mq.fetch($1, $2, $3, 1)"

static PGresult *
exec_tp(PGconn *db, const char *sql, const char *topic, int32_t partition, const int64_t *off,
		MqError *err)
{
	MqParams	params;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_int(&params, MQ_INT4OID, partition);
	if (off)
		mq_param_int(&params, MQ_INT8OID, *off);
	return kdb_exec(db, sql, &params, 0, err);
}

/* first offset in [lo, hi) appended at or after ts (ms), hi if none */
static int64_t
offset_for_time(PGconn *db, const char *topic, int32_t partition, int64_t lo, int64_t hi,
				int64_t ts, int64_t *found_ts, MqError *err)
{
	*found_ts = -1;
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		PGresult   *res = exec_tp(db, TS_SQL, topic, partition, &mid, err);
		int64_t		t;

		if (res == NULL)
			return -1;
		t = PQntuples(res) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : INT64_MAX;
		PQclear(res);
		if (t < ts)
			lo = mid + 1;
		else
		{
			hi = mid;
			*found_ts = t;
		}
	}
	return lo;
}

static void
list_one(PGconn *db, KWriter *w, const char *topic, int32_t partition, int64_t ts)
{
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = exec_tp(db, "SELECT log_start_offset, high_watermark FROM mq.partitions"
							  " WHERE topic = $1 AND partition = $2", topic, partition, NULL, &err);
	int16_t		code = KERR_NONE;
	int64_t		off = -1,
				found = -1;

	if (res == NULL)
		code = kerr_from_mq(&err);
	else if (PQntuples(res) == 0)
		code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
	else
	{
		int64_t		lso = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		int64_t		hw = strtoll(PQgetvalue(res, 0, 1), NULL, 10);

		if (ts == -2)
			off = lso;
		else if (ts == -1)
			off = hw;
		else
		{
			off = offset_for_time(db, topic, partition, lso, hw, ts, &found, &err);
			if (err.message)
				code = kerr_from_mq(&err);
			else if (off == hw)
				off = -1;
		}
	}
	kw_i32(w, partition);
	kw_i16(w, code);
	kw_i64(w, code ? -1 : found);
	kw_i64(w, code ? -1 : off);
	PQclear(res);
	mq_error_free(&err);
}

static void
list_offsets_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		nt;

	(void) kr_i32(r);			/* replica id */
	if (req->api_version >= 2)
		(void) kr_i8(r);		/* isolation level */
	if (req->api_version >= 2)
		kw_i32(w, 0);
	nt = kr_array(r, 6);
	kw_i32(w, nt);
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		KSlice		name = kr_str(r);
		char	   *topic = kslice_dup(name);
		int32_t		np = kr_array(r, 12);

		kw_strn(w, name.p, name.len);
		kw_i32(w, np);
		for (int32_t i = 0; i < np && !r->err; i++)
		{
			int32_t		partition = kr_i32(r);
			int64_t		ts = kr_i64(r);

			list_one(db, w, topic ? topic : "", partition, ts);
		}
		free(topic);
	}
}

void
h_list_offsets(KRequest *req)
{
	pool_submit(req, list_offsets_db, NULL);
}

/* the coordinator's verdict, decided on the loop thread */
typedef struct CommitState
{
	int16_t		code;
	char	   *group;
} CommitState;

static void
commit_state_free(void *p)
{
	CommitState *s = p;

	free(s->group);
	free(s);
}

static void
offset_commit_db(KRequest *req, PGconn *db)
{
	CommitState *s = req->state;
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		nt = kr_array(r, 6);

	if (req->api_version >= 3)
		kw_i32(w, 0);
	kw_i32(w, nt);
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		KSlice		name = kr_str(r);
		char	   *topic = kslice_dup(name);
		int32_t		np = kr_array(r, 14);

		kw_strn(w, name.p, name.len);
		kw_i32(w, np);
		for (int32_t i = 0; i < np && !r->err; i++)
		{
			int32_t		partition = kr_i32(r);
			int64_t		off = kr_i64(r);
			char	   *meta;
			MqParams	params;
			MqError		err = MQ_ERROR_INIT;
			PGresult   *res = NULL;
			int16_t		code = s->code;

			if (req->api_version >= 6)
				(void) kr_i32(r);	/* leader epoch */
			meta = kslice_dup(kr_str(r));
			if (code == KERR_NONE && !r->err)
			{
				mq_params_init(&params);
				mq_param_text(&params, MQ_TEXTOID, s->group);
				mq_param_text(&params, MQ_TEXTOID, topic ? topic : "");
				mq_param_int(&params, MQ_INT4OID, partition);
				mq_param_int(&params, MQ_INT8OID, off);
				mq_param_text(&params, MQ_TEXTOID, meta);
				res = kdb_exec(db, "SELECT mq.commit_offset($1, $2, $3, $4, $5)", &params, 0, &err);
				if (res == NULL)
					code = kerr_from_mq(&err);
			}
			kw_i32(w, partition);
			kw_i16(w, code);
			PQclear(res);
			mq_error_free(&err);
			free(meta);
		}
		free(topic);
	}
}

static void
offsets_done(KRequest *req)
{
	if (req->body.err)
		req_abort(req);
	else
		req_finish(req);
}

void
h_offset_commit(KRequest *req)
{
	KReader    *r = &req->body;
	CommitState *s = mq_malloc0(sizeof(CommitState));
	int32_t		generation;
	char	   *member;
	char	   *instance = NULL;

	req->state = s;
	req->free_state = commit_state_free;
	s->group = kslice_dup(kr_str(r));
	generation = kr_i32(r);
	member = kslice_dup(kr_str(r));
	if (req->api_version >= 7)
		instance = kslice_dup(kr_str(r));
	if (req->api_version <= 4)
		(void) kr_i64(r);		/* retention time */
	if (r->err || s->group == NULL)
	{
		free(member);
		free(instance);
		req_abort(req);
		return;
	}
	s->code = group_commit_check(s->group, member, instance, generation);
	free(member);
	free(instance);
	pool_submit(req, offset_commit_db, offsets_done);
}

#define COMMITTED_SQL \
	"SELECT mq.committed_offset($1, $2, $3)," \
	"       (SELECT c.metadata FROM mq.consumer_offset c JOIN mq.topic t USING (topic_id)" \
	"         WHERE c.group_id = $1 AND t.topic_name = $2 AND c.partition = $3)"

#define ALL_COMMITTED_SQL \
	"SELECT t.topic_name, c.partition, c.next_offset, c.metadata" \
	"  FROM mq.consumer_offset c JOIN mq.topic t USING (topic_id)" \
	" WHERE c.group_id = $1 ORDER BY 1, 2"

static void
write_committed(KRequest *req, int32_t partition, int64_t off, const char *meta, int16_t code)
{
	KWriter    *w = &req->resp;

	kw_i32(w, partition);
	kw_i64(w, off);
	if (req->api_version >= 5)
		kw_i32(w, -1);			/* leader epoch */
	kw_str(w, meta ? meta : "");
	kw_i16(w, code);
}

/* one requested partition; an unknown topic has no committed offset (-1) */
static void
fetch_one(KRequest *req, PGconn *db, const char *group, const char *topic, int32_t partition)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	int16_t		code = KERR_NONE;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	mq_param_text(&params, MQ_TEXTOID, topic);
	mq_param_int(&params, MQ_INT4OID, partition);
	res = kdb_exec(db, COMMITTED_SQL, &params, 0, &err);
	if (res == NULL && !mq_error_is(&err, "MQ001") && !mq_error_is(&err, "MQ006"))
		code = kerr_from_mq(&err);
	write_committed(req, partition,
					res && !PQgetisnull(res, 0, 0) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1,
					res && !PQgetisnull(res, 0, 1) ? PQgetvalue(res, 0, 1) : "", code);
	PQclear(res);
	mq_error_free(&err);
}

/* every committed offset of the group (topics = null, v2+) */
static int16_t
fetch_all(KRequest *req, PGconn *db, const char *group)
{
	KWriter    *w = &req->resp;
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	size_t		topics_at = w->len;
	int32_t		ntopics = 0;
	int16_t		code;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	res = kdb_exec(db, ALL_COMMITTED_SQL, &params, 0, &err);
	code = res ? KERR_NONE : kerr_from_mq(&err);
	kw_i32(w, 0);
	for (int row = 0; res && row < PQntuples(res);)
	{
		const char *topic = PQgetvalue(res, row, 0);
		size_t		parts_at;
		int32_t		n = 0;

		kw_str(w, topic);
		parts_at = w->len;
		kw_i32(w, 0);
		for (; row < PQntuples(res) && strcmp(PQgetvalue(res, row, 0), topic) == 0; row++, n++)
			write_committed(req, atoi(PQgetvalue(res, row, 1)),
							strtoll(PQgetvalue(res, row, 2), NULL, 10),
							PQgetvalue(res, row, 3), KERR_NONE);
		kw_put_i32_at(w, parts_at, n);
		ntopics++;
	}
	kw_put_i32_at(w, topics_at, ntopics);
	PQclear(res);
	mq_error_free(&err);
	return code;
}

static void
offset_fetch_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	char	   *group = kslice_dup(kr_str(r));
	int32_t		nt = kr_array(r, 6);
	int16_t		code = KERR_NONE;

	if (req->api_version >= 3)
		kw_i32(w, 0);
	if (nt < 0)
		code = fetch_all(req, db, group ? group : "");
	else
		kw_i32(w, nt);
	for (int32_t t = 0; t < nt && !r->err; t++)
	{
		KSlice		name = kr_str(r);
		char	   *topic = kslice_dup(name);
		int32_t		np = kr_array(r, 4);

		kw_strn(w, name.p, name.len);
		kw_i32(w, np);
		for (int32_t i = 0; i < np && !r->err; i++)
			fetch_one(req, db, group ? group : "", topic ? topic : "", kr_i32(r));
		free(topic);
	}
	if (req->api_version >= 2)
		kw_i16(w, code);
	free(group);
}

void
h_offset_fetch(KRequest *req)
{
	pool_submit(req, offset_fetch_db, offsets_done);
}
