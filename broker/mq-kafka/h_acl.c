/*-------------------------------------------------------------------------
 *
 * h_acl.c
 *	  DescribeAcls (v0-v3) and CreateAcls (v0-v3) on mq's grants
 *	  (kacl.c maps Kafka's model; DeleteAcls is h_acl_delete.c).  Loop
 *	  thread; one job.
 *
 * Both run as the principal's role (pool.c), so mq decides as for SQL:
 * DescribeAcls needs DESCRIBE on the cluster, as in Kafka (else
 * CLUSTER_AUTHORIZATION_FAILED, where SQL's mq.grants would show a role
 * the grants that apply to it), and then lists every grant the filter
 * matches; CreateAcls calls mq.grant, which only an administrator
 * (ALTER on the cluster) or a topic's owner may (42501 answers
 * CLUSTER_AUTHORIZATION_FAILED, Kafka's code for ACL changes).  Each
 * creation is its own statement and transaction: one refused leaves the
 * others, and itself nothing.  In a replicated cluster the creations made
 * here are then made on every other live node too (kmirror.c): grants
 * are each node's, Kafka's ACLs the cluster's.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "kacl.h"
#include "kerr.h"
#include "kmirror.h"
#include "util.h"

typedef struct AclState
{
	KJob		job;
	KMirror		mirror;			/* in a cluster: the other nodes' */
	int32_t		n;
	KAcl	   *acls;
} AclState;

static void
acl_state_free(void *p)
{
	AclState   *s = p;

	kjob_free(&s->job);
	kmirror_free(&s->mirror);
	free(s->acls);
	free(s);
}

static AclState *
acl_state(KRequest *req, int32_t n)
{
	AclState   *s = mq_malloc0(sizeof(AclState));

	req->state = s;
	req->free_state = acl_state_free;
	s->n = n;
	s->acls = mq_malloc0(sizeof(KAcl) * (n > 0 ? n : 1));
	return s;
}

/* the rows of KACL_MATCH_SQL as DescribeAcls' resources, grouped */
static void
write_resources(KWriter *w, int16_t version, const PGresult *res)
{
	bool		flex = version >= 2;
	int			rows = res ? PQntuples(res) : 0;
	int			nres = 0;

	for (int i = 0; i < rows; i++)
		nres += i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0 ||
			strcmp(PQgetvalue(res, i, 1), PQgetvalue(res, i - 1, 1)) != 0 ||
			strcmp(PQgetvalue(res, i, 2), PQgetvalue(res, i - 1, 2)) != 0;
	kacl_w_array(w, flex, nres);
	for (int i = 0; i < rows;)
	{
		int			j = i;

		while (j < rows && strcmp(PQgetvalue(res, j, 0), PQgetvalue(res, i, 0)) == 0 &&
			   strcmp(PQgetvalue(res, j, 1), PQgetvalue(res, i, 1)) == 0 &&
			   strcmp(PQgetvalue(res, j, 2), PQgetvalue(res, i, 2)) == 0)
			j++;
		kw_i8(w, kacl_type_code(PQgetvalue(res, i, 0)));
		kacl_w_str(w, flex, PQgetvalue(res, i, 2));
		if (version >= 1)
			kw_i8(w, kacl_pattern_code(PQgetvalue(res, i, 1)));
		kacl_w_array(w, flex, j - i);
		for (int k = i; k < j; k++)
		{
			char		principal[80];

			snprintf(principal, sizeof(principal), "User:%s",
					 PQgetisnull(res, k, 3) ? "*" : PQgetvalue(res, k, 3));
			kacl_w_str(w, flex, principal);
			kacl_w_str(w, flex, "*");
			kw_i8(w, kacl_op_code(PQgetvalue(res, k, 4)));
			kw_i8(w, kacl_perm_code(PQgetvalue(res, k, 5)));
			kacl_w_tags(w, flex);
		}
		kacl_w_tags(w, flex);
		i = j;
	}
}

