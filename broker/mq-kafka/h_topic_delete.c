/*-------------------------------------------------------------------------
 *
 * h_topic_delete.c
 *	  DeleteTopics (v0-v6) on mq.drop_topic.  Loop thread; one job with a
 *	  statement per topic, each dropped in its own transaction.
 *
 * v6+ takes topics by name or by id (a null name) and answers both; an id
 * no topic has is UNKNOWN_TOPIC_ID, an entry with neither or both is
 * INVALID_REQUEST, as Kafka answers them.  A name (or id) given twice is
 * INVALID_REQUEST, answered once, and nothing of it dropped (Kafka's
 * "Duplicate topic name.").  A replicated topic (this node holds a
 * replica; with or without --coordinator) is refused with
 * TOPIC_DELETION_DISABLED and nothing dropped: nothing deletes a
 * replicated topic on every node yet, and dropping one node's replica
 * would break the partition.  v5+ answers an error message; flexible
 * from v4.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "topic_id.h"
#include "util.h"

#define KERR_TOPIC_DELETION_DISABLED 73

/*
 * by name, or (DeleteTopics v6+, name null) by id; a replicated topic is
 * left alone (false): dropping this node's replica would break it
 */
#define DROP_SQL \
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM mq.replica_status r WHERE r.topic = t" \
	"                            AND r.role IS DISTINCT FROM 'standalone') THEN false" \
	"            ELSE mq.drop_topic(t)::text = '' END, t, " TOPIC_ID_SQL("t") \
	"  FROM (SELECT coalesce($1, (SELECT topic FROM mq.topics" \
	"                              WHERE " TOPIC_ID_SQL("topic") " = $2)) t) x WHERE t IS NOT NULL"

typedef struct DeleteSpec
{
	KSlice		name;			/* null (v6+): by id */
	KSlice		id;				/* v6+: 16 bytes, or null when all zero */
	char		id_hex[33];
	uint8_t		repeat;			/* KREPEAT_*: of its name or id */
	const char *refusal;		/* INVALID_REQUEST's message, or NULL */
	int			stmt;			/* its drop statement, or -1 */
} DeleteSpec;

typedef struct DeleteState
{
	KJob		job;
	int32_t		n;
	DeleteSpec *specs;
} DeleteState;

static void
delete_state_free(void *p)
{
	DeleteState *s = p;

	kjob_free(&s->job);
	free(s->specs);
	free(s);
}

/* names and ids given twice, and entries naming neither or both */
static void
mark_refusals(DeleteState *s)
{
	KSlice	   *keys = mq_malloc(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	uint8_t    *by_name = mq_malloc(s->n > 0 ? s->n : 1);
	uint8_t    *by_id = mq_malloc(s->n > 0 ? s->n : 1);

	for (int32_t i = 0; i < s->n; i++)
		keys[i] = s->specs[i].name;
	kslice_repeats(keys, s->n, by_name);
	for (int32_t i = 0; i < s->n; i++)
		keys[i] = s->specs[i].id;
	kslice_repeats(keys, s->n, by_id);
	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];

		t->repeat = by_name[i] != KREPEAT_NONE ? by_name[i] : by_id[i];
		if (by_name[i] != KREPEAT_NONE)
			t->refusal = "duplicate topic name";
		else if (by_id[i] != KREPEAT_NONE)
			t->refusal = "duplicate topic id";
		else if (t->name.len < 0 && t->id.len < 0)
			t->refusal = "neither topic name nor id was given";
		else if (t->name.len >= 0 && t->id.len >= 0)
			t->refusal = "a topic name and a topic id were both given";
	}
	free(keys);
	free(by_name);
	free(by_id);
}

static void
write_result(KRequest *req, const DeleteSpec *t)
{
	KWriter    *w = &req->resp;
	const KStmt *st = t->stmt >= 0 ? &((DeleteState *) req->state)->job.stmts[t->stmt] : NULL;
	PGresult   *res = st ? st->res : NULL;
	bool		found = res && PQntuples(res) > 0;
	int16_t		code = KERR_INVALID_REQUEST;
	const char *message = t->refusal;
	uint8_t		id[16];

	if (st)
	{
		(void) kstmt_failed(st, &code);
		message = st->err.message;
		if (code == KERR_NONE && !found)
			code = KERR_UNKNOWN_TOPIC_ID;	/* by id, and no topic has it */
		if (found && strcmp(PQgetvalue(res, 0, 0), "f") == 0)
		{
			code = KERR_TOPIC_DELETION_DISABLED;
			message = "a replicated topic cannot be deleted yet";
		}
	}
	if (found && t->name.len < 0)
		kw_str(w, PQgetvalue(res, 0, 1));
	else
		kw_strn(w, t->name.p, t->name.len);
	if (req->api_version >= 6)
	{
		(void) topic_id_from_hex(found ? PQgetvalue(res, 0, 2) : t->id_hex, id);
		kw_uuid(w, id);
	}
	kw_i16(w, code);
	if (req->api_version >= 5)
		kw_str(w, message);
	kw_tags(w);
}

static void
delete_topics_done(KRequest *req)
{
	DeleteState *s = req->state;
	KWriter    *w = &req->resp;
	size_t		count_at;
	int32_t		n = 0;

	if (req->api_version >= 1)
		kw_i32(w, 0);			/* throttle */
	count_at = kw_later(w);
	for (int32_t i = 0; i < s->n; i++)
		if (s->specs[i].repeat != KREPEAT_LATER)
		{
			write_result(req, &s->specs[i]);
			n++;
		}
	kw_fill_count(w, count_at, n);
	req_finish(req);
}

static void
read_spec(KRequest *req, DeleteSpec *t)
{
	KReader    *r = &req->body;
	static const uint8_t zero[16];

	t->name = kr_str(r);
	t->id.len = -1;
	if (req->api_version >= 6)
	{
		KSlice		id = kr_uuid(r);

		if (id.len == 16 && memcmp(id.p, zero, 16) != 0)
		{
			t->id = id;
			topic_id_to_hex(id.p, t->id_hex);
		}
		kr_tags(r);
	}
	else if (t->name.len < 0)
		r->err = true;
}

void
h_delete_topics(KRequest *req)
{
	KReader    *r = &req->body;
	DeleteState *s = mq_malloc0(sizeof(DeleteState));

	req->state = s;
	req->free_state = delete_state_free;
	s->n = kr_array(r, 2);
	s->specs = mq_malloc0(sizeof(DeleteSpec) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
		read_spec(req, &s->specs[i]);
	(void) kr_i32(r);			/* timeout_ms: each drop is one transaction */
	if (r->err)
	{
		req_abort(req);
		return;
	}
	mark_refusals(s);
	for (int32_t i = 0; i < s->n; i++)
	{
		DeleteSpec *t = &s->specs[i];
		char	   *name = kslice_dup(t->name);
		KStmt	   *st;

		t->stmt = -1;
		if (t->refusal == NULL)
		{
			st = kjob_add(&s->job, DROP_SQL, 0);
			t->stmt = s->job.n - 1;
			kstmt_text(st, MQ_TEXTOID, name);
			kstmt_text(st, MQ_TEXTOID, t->id_hex);
		}
		free(name);
	}
	pool_run(req, &s->job, delete_topics_done);
}
