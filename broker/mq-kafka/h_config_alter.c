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
 * broker resource, like any other type, is INVALID_REQUEST.  As Kafka's
 * ConfigAdminManager refuses them before any config is read, a resource
 * given twice (each of them), a key named twice in one resource, and an
 * IncrementalAlterConfigs null value for anything but DELETE are
 * INVALID_REQUEST, and nothing of them is changed.  Then, as Kafka 3.9's
 * controller validates a topic resource's name: "" is INVALID_REQUEST
 * (default topic resources are not allowed), any other name outside
 * Kafka's rule INVALID_TOPIC_EXCEPTION (topic_name.c), before the
 * database is asked.
 *
 * In a replicated cluster a replicated topic's config is the
 * coordinator's, as in Kafka it is the cluster's: the change is computed
 * and checked as the client on a node holding the topic (any daemon may
 * be asked; rolled back), then stored on the coordinator
 * (mq_coord.alter_topic_config, as the daemon), whose brokers bring every
 * replica's node to it (mq.replica_place_topic) within a tick or so.
 * Topics that are not replicated are altered on this node, as alone.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "kerr.h"
#include "kfan.h"
#include "pgbinary.h"
#include "topic_name.h"
#include "util.h"

#define RESOURCE_TOPIC	2
#define INCREMENTAL_DELETE 1	/* IncrementalAlterConfigs' operation */

#define REPLACE_SQL \
	"SELECT mq.alter_topic($1, mq._config_replace(" \
	"(SELECT config FROM mq.topics WHERE topic = $1), $2::text[], $3::text[]))"
#define INCREMENTAL_SQL \
	"SELECT mq.alter_topic($1, mq._config_incremental(" \
	"(SELECT config FROM mq.topics WHERE topic = $1), $2::text[], $4::text[]::int4[], $3::text[]))"
#define COORD_ALTER_SQL "SELECT mq_coord.alter_topic_config($1, $2::jsonb)"

typedef struct AlterResource
{
	int8_t		type;
	KSlice		name;
	MqArray		keys;			/* its configs, as parsed */
	MqArray		vals;
	MqArray		ops;			/* IncrementalAlterConfigs' operations */
	const char *refusal;		/* refused before the database, or NULL */
	int16_t		refusal_code;	/* its error: INVALID_REQUEST unless set */
	char		name_msg[400];	/* an illegal topic name's refusal */
	KJob	   *job;			/* the job of its statement */
	int			stmt;			/* its mq.alter_topic, or -1 */
	int			coord_stmt;		/* a replicated topic's, on the coordinator, or -1 */
} AlterResource;

typedef struct AlterState
{
	KJob		job;			/* this node's topics */
	KFan		fan;			/* the replicated topics' checks (cluster) */
	KJob		coord;			/* their configs stored on the coordinator */
	KRequest	coord_req;
	bool		validate_only;
	int32_t		n;
	AlterResource *res;
} AlterState;

static void
alter_state_free(void *p)
{
	AlterState *s = p;

	kjob_free(&s->job);
	kfan_free(&s->fan);
	kjob_free(&s->coord);
	for (int32_t i = 0; i < s->n; i++)
	{
		mq_array_free(&s->res[i].keys);
		mq_array_free(&s->res[i].vals);
		mq_array_free(&s->res[i].ops);
	}
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
		KStmt	   *st = rs->stmt >= 0 ? &rs->job->stmts[rs->stmt] : NULL;
		int16_t		code = rs->refusal && rs->refusal_code ? rs->refusal_code : KERR_INVALID_REQUEST;

		if (st && !kstmt_failed(st, &code) && rs->coord_stmt >= 0)
			st = &s->coord.stmts[rs->coord_stmt];
		if (st && kstmt_failed(st, &code) && strcmp(st->err.sqlstate, "42501") == 0)
			code = KERR_TOPIC_AUTHORIZATION_FAILED;
		kw_i16(w, code);
		kw_str(w, code == KERR_NONE ? NULL : st ? st->err.message : rs->refusal ? rs->refusal :
			   "mq-kafka alters topic configs only: it has no broker configs");
		kw_i8(w, rs->type);
		kw_strn(w, rs->name.p, rs->name.len);
		kw_tags(w);
	}
	req_finish(req);
}

