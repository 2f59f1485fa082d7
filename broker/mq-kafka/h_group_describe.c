/*-------------------------------------------------------------------------
 *
 * h_group_describe.c
 *	  DescribeGroups (v0-v5; v5+ flexible): a group held here from its
 *	  members in memory, any other this daemon coordinates from the
 *	  database (mq.groups: an SQL group with its live members, or a group
 *	  that only has committed offsets, Empty as in Kafka; unknown: Dead).
 *	  Shown to a SASL client only for groups its role may DESCRIBE
 *	  (group_authz.c asks, one statement per group; otherwise
 *	  GROUP_AUTHORIZATION_FAILED and nothing else).  Loop thread only.
 *
 * As Kafka's coordinator summarizes a group: the protocol and each
 * member's metadata and assignment only while the group is Stable; in a
 * rebalance the protocol is "" and both are empty, and an empty group has
 * no protocol (group.c clears it).  An SQL group's members are client
 * "mq" without a host, their metadata and assignment in Kafka's consumer
 * protocol (version 0: subscribed topics; the partitions assigned to them
 * in this generation), encoded by the same SQL as __consumer_offsets'
 * records (mq._consumer_subscription, mq._consumer_assignment).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "group_authz.h"
#include "kerr.h"
#include "util.h"

/*
 * $1 a group: its state, type and assignor, then one row per live member
 * with its subscription and assignment in the consumer protocol (the
 * encoding __consumer_offsets uses); binary results
 */
#define DESCRIBE_SQL \
	"SELECT g.state, g.sql_group, coalesce(g.assignor, ''), m.member_id, m.instance_id," \
	"       mq._consumer_subscription(m.topics)," \
	"       (SELECT mq._consumer_assignment(pg_catalog.array_agg(a.topic), pg_catalog.array_agg(a.partition))" \
	"          FROM mq.group_assignments a WHERE a.group_id = g.group_id AND a.target = m.member_id)" \
	"  FROM mq.groups g LEFT JOIN mq.group_members m ON m.group_id = g.group_id AND m.active" \
	" WHERE g.group_id = $1 ORDER BY m.member_id COLLATE \"C\""

/* the groups asked about; stmt[i]: group i's statement in db, or -1 */
typedef struct DescribeState
{
	KGroupAuthz authz;
	KJob		db;
	int			n;
	char	  **names;
	int		   *stmt;
} DescribeState;

static void
describe_state_free(void *p)
{
	DescribeState *s = p;

	group_authz_free(&s->authz);
	kjob_free(&s->db);
	for (int i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->stmt);
	free(s);
}

/* a group held here */
static void
describe_held(KRequest *req, const KGroup *g)
{
	KWriter    *w = &req->resp;
	bool		stable = g->state == KG_STABLE;

	kw_str(w, group_state_name(g->state));
	kw_str(w, g->protocol_type ? g->protocol_type : "");
	kw_str(w, stable && g->protocol ? g->protocol : "");
	kw_array(w, g->nmembers);
	for (KMember *m = g->members; m; m = m->next)
	{
		const KProto *p = stable ? member_proto(m, g->protocol) : NULL;

		kw_str(w, m->id);
		if (req->api_version >= 4)
			kw_str(w, m->instance_id);
		kw_str(w, m->client_id);
		kw_str(w, m->client_host);
		kw_bytes(w, p ? p->meta : NULL, p ? p->len : 0);
		kw_bytes(w, stable ? m->assignment : NULL, stable ? m->assign_len : 0);
		kw_tags(w);
	}
}

