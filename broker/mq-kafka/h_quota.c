/*-------------------------------------------------------------------------
 *
 * h_quota.c
 *	  DescribeClientQuotas (API 48, v0-v1) and AlterClientQuotas (API 49,
 *	  v0-v1), Kafka's KIP-546, on mq's client quotas
 *	  (src/sql/93_client_quotas.sql), which quota.c enforces.  v1 is
 *	  flexible.  Loop thread.
 *
 * An entity is a user, a client id, or both, each named or the default
 * (entity_name null).  Describe reads mq.list_client_quotas() as the
 * client's role (DESCRIBE on the cluster, else
 * CLUSTER_AUTHORIZATION_FAILED) and keeps the entities its filter
 * matches: each component names an entity type the entity must have,
 * with that name (match type 0), as the default (1), or either (2); with
 * strict, the entity has no other type.  Alter runs one statement per
 * entry, so an entry's operations all happen or none, through
 * mq.set_client_quota (ALTER on the cluster; a removal is a NULL value);
 * validate_only checks each and rolls it back.  Refused here, as
 * INVALID_REQUEST, as Kafka's controller refuses them: an empty entity,
 * an entity type named twice, an unknown type, an entity named by an
 * earlier entry, a key null or named twice in an entry, ip entities
 * (mq-kafka enforces no connection rate); in a filter an empty type or
 * one named twice, an exact match without a name or another match with
 * one, ip with user or client-id (and an unknown type is
 * UNSUPPORTED_VERSION).  The database refuses empty names, unknown keys
 * and values that are not positive, or not whole for a byte rate (MQ063,
 * INVALID_REQUEST).
 * Quotas are each node's, but Kafka's are the cluster's: in a replicated
 * cluster the entries that succeeded here run again on every other live
 * node (kmirror.c); each daemon then enforces what its node holds.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "kmirror.h"
#include "quota.h"
#include "util.h"

#define MAX_ITEMS 1000

#define LIST_SQL \
	"SELECT user_name, default_user, client_id, default_client, quota_key, quota_value" \
	"  FROM mq.list_client_quotas()"
#define SET_SQL \
	"SELECT count(*) FROM (SELECT mq.set_client_quota(o.k, CASE WHEN o.r::bool THEN NULL ELSE o.v::float8 END," \
	"                                                $1, $2, $3, $4)" \
	"  FROM ROWS FROM (pg_catalog.unnest($5::text[]), pg_catalog.unnest($6::text[])," \
	"                  pg_catalog.unnest($7::text[])) AS o(k, v, r)) s"

/* one entity: its user and client id parts */
typedef struct Entity
{
	KQuotaPart	user;
	KSlice		user_name;
	KQuotaPart	client;
	KSlice		client_name;
	const char *refusal;		/* decided here, INVALID_REQUEST */
	KSlice		raw;			/* as the request encodes it (so does the answer) */
} Entity;

static double
kr_f64(KReader *r)
{
	uint64_t	bits = (uint64_t) kr_i64(r);
	double		v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static void
kw_f64(KWriter *w, double v)
{
	uint64_t	bits;

	memcpy(&bits, &v, sizeof(bits));
	kw_i64(w, (int64_t) bits);
}

/* an array's count, at most MAX_ITEMS (else the request is malformed) */
static int32_t
item_count(KReader *r)
{
	int32_t		n = kr_array(r, 2);

	if (n > MAX_ITEMS)
		r->err = true;
	return n < 0 ? 0 : n;
}

static KQuotaPart *
entity_part(Entity *e, KSlice type, KSlice **name)
{
	if (kslice_eq(type, "user"))
	{
		*name = &e->user_name;
		return &e->user;
	}
	if (kslice_eq(type, "client-id"))
	{
		*name = &e->client_name;
		return &e->client;
	}
	return NULL;
}

/* one entity of an AlterClientQuotas entry, with what is refused here */
static void
read_entity(KReader *r, Entity *e)
{
	size_t		start = r->pos;
	int32_t		n = item_count(r);

	memset(e, 0, sizeof(*e));
	if (n == 0)
		e->refusal = "a quota entity needs a user or a client id";
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		KSlice		type = kr_str(r);
		KSlice		name = kr_str(r);
		KSlice	   *slot;
		KQuotaPart *part = entity_part(e, type, &slot);

		kr_tags(r);
		if (e->refusal)
			continue;
		if (kslice_eq(type, "ip"))
			e->refusal = "mq-kafka enforces no ip quotas (connection_creation_rate)";
		else if (part == NULL)
			e->refusal = "unknown quota entity type: entity types are user and client-id";
		else if (*part != KQUOTA_NONE)
			e->refusal = "a quota entity names an entity type twice";
		else
		{
			*part = name.len < 0 ? KQUOTA_DEFAULT : KQUOTA_NAME;
			*slot = name;
		}
	}
	e->raw = (KSlice){r->p + start, r->err ? 0 : (int32_t) (r->pos - start)};
}