static void
describe_done(KRequest *req)
{
	AclState   *s = req->state;
	KAcl	   *a = &s->acls[0];
	bool		flex = req->api_version >= 2;
	KWriter    *w = &req->resp;
	const char *message = a->message;
	int16_t		code = a->error;

	if (code == KERR_NONE)
		code = kacl_cluster_code(&s->job.stmts[0]);
	if (code == KERR_NONE && a->stmt >= 0)
		code = kacl_stmt_error(&s->job.stmts[a->stmt], &message);
	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, code);
	if (flex)
		kw_compact_str(w, message);
	else
		kw_str(w, message);
	write_resources(w, req->api_version, code == KERR_NONE && a->stmt >= 0 ?
					s->job.stmts[a->stmt].res : NULL);
	kacl_w_tags(w, flex);
	req_finish(req);
}

void
h_describe_acls(KRequest *req)
{
	AclState   *s = acl_state(req, 1);
	KAcl	   *a = &s->acls[0];

	kacl_read(&req->body, req->api_version, true, a);
	if (req->body.err)
	{
		req_abort(req);
		return;
	}
	kacl_add_cluster_check(&s->job, "describe");
	if (kacl_check_filter(a) && !a->matches_nothing)
	{
		kacl_filter_params(kjob_add(&s->job, KACL_MATCH_SQL
									" ORDER BY 1, 2, 3, 4 NULLS FIRST, 5, 6", 0), a);
		a->stmt = 1;
	}
	pool_run(req, &s->job, describe_done);
}

static void
create_done(KRequest *req)
{
	AclState   *s = req->state;
	bool		flex = req->api_version >= 2;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kacl_w_array(w, flex, s->n);
	for (int32_t i = 0; i < s->n; i++)
	{
		KAcl	   *a = &s->acls[i];
		const char *message = a->message;
		int16_t		code = a->error;

		if (a->stmt >= 0)
			code = kacl_stmt_error(&s->job.stmts[a->stmt], &message);
		kw_i16(w, code);
		if (flex)
			kw_compact_str(w, message);
		else
			kw_str(w, message);
		kacl_w_tags(w, flex);
	}
	kacl_w_tags(w, flex);
	req_finish(req);
}

#define GRANT_SQL "SELECT mq.grant($1, $2, $3," \
	" CASE WHEN $4 = '*' THEN 'PUBLIC' ELSE pg_catalog.quote_ident($4) END, $5, $6)"

static void
plan_creation(AclState *s, KAcl *a)
{
	KStmt	   *st;
	char	   *name,
			   *grantee;

	if (!kacl_check_binding(a))
		return;
	name = kslice_dup(a->resource_name);
	grantee = kacl_grantee(a);
	st = kjob_add(&s->job, GRANT_SQL, 0);
	kstmt_text(st, MQ_TEXTOID, kacl_op_name(a->operation));
	kstmt_text(st, MQ_TEXTOID, kacl_type_name(a->resource_type));
	kstmt_text(st, MQ_TEXTOID, name);
	kstmt_text(st, MQ_TEXTOID, grantee);
	kstmt_text(st, MQ_TEXTOID, kacl_pattern_name(a->pattern_type));
	kstmt_text(st, MQ_TEXTOID, kacl_perm_name(a->permission));
	a->stmt = s->job.n - 1;
	free(name);
	free(grantee);
}

/* done here: the same on every other node (grants are each node's) */
static void
created(KRequest *req)
{
	AclState   *s = req->state;

	kmirror_run(&s->mirror, req, &s->job, create_done);
}

void
h_create_acls(KRequest *req)
{
	KReader    *r = &req->body;
	bool		flex = req->api_version >= 2;
	AclState   *s = acl_state(req, kacl_array(r, flex));

	for (int32_t i = 0; i < s->n && !r->err; i++)
		kacl_read(r, req->api_version, false, &s->acls[i]);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	for (int32_t i = 0; i < s->n; i++)
		plan_creation(s, &s->acls[i]);
	pool_run(req, &s->job, created);
}