/* a group only the database knows (res: DESCRIBE_SQL's rows, binary, or NULL) */
static void
describe_known(KRequest *req, const PGresult *res)
{
	KWriter    *w = &req->resp;
	int			rows = res ? PQntuples(res) : 0;
	const char *state = rows > 0 ? group_state_of_sql(PQgetvalue(res, 0, 0)) : "Dead";
	bool		stable = strcmp(state, "Stable") == 0;
	int32_t		nmembers = rows > 0 && !PQgetisnull(res, 0, 3) ? rows : 0;

	kw_str(w, state);
	kw_str(w, group_protocol_type_of_sql(rows > 0 && PQgetvalue(res, 0, 1)[0] == 1));
	kw_str(w, stable ? PQgetvalue(res, 0, 2) : "");
	kw_array(w, nmembers);
	for (int r = 0; r < nmembers; r++)
	{
		kw_str(w, PQgetvalue(res, r, 3));
		if (req->api_version >= 4)
			kw_str(w, PQgetisnull(res, r, 4) ? NULL : PQgetvalue(res, r, 4));
		kw_str(w, "mq");
		kw_str(w, "");
		kw_bytes(w, PQgetvalue(res, r, 5), stable ? PQgetlength(res, r, 5) : 0);
		kw_bytes(w, PQgetvalue(res, r, 6), stable ? PQgetlength(res, r, 6) : 0);
		kw_tags(w);
	}
}

static void
describe_one(KRequest *req, int i)
{
	DescribeState *s = req->state;
	KWriter    *w = &req->resp;
	const char *name = s->names[i];
	int16_t		error = group_authz_error(&s->authz, i);
	bool		mine = error == KERR_NONE && cluster_coordinates(name);
	KGroup	   *g = mine ? group_find(name) : NULL;
	const KStmt *st = s->stmt[i] >= 0 ? &s->db.stmts[s->stmt[i]] : NULL;
	int16_t		code;

	kw_i16(w, error != KERR_NONE ? error : mine ? KERR_NONE : KERR_NOT_COORDINATOR);
	kw_str(w, name);
	if (g)
		describe_held(req, g);
	else if (mine)
		describe_known(req, st && !kstmt_failed(st, &code) ? st->res : NULL);
	else
	{
		kw_str(w, error != KERR_NONE ? "" : "Dead");
		kw_str(w, "");
		kw_str(w, "");
		kw_array(w, 0);
	}
	if (req->api_version >= 3)
		kw_i32(w, INT32_MIN);	/* authorized operations: not computed */
	kw_tags(w);
}

static void
describe_write(KRequest *req)
{
	DescribeState *s = req->state;
	KWriter    *w = &req->resp;

	if (req->api_version >= 1)
		kw_i32(w, 0);
	kw_array(w, s->n);
	for (int i = 0; i < s->n; i++)
		describe_one(req, i);
	req_finish(req);
}

/* the groups the role may describe, this daemon coordinates and holds no members of: ask the database */
static void
describe_authorized(KRequest *req)
{
	DescribeState *s = req->state;

	for (int i = 0; i < s->n; i++)
	{
		s->stmt[i] = -1;
		if (group_authz_error(&s->authz, i) == KERR_NONE && cluster_coordinates(s->names[i]) &&
			group_find(s->names[i]) == NULL)
		{
			kstmt_text(kjob_add(&s->db, DESCRIBE_SQL, 1), MQ_TEXTOID, s->names[i]);
			s->stmt[i] = s->db.n - 1;
		}
	}
	if (s->db.n > 0)
		pool_run(req, &s->db, describe_write);
	else
		describe_write(req);
}

void
h_describe_groups(KRequest *req)
{
	KReader    *r = &req->body;
	int32_t		n = kr_array(r, 2);
	DescribeState *s = mq_malloc0(sizeof(DescribeState));

	req->state = s;
	req->free_state = describe_state_free;
	s->names = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
	s->stmt = mq_malloc0(sizeof(int) * (n > 0 ? n : 1));
	for (int32_t i = 0; i < n && !r->err; i++)
	{
		s->names[s->n++] = kslice_dup(kr_str(r));
		if (s->names[i] == NULL)
			r->err = true;
	}
	if (r->err)
	{
		req_abort(req);
		return;
	}
	group_authz_run(req, &s->authz, "describe", s->names, s->n, describe_authorized);
}
