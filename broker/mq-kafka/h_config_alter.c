/*-------------------------------------------------------------------------
 *
 * h_config_alter.c
 *	  AlterConfigs (v0-v2) and IncrementalAlterConfigs (v0-v1) of topics, on
 *	  mq.alter_topic.  Loop thread; one job with a statement per topic
 *	  resource.
 *
 * AlterConfigs replaces a topic's whole configuration, as Kafka does: the
 * keys it does not name return to their defaults (mq._config_replace).
 * IncrementalAlterConfigs SETs and DELETEs keys, and APPENDs to and
 * SUBTRACTs from list keys (cleanup.policy; others are INVALID_REQUEST,
 * mq._config_incremental).  mq.alter_topic validates as for SQL callers:
 * a bad key or value is INVALID_CONFIG (MQ004), an unknown topic
 * UNKNOWN_TOPIC_OR_PARTITION, a role without ALTER on the topic
 * TOPIC_AUTHORIZATION_FAILED.  validate_only runs each statement in a
 * transaction that is rolled back.  mq-kafka has no broker configs: a
 * broker resource, like any other type, is INVALID_REQUEST.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

#define RESOURCE_TOPIC	2

#define REPLACE_SQL \
	"SELECT mq.alter_topic($1, mq._config_replace(" \
	"(SELECT config FROM mq.topics WHERE topic = $1), $2::text[], $3::text[]))"
#define INCREMENTAL_SQL \
	"SELECT mq.alter_topic($1, mq._config_incremental(" \
	"(SELECT config FROM mq.topics WHERE topic = $1), $2::text[], $4::text[]::int4[], $3::text[]))"

typedef struct AlterResource
{
	int8_t		type;
	KSlice		name;
	int			stmt;			/* its mq.alter_topic, or -1 */
} AlterResource;

typedef struct AlterState
{
	KJob		job;
	int32_t		n;
	AlterResource *res;
} AlterState;

static void
alter_state_free(void *p)
{
	AlterState *s = p;

	kjob_free(&s->job);
	free(s->res);
	free(s);
}

static void
alter_configs_done(KRequest *req)
{
	AlterState *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->n);
	for (int32_t i = 0; i < s->n; i++)
	{
		AlterResource *rs = &s->res[i];
		KStmt	   *st = rs->stmt >= 0 ? &s->job.stmts[rs->stmt] : NULL;
		int16_t		code = KERR_INVALID_REQUEST;

		if (st && kstmt_failed(st, &code) && strcmp(st->err.sqlstate, "42501") == 0)
			code = KERR_TOPIC_AUTHORIZATION_FAILED;
		kw_i16(w, code);
		kw_str(w, code == KERR_NONE ? NULL : st ? st->err.message :
			   "mq-kafka alters topic configs only: it has no broker configs");
		kw_i8(w, rs->type);
		kw_strn(w, rs->name.p, rs->name.len);
		kw_tags(w);
	}
	req_finish(req);
}

/* one resource: its configs, and its statement if it is a topic */
static void
read_resource(KRequest *req, AlterState *s, AlterResource *rs, bool incremental)
{
	KReader    *r = &req->body;
	MqArray		keys,
				vals,
				ops;
	int32_t		n;
	const char *b;
	int			len;

	rs->type = kr_i8(r);
	rs->name = kr_str(r);
	rs->stmt = -1;
	mq_array_init(&keys, MQ_TEXTOID);
	mq_array_init(&vals, MQ_TEXTOID);
	mq_array_init(&ops, MQ_TEXTOID);
	n = kr_array(r, incremental ? 5 : 4);
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		KSlice		k = kr_str(r);
		char		op[8];
		KSlice		v;

		snprintf(op, sizeof(op), "%d", incremental ? kr_i8(r) : 0);
		v = kr_str(r);
		kr_tags(r);
		mq_array_add(&keys, k.p, k.len < 0 ? 0 : k.len);
		mq_array_add(&vals, v.len < 0 ? NULL : v.p, v.len < 0 ? 0 : v.len);
		mq_array_add(&ops, op, strlen(op));
	}
	kr_tags(r);
	if (rs->type == RESOURCE_TOPIC && !r->err)
	{
		char	   *name = kslice_dup(rs->name);
		KStmt	   *st = kjob_add(&s->job, incremental ? INCREMENTAL_SQL : REPLACE_SQL, 0);

		rs->stmt = s->job.n - 1;
		kstmt_text(st, MQ_TEXTOID, name ? name : "");
		b = mq_array_bytes(&keys, &len);
		kstmt_binary(st, MQ_TEXTARRAYOID, b, len);
		b = mq_array_bytes(&vals, &len);
		kstmt_binary(st, MQ_TEXTARRAYOID, b, len);
		b = mq_array_bytes(&ops, &len);
		if (incremental)
			kstmt_binary(st, MQ_TEXTARRAYOID, b, len);
		free(name);
	}
	mq_array_free(&keys);
	mq_array_free(&vals);
	mq_array_free(&ops);
}

static void
alter_configs(KRequest *req, bool incremental)
{
	KReader    *r = &req->body;
	AlterState *s = mq_malloc0(sizeof(AlterState));

	req->state = s;
	req->free_state = alter_state_free;
	s->n = kr_array(r, 7);
	s->res = mq_malloc0(sizeof(AlterResource) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
		read_resource(req, s, &s->res[i], incremental);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (kr_i8(r) != 0)			/* validate_only */
	{
		kjob_rollback_each(&s->job);
		for (int32_t i = 0; i < s->n; i++)
			if (s->res[i].stmt >= 0)
				s->res[i].stmt = 3 * s->res[i].stmt + 1;
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	pool_run(req, &s->job, alter_configs_done);
}

void
h_alter_configs(KRequest *req)
{
	alter_configs(req, false);
}

void
h_incremental_alter_configs(KRequest *req)
{
	alter_configs(req, true);
}
