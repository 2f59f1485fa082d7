/*-------------------------------------------------------------------------
 *
 * h_delete_records.c
 *	  DeleteRecords (v0-v2; v2+ flexible) on mq.delete_records.  Loop thread; one job
 *	  with a statement per partition.
 *
 * Kafka's semantics: each partition's log start offset moves up to the
 * given offset (-1: the high watermark), and the answer is the new low
 * watermark.  An offset beyond the high watermark is OFFSET_OUT_OF_RANGE
 * (MQ007), an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, a
 * partition this node does not lead NOT_LEADER_OR_FOLLOWER (MQ020: the
 * client asks the leader its metadata names), and a role without DELETE
 * on the topic TOPIC_AUTHORIZATION_FAILED.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "util.h"

typedef struct DelPart
{
	int32_t		topic;			/* index in topics */
	int32_t		partition;
} DelPart;

typedef struct DelRecState
{
	KJob		job;
	int32_t		ntopics;
	KSlice	   *topics;
	int32_t		nparts;
	DelPart    *parts;			/* one statement each, in request order */
} DelRecState;

static void
delrec_state_free(void *p)
{
	DelRecState *s = p;

	kjob_free(&s->job);
	free(s->topics);
	free(s->parts);
	free(s);
}

static int32_t
part_topic(const void *arg, int32_t i)
{
	return ((const DelRecState *) arg)->parts[i].topic;
}

static void
write_partition(KWriter *w, void *arg, int32_t i)
{
	DelRecState *s = arg;
	const DelPart *d = &s->parts[i];
	const KStmt *st = &s->job.stmts[i];
	int16_t		code;

	kw_i32(w, d->partition);
	if (kstmt_failed(st, &code))
	{
		if (strcmp(st->err.sqlstate, "42501") == 0)
			code = KERR_TOPIC_AUTHORIZATION_FAILED;
		kw_i64(w, -1);
	}
	else
		kw_i64(w, strtoll(PQgetvalue(st->res, 0, 0), NULL, 10));
	kw_i16(w, code);
}

static void
delete_records_done(KRequest *req)
{
	DelRecState *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_topic_parts(w, s->topics, 0, s->ntopics, s->nparts, part_topic, write_partition, s);
	req_finish(req);
}

/* one topic's partitions: a statement each */
static void
read_topic(KReader *r, DelRecState *s, int32_t t, int32_t *cap)
{
	char	   *name = kslice_dup(s->topics[t] = kr_str(r));
	int32_t		n = kr_array(r, 12);

	for (int32_t i = 0; i < n && !r->err; i++)
	{
		DelPart    *d;
		KStmt	   *st;

		if (s->nparts == *cap)
		{
			*cap = *cap * 2 + 8;
			s->parts = mq_realloc(s->parts, sizeof(DelPart) * *cap);
		}
		d = &s->parts[s->nparts++];
		d->topic = t;
		d->partition = kr_i32(r);
		st = kjob_add(&s->job, "SELECT mq.delete_records($1, $2, $3)", 0);
		kstmt_text(st, MQ_TEXTOID, name ? name : "");
		kstmt_int(st, MQ_INT4OID, d->partition);
		kstmt_int(st, MQ_INT8OID, kr_i64(r));
		kr_tags(r);
	}
	kr_tags(r);
	free(name);
}

void
h_delete_records(KRequest *req)
{
	KReader    *r = &req->body;
	DelRecState *s = mq_malloc0(sizeof(DelRecState));
	int32_t		cap = 0;

	req->state = s;
	req->free_state = delrec_state_free;
	s->ntopics = kr_array(r, 6);
	s->topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	for (int32_t t = 0; t < s->ntopics && !r->err; t++)
		read_topic(r, s, t, &cap);
	(void) kr_i32(r);			/* timeout_ms */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	pool_run(req, &s->job, delete_records_done);
}