static void
write_part(KWriter *w, const char *type, KQuotaPart part, KSlice name)
{
	kw_str(w, type);
	if (part == KQUOTA_DEFAULT)
		kw_strn(w, NULL, -1);
	else
		kw_strn(w, name.p, name.len);
	kw_tags(w);
}

static void
write_entity(KWriter *w, const Entity *e)
{
	kw_array(w, (e->user != KQUOTA_NONE) + (e->client != KQUOTA_NONE));
	if (e->user != KQUOTA_NONE)
		write_part(w, "user", e->user, e->user_name);
	if (e->client != KQUOTA_NONE)
		write_part(w, "client-id", e->client, e->client_name);
}

static bool
same_entity(const Entity *a, const Entity *b)
{
	return a->user == b->user && a->client == b->client &&
		(a->user != KQUOTA_NAME || kslice_same(a->user_name, b->user_name)) &&
		(a->client != KQUOTA_NAME || kslice_same(a->client_name, b->client_name));
}

/* ---- DescribeClientQuotas --------------------------------------------- */

typedef struct Component
{
	KSlice		type;
	int8_t		match_type;		/* 0 exact, 1 default, 2 any */
	KSlice		match;
} Component;

typedef struct DescState
{
	KJob		job;
	int32_t		n;
	Component  *comps;
	bool		strict;
	int16_t		code;			/* the filter refused here, or KERR_NONE */
	const char *refusal;
} DescState;

static void
desc_state_free(void *p)
{
	DescState  *s = p;

	kjob_free(&s->job);
	free(s->comps);
	free(s);
}

/* the entity of row i of res */
static Entity
row_entity(PGresult *res, int i)
{
	Entity		e = {0};

	e.user = !PQgetisnull(res, i, 0) ? KQUOTA_NAME : *PQgetvalue(res, i, 1) == 't' ? KQUOTA_DEFAULT : KQUOTA_NONE;
	e.user_name = (KSlice){(const uint8_t *) PQgetvalue(res, i, 0), PQgetlength(res, i, 0)};
	e.client = !PQgetisnull(res, i, 2) ? KQUOTA_NAME : *PQgetvalue(res, i, 3) == 't' ? KQUOTA_DEFAULT : KQUOTA_NONE;
	e.client_name = (KSlice){(const uint8_t *) PQgetvalue(res, i, 2), PQgetlength(res, i, 2)};
	return e;
}

static bool
same_row_entity(PGresult *res, int i, int j)
{
	for (int c = 0; c < 4; c++)
		if (PQgetisnull(res, i, c) != PQgetisnull(res, j, c) ||
			strcmp(PQgetvalue(res, i, c), PQgetvalue(res, j, c)) != 0)
			return false;
	return true;
}

static bool
entity_matches(const DescState *s, Entity e)
{
	int			parts = (e.user != KQUOTA_NONE) + (e.client != KQUOTA_NONE);

	for (int32_t i = 0; i < s->n; i++)
	{
		const Component *c = &s->comps[i];
		KSlice	   *name;
		KQuotaPart *part = entity_part(&e, c->type, &name);

		if (part == NULL || *part == KQUOTA_NONE)
			return false;		/* ip: mq holds no ip quotas */
		if (c->match_type == 0 && (*part != KQUOTA_NAME || !kslice_same(*name, c->match)))
			return false;
		if (c->match_type == 1 && *part != KQUOTA_DEFAULT)
			return false;
	}
	return !s->strict || parts == s->n;
}

