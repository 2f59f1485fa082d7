/*-------------------------------------------------------------------------
 *
 * h_log_dirs.c
 *	  DescribeLogDirs (v0-v4; v2+ flexible): where this node keeps each
 *	  partition and how large it is.  Loop thread; one job of two
 *	  statements.
 *
 * A Kafka log directory is a PostgreSQL tablespace here: the one each
 * segment table lives in (the database's default unless the partition was
 * moved, mq.move_partition or AlterReplicaLogDirs: h_log_dirs_alter.c),
 * named as pg_tablespace names it.  A
 * partition's size is the sum of its segments' pg_total_relation_size
 * (mq.segments: indexes and TOAST included); its offset lag is 0 and it is
 * never a future replica, since a move is done when it is answered.  The
 * volume's total and usable bytes (v4) are -1, which
 * Kafka answers when it does not know them.  As in Kafka it takes DESCRIBE
 * on the cluster: without it the answer has no directory (and, v3+,
 * CLUSTER_AUTHORIZATION_FAILED); topics the role may not describe are left
 * out (mq.segments' filter), as are those this node holds nothing of.
 * topics null asks for every partition; otherwise for the (topic,
 * partition) pairs given.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kacl.h"
#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

/* $1 topics, $2 partitions (text[], int4[], side by side), or null: all */
#define LOG_DIRS_SQL \
	"SELECT sp.spcname, s.topic, s.partition, sum(s.bytes)::int8" \
	"  FROM mq.segments s" \
	"  JOIN pg_catalog.pg_class c ON c.oid = s.relid" \
	"  JOIN pg_catalog.pg_tablespace sp ON sp.oid = CASE WHEN c.reltablespace <> 0 THEN c.reltablespace" \
	"       ELSE (SELECT d.dattablespace FROM pg_catalog.pg_database d" \
	"              WHERE d.datname = pg_catalog.current_database()) END" \
	" WHERE $1::text[] IS NULL OR (s.topic, s.partition) IN (SELECT * FROM unnest($1::text[], $2::int4[]))" \
	" GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"

/* rows [r0, r1) of res share column col's value with row r0: the end */
static int
same_run(const PGresult *res, int r0, int r1, int col)
{
	int			r = r0;

	while (r < r1 && strcmp(PQgetvalue(res, r, col), PQgetvalue(res, r0, col)) == 0)
		r++;
	return r;
}

/* one topic's rows [r0, r1) */
static void
write_topic(KWriter *w, const PGresult *res, int r0, int r1)
{
	kw_str(w, PQgetvalue(res, r0, 1));
	kw_array(w, r1 - r0);
	for (int r = r0; r < r1; r++)
	{
		kw_i32(w, (int32_t) strtol(PQgetvalue(res, r, 2), NULL, 10));
		kw_i64(w, strtoll(PQgetvalue(res, r, 3), NULL, 10));	/* partition_size */
		kw_i64(w, 0);			/* offset_lag */
		kw_i8(w, 0);			/* is_future_key */
		kw_tags(w);
	}
	kw_tags(w);
}

/* one directory's rows [r0, r1) */
static void
write_dir(KRequest *req, const PGresult *res, int r0, int r1)
{
	KWriter    *w = &req->resp;
	size_t		count_at;
	int32_t		ntopics = 0;

	kw_i16(w, KERR_NONE);
	kw_str(w, PQgetvalue(res, r0, 0));
	count_at = kw_later(w);
	for (int r = r0; r < r1; ntopics++)
	{
		int			end = same_run(res, r, r1, 1);

		write_topic(w, res, r, end);
		r = end;
	}
	kw_fill_count(w, count_at, ntopics);
	if (req->api_version >= 4)
	{
		kw_i64(w, -1);			/* total_bytes: unknown */
		kw_i64(w, -1);			/* usable_bytes */
	}
	kw_tags(w);
}

static void
log_dirs_done(KRequest *req)
{
	KJob	   *job = req->state;
	KWriter    *w = &req->resp;
	const KStmt *authz = &job->stmts[0];
	const KStmt *dirs = &job->stmts[1];
	int16_t		code = KERR_NONE;
	PGresult   *res = NULL;
	size_t		count_at;
	int32_t		ndirs = 0;

	if (kstmt_failed(authz, &code) || kstmt_failed(dirs, &code))
		mq_log_warning("describe log dirs: %s", authz->err.message ? authz->err.message : dirs->err.message);
	else if ((code = kacl_cluster_code(authz)) == KERR_NONE)
		res = dirs->res;
	kw_i32(w, 0);				/* throttle_time_ms */
	if (req->api_version >= 3)
		kw_i16(w, code);
	count_at = kw_later(w);
	for (int r = 0, n = res ? PQntuples(res) : 0; r < n; ndirs++)
	{
		int			end = same_run(res, r, n, 0);

		write_dir(req, res, r, end);
		r = end;
	}
	kw_fill_count(w, count_at, ndirs);
	req_finish(req);
}

void
h_describe_log_dirs(KRequest *req)
{
	KReader    *r = &req->body;
	KJob	   *job = mq_malloc0(sizeof(KJob));
	MqArray		topics,
				parts;
	int32_t		n = kr_array(r, 4);
	KStmt	   *st;

	req->state = job;
	req->free_state = kjob_free_state;
	mq_array_init(&topics, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	for (int32_t t = 0; t < n && !r->err; t++)
	{
		char	   *name = kslice_dup(kr_str(r));
		int32_t		np = kr_array(r, 4);

		for (int32_t i = 0; i < np && !r->err; i++)
		{
			mq_array_add(&topics, name ? name : "", name ? strlen(name) : 0);
			mq_array_add_int32(&parts, kr_i32(r));
		}
		kr_tags(r);
		free(name);
	}
	if (r->err)
	{
		mq_array_free(&topics);
		mq_array_free(&parts);
		req_abort(req);
		return;
	}
	/* DESCRIBE on the cluster: LOG_DIRS_SQL's rows are answered only with it */
	kacl_add_cluster_check(job, "describe");
	st = kjob_add(job, LOG_DIRS_SQL, 0);
	if (n < 0)
	{
		kstmt_text(st, MQ_TEXTARRAYOID, NULL);
		kstmt_text(st, MQ_INT4ARRAYOID, NULL);
	}
	else
	{
		kstmt_array(st, MQ_TEXTARRAYOID, &topics);
		kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	}
	mq_array_free(&topics);
	mq_array_free(&parts);
	pool_run(req, job, log_dirs_done);
}
