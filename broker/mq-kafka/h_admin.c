/*-------------------------------------------------------------------------
 *
 * h_admin.c
 *	  CreateTopics (v0-v4) and DeleteTopics (v0-v3) on mq.create_topic and
 *	  mq.drop_topic, decoded and answered on a database worker.
 *
 * Topics are created unreplicated: a replication factor above 1 and
 * manual replica assignments are refused (INVALID_REPLICATION_FACTOR,
 * INVALID_REPLICA_ASSIGNMENT); replicated topics are made with SQL
 * (docs/replication.md).  Configs go to mq.create_topic as a JSON object
 * of strings, so mq's own validation decides (INVALID_CONFIG).
 * validate_only runs the creation in a transaction that is rolled back.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>

#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

#define KERR_INVALID_REPLICA_ASSIGNMENT 39

typedef struct TopicSpec
{
	KSlice		name;
	int32_t		partitions;
	int16_t		replication;
	int32_t		nassign;
	MqArray		keys;
	MqArray		vals;
} TopicSpec;

static void
read_spec(KReader *r, TopicSpec *t)
{
	int32_t		n;

	t->name = kr_str(r);
	t->partitions = kr_i32(r);
	t->replication = kr_i16(r);
	t->nassign = kr_array(r, 8);
	for (int32_t i = 0; i < t->nassign; i++)
	{
		(void) kr_i32(r);
		n = kr_array(r, 4);
		for (int32_t j = 0; j < n; j++)
			(void) kr_i32(r);
	}
	mq_array_init(&t->keys, MQ_TEXTOID);
	mq_array_init(&t->vals, MQ_TEXTOID);
	n = kr_array(r, 4);
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		KSlice		k = kr_str(r);
		KSlice		v = kr_str(r);

		mq_array_add(&t->keys, k.p, k.len < 0 ? 0 : k.len);
		mq_array_add(&t->vals, v.len < 0 ? NULL : v.p, v.len < 0 ? 0 : v.len);
	}
}

/* create one topic; returns the Kafka error, *msg the server's message */
static int16_t
create_one(PGconn *db, TopicSpec *t, bool validate_only, char **msg)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;
	const char *b;
	int			len;
	int16_t		code = KERR_NONE;
	char	   *name = kslice_dup(t->name);

	*msg = NULL;
	if (t->replication > 1)
		code = KERR_INVALID_REPLICATION_FACTOR;
	else if (t->nassign > 0)
		code = KERR_INVALID_REPLICA_ASSIGNMENT;
	if (code != KERR_NONE)
	{
		free(name);
		return code;
	}
	if (validate_only && db)
		PQclear(PQexec(db, "BEGIN"));
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, name ? name : "");
	mq_param_int(&params, MQ_INT4OID, t->partitions < 0 ? 1 : t->partitions);
	b = mq_array_bytes(&t->keys, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, b, len);
	b = mq_array_bytes(&t->vals, &len);
	mq_param_binary(&params, MQ_TEXTARRAYOID, b, len);
	res = kdb_exec(db, "SELECT mq.create_topic($1, $2, jsonb_object($3::text[], $4::text[]))",
				   &params, 0, &err);
	if (res == NULL)
	{
		code = kerr_from_mq(&err);
		*msg = mq_strdup(err.message);
	}
	PQclear(res);
	if (validate_only && db)
		PQclear(PQexec(db, "ROLLBACK"));
	mq_error_free(&err);
	free(name);
	return code;
}

static void
create_topics_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		n = kr_array(r, 12);
	TopicSpec  *specs = mq_malloc0(sizeof(TopicSpec) * (n > 0 ? n : 1));
	bool		validate_only = false;

	for (int32_t i = 0; i < n; i++)
		read_spec(r, &specs[i]);
	(void) kr_i32(r);			/* timeout_ms */
	if (req->api_version >= 1)
		validate_only = kr_i8(r) != 0;
	if (req->api_version >= 2)
		kw_i32(w, 0);
	kw_i32(w, n);
	for (int32_t i = 0; i < n; i++)
	{
		char	   *msg = NULL;
		int16_t		code = r->err ? KERR_INVALID_REQUEST
			: create_one(db, &specs[i], validate_only, &msg);

		kw_strn(w, specs[i].name.p, specs[i].name.len);
		kw_i16(w, code);
		if (req->api_version >= 1)
			kw_str(w, msg);
		free(msg);
		mq_array_free(&specs[i].keys);
		mq_array_free(&specs[i].vals);
	}
	free(specs);
}

void
h_create_topics(KRequest *req)
{
	pool_submit(req, create_topics_db, NULL);
}

static void
delete_topics_db(KRequest *req, PGconn *db)
{
	KReader    *r = &req->body;
	KWriter    *w = &req->resp;
	int32_t		n = kr_array(r, 2);

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_i32(w, n);
	for (int32_t i = 0; i < n; i++)
	{
		KSlice		s = kr_str(r);
		char	   *name = kslice_dup(s);
		MqParams	params;
		MqError		err = MQ_ERROR_INIT;
		PGresult   *res;

		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, name ? name : "");
		res = kdb_exec(db, "SELECT mq.drop_topic($1)", &params, 0, &err);
		kw_strn(w, s.p, s.len);
		kw_i16(w, res ? KERR_NONE : kerr_from_mq(&err));
		PQclear(res);
		mq_error_free(&err);
		free(name);
	}
}

void
h_delete_topics(KRequest *req)
{
	pool_submit(req, delete_topics_db, NULL);
}