/* the matching entities of res, each with its values */
static void
write_entries(KWriter *w, const DescState *s, PGresult *res)
{
	size_t		count_at = kw_later(w);
	int32_t		n = 0;

	for (int i = 0; i < PQntuples(res);)
	{
		int			j = i + 1;
		Entity		e = row_entity(res, i);

		while (j < PQntuples(res) && same_row_entity(res, i, j))
			j++;
		if (entity_matches(s, e))
		{
			write_entity(w, &e);
			kw_array(w, j - i);
			for (int k = i; k < j; k++)
			{
				kw_str(w, PQgetvalue(res, k, 4));
				kw_f64(w, strtod(PQgetvalue(res, k, 5), NULL));
				kw_tags(w);
			}
			kw_tags(w);
			n++;
		}
		i = j;
	}
	kw_fill_count(w, count_at, n);
}

static void
describe_done(KRequest *req)
{
	DescState  *s = req->state;
	KWriter    *w = &req->resp;
	KStmt	   *st = s->job.n > 0 ? &s->job.stmts[0] : NULL;
	const char *msg = s->refusal;
	int16_t		code = st ? kstmt_cluster_error(st, &msg) : s->code;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, code);
	kw_str(w, msg);
	if (code != KERR_NONE)
		kw_array(w, -1);
	else
		write_entries(w, s, st->res);
	req_finish(req);
}

/* a filter Kafka refuses (UNSUPPORTED_VERSION for an unknown entity
 * type, else INVALID_REQUEST): KERR_NONE if none */
static int16_t
check_filter(const DescState *s, const char **why)
{
	bool		ip = false,
				other = false;

	for (int32_t i = 0; i < s->n; i++)
	{
		const Component *c = &s->comps[i];

		*why = c->type.len <= 0 ? "an empty entity type" :
			c->match_type < 0 || c->match_type > 2 ? "unknown match type: 0 (exact), 1 (default) or 2 (any)" :
			c->match_type == 0 && c->match.len < 0 ? "an exact match needs a name" :
			c->match_type != 0 && c->match.len >= 0 ? "only an exact match takes a name" : NULL;
		for (int32_t j = 0; j < i && *why == NULL; j++)
			if (kslice_same(c->type, s->comps[j].type))
				*why = "a filter names an entity type twice";
		if (*why)
			return KERR_INVALID_REQUEST;
		if (!kslice_eq(c->type, "user") && !kslice_eq(c->type, "client-id") && !kslice_eq(c->type, "ip"))
		{
			*why = "unsupported entity type: entity types are user, client-id and ip";
			return KERR_UNSUPPORTED_VERSION;
		}
		ip |= kslice_eq(c->type, "ip");
		other |= !kslice_eq(c->type, "ip");
	}
	*why = ip && other ? "an ip filter component cannot be combined with user or client-id" : NULL;
	return *why ? KERR_INVALID_REQUEST : KERR_NONE;
}