static void
coord_done(KRequest *sub)
{
	alter_configs_done(sub->state);
}

/*
 * The job a topic's statement goes in: this node's, or in a cluster for a
 * replicated topic the check on a node holding it (cluster_topic_pool).
 */
static KJob *
check_job(AlterState *s, const char *topic)
{
	if (!cluster_enabled() || cluster_partition(topic, 0) == NULL)
		return &s->job;
	return kfan_job(&s->fan, cluster_topic_pool(topic));
}

/*
 * One resource and its configs.  What Kafka refuses before reading any
 * config (ConfigAdminManager's checks): a key named twice, and in
 * IncrementalAlterConfigs a null value for anything but DELETE.
 */
static void
read_resource(KReader *r, AlterResource *rs, bool incremental)
{
	int32_t		n;
	KSlice	   *names;
	uint8_t    *repeat;
	bool		null_value = false;

	rs->type = kr_i8(r);
	rs->name = kr_str(r);
	rs->stmt = rs->coord_stmt = -1;
	mq_array_init(&rs->keys, MQ_TEXTOID);
	mq_array_init(&rs->vals, MQ_TEXTOID);
	mq_array_init(&rs->ops, MQ_TEXTOID);
	n = kr_array(r, incremental ? 5 : 4);
	names = mq_malloc(sizeof(KSlice) * (n > 0 ? n : 1));
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		char		op[8];
		int8_t		opcode;
		KSlice		v;

		names[i] = kr_str(r);
		opcode = incremental ? kr_i8(r) : 0;
		snprintf(op, sizeof(op), "%d", opcode);
		v = kr_str(r);
		kr_tags(r);
		null_value |= incremental && v.len < 0 && opcode != INCREMENTAL_DELETE;
		mq_array_add(&rs->keys, names[i].p, names[i].len < 0 ? 0 : names[i].len);
		mq_array_add(&rs->vals, v.len < 0 ? NULL : v.p, v.len < 0 ? 0 : v.len);
		mq_array_add(&rs->ops, op, strlen(op));
	}
	kr_tags(r);
	repeat = mq_malloc(n > 0 ? n : 1);
	kslice_repeats(names, r->err ? 0 : n, repeat);
	for (int32_t i = 0; i < n && !r->err && rs->refusal == NULL; i++)
		if (repeat[i] != KREPEAT_NONE)
			rs->refusal = "error due to duplicate config keys";
	if (rs->refusal == NULL && null_value)
		rs->refusal = "null value not supported but for DELETE";
	free(names);
	free(repeat);
}