void
h_describe_client_quotas(KRequest *req)
{
	KReader    *r = &req->body;
	DescState  *s = mq_malloc0(sizeof(DescState));

	req->state = s;
	req->free_state = desc_state_free;
	s->n = item_count(r);
	s->comps = mq_malloc0(sizeof(Component) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
	{
		s->comps[i].type = kr_str(r);
		s->comps[i].match_type = kr_i8(r);
		s->comps[i].match = kr_str(r);
		kr_tags(r);
	}
	s->strict = kr_i8(r) != 0;
	kr_tags(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	s->code = check_filter(s, &s->refusal);
	if (s->code != KERR_NONE)
	{
		describe_done(req);
		return;
	}
	kjob_add(&s->job, LIST_SQL, 0);
	pool_run(req, &s->job, describe_done);
}

/* ---- AlterClientQuotas ------------------------------------------------ */

typedef struct Entry
{
	Entity		entity;
	int			stmt;			/* its statement, or -1 */
} Entry;

typedef struct AlterState
{
	KJob		job;
	KMirror		mirror;			/* in a cluster: the other nodes' */
	int32_t		n;
	Entry	   *entries;
	bool		validate_only;
} AlterState;

static void
alter_state_free(void *p)
{
	AlterState *s = p;

	kjob_free(&s->job);
	kmirror_free(&s->mirror);
	free(s->entries);
	free(s);
}

static void
alter_done(KRequest *req)
{
	AlterState *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_array(w, s->n);
	for (int32_t i = 0; i < s->n; i++)
	{
		Entry	   *e = &s->entries[i];
		KStmt	   *st = e->stmt >= 0 ? &s->job.stmts[e->stmt] : NULL;
		const char *msg = e->entity.refusal;
		int16_t		code = st ? kstmt_cluster_error(st, &msg) : KERR_INVALID_REQUEST;

		kw_i16(w, code);
		kw_str(w, msg);
		kw_raw(w, e->entity.raw.p, (size_t) e->entity.raw.len);	/* the entity as sent */
		kw_tags(w);
	}
	req_finish(req);
}

static void
array_add_slice(MqArray *a, KSlice s)
{
	mq_array_add(a, s.p, s.len > 0 ? (size_t) s.len : 0);
}

/* an entry's operations, read into its statement (or a refusal) */
static void
read_ops(KReader *r, AlterState *s, Entry *e)
{
	int32_t		n = item_count(r);
	MqArray		keys,
				vals,
				removes;
	KSlice	   *seen = mq_malloc0(sizeof(KSlice) * (n > 0 ? n : 1));
	KStmt	   *st;
	char	   *user = e->entity.user == KQUOTA_NAME ? kslice_dup(e->entity.user_name) : NULL;
	char	   *client = e->entity.client == KQUOTA_NAME ? kslice_dup(e->entity.client_name) : NULL;

	mq_array_init(&keys, MQ_TEXTOID);
	mq_array_init(&vals, MQ_TEXTOID);
	mq_array_init(&removes, MQ_TEXTOID);
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		char		v[40];

		seen[i] = kr_str(r);
		snprintf(v, sizeof(v), "%.17g", kr_f64(r));
		array_add_slice(&keys, seen[i]);
		mq_array_add(&vals, v, strlen(v));
		mq_array_add(&removes, kr_i8(r) ? "t" : "f", 1);
		kr_tags(r);
		if (seen[i].len < 0 && e->entity.refusal == NULL)
			e->entity.refusal = "a quota key is null";
		for (int32_t j = 0; j < i && e->entity.refusal == NULL; j++)
			if (kslice_same(seen[j], seen[i]))
				e->entity.refusal = "an entry names a quota key twice";
	}
	e->stmt = -1;
	if (e->entity.refusal == NULL && !r->err)
	{
		st = kjob_add(&s->job, SET_SQL, 0);
		e->stmt = s->job.n - 1;
		kstmt_text(st, MQ_TEXTOID, user);
		kstmt_text(st, MQ_TEXTOID, client);
		kstmt_text(st, MQ_BOOLOID, e->entity.user == KQUOTA_DEFAULT ? "t" : "f");
		kstmt_text(st, MQ_BOOLOID, e->entity.client == KQUOTA_DEFAULT ? "t" : "f");
		kstmt_array(st, MQ_TEXTARRAYOID, &keys);
		kstmt_array(st, MQ_TEXTARRAYOID, &vals);
		kstmt_array(st, MQ_TEXTARRAYOID, &removes);
	}
	mq_array_free(&keys);
	mq_array_free(&vals);
	mq_array_free(&removes);
	free(seen);
	free(user);
	free(client);
}

/* done everywhere: answered once this daemon enforces what changed */
static void
mirrored(KRequest *req)
{
	quota_reload(req, alter_done);
}

/* done here: the same on every other node (quotas are each node's) */
static void
altered(KRequest *req)
{
	AlterState *s = req->state;

	if (s->validate_only)
		alter_done(req);
	else
		kmirror_run(&s->mirror, req, &s->job, mirrored);
}

void
h_alter_client_quotas(KRequest *req)
{
	KReader    *r = &req->body;
	AlterState *s = mq_malloc0(sizeof(AlterState));

	req->state = s;
	req->free_state = alter_state_free;
	s->n = item_count(r);
	s->entries = mq_malloc0(sizeof(Entry) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
	{
		read_entity(r, &s->entries[i].entity);
		for (int32_t j = 0; j < i && s->entries[i].entity.refusal == NULL; j++)
			if (same_entity(&s->entries[j].entity, &s->entries[i].entity))
				s->entries[i].entity.refusal = "an entity named in an earlier entry of the request";
		read_ops(r, s, &s->entries[i]);
		kr_tags(r);
	}
	s->validate_only = kr_i8(r) != 0;
	kr_tags(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (s->validate_only)
	{
		kjob_rollback_each(&s->job);
		for (int32_t i = 0; i < s->n; i++)
			if (s->entries[i].stmt >= 0)
				s->entries[i].stmt = 3 * s->entries[i].stmt + 1;
	}
	pool_run(req, &s->job, altered);
}