/* a resource (type and name) given twice: each of them refused, as Kafka does */
static void
refuse_repeated_resources(AlterState *s)
{
	KSlice	   *keys = mq_malloc(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	uint8_t    *repeat = mq_malloc(s->n > 0 ? s->n : 1);
	uint8_t   **bufs = mq_malloc0(sizeof(uint8_t *) * (s->n > 0 ? s->n : 1));

	for (int32_t i = 0; i < s->n; i++)
	{
		int32_t		len = s->res[i].name.len < 0 ? 0 : s->res[i].name.len;

		bufs[i] = mq_malloc((size_t) len + 1);
		bufs[i][0] = (uint8_t) s->res[i].type;
		if (len > 0)
			memcpy(bufs[i] + 1, s->res[i].name.p, len);
		keys[i] = (KSlice){bufs[i], len + 1};
	}
	kslice_repeats(keys, s->n, repeat);
	for (int32_t i = 0; i < s->n; i++)
	{
		if (repeat[i] != KREPEAT_NONE)
			s->res[i].refusal = "each resource must appear at most once";
		free(bufs[i]);
	}
	free(bufs);
	free(keys);
	free(repeat);
}

/* a topic resource's name as Kafka 3.9's controller checks it */
static void
refuse_illegal_name(AlterResource *rs)
{
	if (rs->name.len <= 0)
		rs->refusal = "Default topic resources are not allowed.";
	else if (topic_name_invalid(rs->name, rs->name_msg, sizeof(rs->name_msg)))
	{
		rs->refusal = rs->name_msg;
		rs->refusal_code = KERR_INVALID_TOPIC_EXCEPTION;
	}
}

/* a topic resource that passed: its statement */
static void
add_alter(AlterState *s, AlterResource *rs, bool incremental)
{
	char	   *name = kslice_dup(rs->name);
	KStmt	   *st;

	rs->job = check_job(s, name ? name : "");
	st = kjob_add(rs->job, incremental ? INCREMENTAL_SQL : REPLACE_SQL, 0);
	rs->stmt = rs->job->n - 1;
	kstmt_text(st, MQ_TEXTOID, name ? name : "");
	kstmt_array(st, MQ_TEXTARRAYOID, &rs->keys);
	kstmt_array(st, MQ_TEXTARRAYOID, &rs->vals);
	if (incremental)
		kstmt_array(st, MQ_TEXTARRAYOID, &rs->ops);
	free(name);
}

/* each statement of job between BEGIN and ROLLBACK; the resources' indexes follow */
static void
rollback_each(AlterState *s, KJob *job)
{
	kjob_rollback_each(job);
	for (int32_t i = 0; i < s->n; i++)
		if (s->res[i].stmt >= 0 && s->res[i].job == job)
			s->res[i].stmt = 3 * s->res[i].stmt + 1;
}

/* the replicated topics that passed their checks: their configs on the coordinator */
static void
checks_done(KRequest *req)
{
	AlterState *s = req->state;
	int16_t		code;

	for (int32_t i = 0; i < s->n && !s->validate_only; i++)
	{
		AlterResource *rs = &s->res[i];
		KStmt	   *st = rs->stmt >= 0 && rs->job != &s->job ? &rs->job->stmts[rs->stmt] : NULL;
		KStmt	   *cst;

		if (st == NULL || kstmt_failed(st, &code) || st->res == NULL || PQntuples(st->res) != 1)
			continue;
		cst = kjob_add(&s->coord, COORD_ALTER_SQL, 0);
		rs->coord_stmt = s->coord.n - 1;
		kstmt_text(cst, MQ_TEXTOID, st->values[0]);
		kstmt_text(cst, MQ_TEXTOID, PQgetvalue(st->res, 0, 0));
	}
	if (s->coord.n == 0)
	{
		alter_configs_done(req);
		return;
	}
	s->coord_req.state = req;	/* no role: the daemon's on the coordinator */
	pool_run_on(cluster_coord_pool(), &s->coord_req, &s->coord, coord_done);
}

static void
local_done(KRequest *req)
{
	AlterState *s = req->state;

	kfan_run(&s->fan, req, checks_done);
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
		read_resource(r, &s->res[i], incremental);
	s->validate_only = kr_i8(r) != 0;
	if (r->err)
	{
		req_abort(req);
		return;
	}
	refuse_repeated_resources(s);
	for (int32_t i = 0; i < s->n; i++)
	{
		s->res[i].job = &s->job;
		if (s->res[i].type == RESOURCE_TOPIC && s->res[i].refusal == NULL)
			refuse_illegal_name(&s->res[i]);
		if (s->res[i].type == RESOURCE_TOPIC && s->res[i].refusal == NULL)
			add_alter(s, &s->res[i], incremental);
	}
	if (s->validate_only)
		rollback_each(s, &s->job);
	for (int i = 0; i < s->fan.n; i++)
		rollback_each(s, &s->fan.routes[i]->job);
	pool_run(req, &s->job, local_done);
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
