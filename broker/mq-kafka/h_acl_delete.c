/*-------------------------------------------------------------------------
 *
 * h_acl_delete.c
 *	  DeleteAcls (v0-v3) on mq.revoke.  Loop thread; one job with a
 *	  statement per filter.
 *
 * A filter's statement finds the grants it matches in mq.grants as the
 * principal's role sees them (kacl.h's KACL_MATCH_SQL) and revokes each
 * with mq.revoke, which only an administrator or the topic's owner may
 * (42501: CLUSTER_AUTHORIZATION_FAILED, and nothing of that filter is
 * revoked: one statement, one transaction).  As Kafka checks ALTER on
 * the cluster before matching anything, a filter of a principal without
 * it that deleted nothing answers CLUSTER_AUTHORIZATION_FAILED too, not
 * an empty success (the last statement asks for the right).  mq.revoke
 * of ALL takes back every operation of that grantee on that resource (as
 * REVOKE ALL), so a matched ALL grant deletes, and lists, those grants
 * too: the answer names every grant that is gone here.  In a replicated cluster the
 * filters that succeeded here then run on every other live node too
 * (kmirror.c).
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

typedef struct DelAclState
{
	KJob		job;
	KMirror		mirror;			/* in a cluster: the other nodes' */
	int32_t		n;
	KAcl	   *filters;
	int			cluster;		/* the statement asking for ALTER on the cluster */
} DelAclState;

static void
del_state_free(void *p)
{
	DelAclState *s = p;

	kjob_free(&s->job);
	kmirror_free(&s->mirror);
	free(s->filters);
	free(s);
}

/*
 * The filter's matches m; every grant they take away d (an ALL match
 * takes the grantee's other operations on that resource); revoke each
 * match; list d, read before the revokes (the statement's snapshot).
 */
#define DELETE_SQL \
	"WITH m AS (" KACL_MATCH_SQL "), d AS (" \
	" SELECT DISTINCT a.resource_type, a.pattern_type, a.resource_name, a.role, a.operation, a.permission" \
	" FROM (" KACL_MATCH_SQL_ALL ") a JOIN m ON a.resource_type = m.resource_type" \
	"  AND a.pattern_type = m.pattern_type AND a.resource_name = m.resource_name" \
	"  AND a.grantee = m.grantee AND a.permission = m.permission" \
	"  AND (a.operation = m.operation OR m.operation = 'all'))," \
	" r AS (SELECT pg_catalog.sum(mq.revoke(m.operation, m.resource_type, m.resource_name, m.grantee," \
	"  m.pattern_type, m.permission)) AS n FROM m)" \
	" SELECT d.* FROM d, r ORDER BY 1, 2, 3, 4 NULLS FIRST, 5, 6"

/* every grant the role sees, in KACL_MATCH_SQL's columns */
#define KACL_MATCH_SQL_ALL \
	"SELECT g.resource_type, g.pattern_type, g.resource_name," \
	" CASE WHEN g.grantee = 'PUBLIC' THEN NULL ELSE" \
	"  (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = g.grantee::pg_catalog.regrole) END AS role," \
	" g.operation, g.permission, g.grantee FROM mq.grants g"

static void
write_match(KWriter *w, int16_t version, const PGresult *res, int row)
{
	bool		flex = version >= 2;
	char		principal[80];

	kw_i16(w, KERR_NONE);
	kacl_w_str(w, flex, NULL);
	kw_i8(w, kacl_type_code(PQgetvalue(res, row, 0)));
	kacl_w_str(w, flex, PQgetvalue(res, row, 2));
	if (version >= 1)
		kw_i8(w, kacl_pattern_code(PQgetvalue(res, row, 1)));
	snprintf(principal, sizeof(principal), "User:%s",
			 PQgetisnull(res, row, 3) ? "*" : PQgetvalue(res, row, 3));
	kacl_w_str(w, flex, principal);
	kacl_w_str(w, flex, "*");
	kw_i8(w, kacl_op_code(PQgetvalue(res, row, 4)));
	kw_i8(w, kacl_perm_code(PQgetvalue(res, row, 5)));
	kacl_w_tags(w, flex);
}

static void
delete_done(KRequest *req)
{
	DelAclState *s = req->state;
	bool		flex = req->api_version >= 2;
	KWriter    *w = &req->resp;
	bool		alter = kacl_cluster_code(&s->job.stmts[s->cluster]) == KERR_NONE;

	kw_i32(w, 0);				/* throttle_time_ms */
	kacl_w_array(w, flex, s->n);
	for (int32_t i = 0; i < s->n; i++)
	{
		KAcl	   *f = &s->filters[i];
		const char *message = f->message;
		int16_t		code = f->error;
		const PGresult *res = NULL;
		int			rows;

		if (f->stmt >= 0)
		{
			code = kacl_stmt_error(&s->job.stmts[f->stmt], &message);
			res = s->job.stmts[f->stmt].res;
		}
		rows = code == KERR_NONE && res ? PQntuples(res) : 0;
		if (!alter && code == KERR_NONE && rows == 0)
		{
			code = KERR_CLUSTER_AUTHORIZATION_FAILED;
			message = NULL;
		}
		kw_i16(w, code);
		kacl_w_str(w, flex, message);
		kacl_w_array(w, flex, rows);
		for (int k = 0; k < rows; k++)
			write_match(w, req->api_version, res, k);
		kacl_w_tags(w, flex);
	}
	kacl_w_tags(w, flex);
	req_finish(req);
}

/* done here: the same on every other node (grants are each node's) */
static void
deleted(KRequest *req)
{
	DelAclState *s = req->state;

	kmirror_run(&s->mirror, req, &s->job, delete_done);
}

void
h_delete_acls(KRequest *req)
{
	KReader    *r = &req->body;
	bool		flex = req->api_version >= 2;
	DelAclState *s = mq_malloc0(sizeof(DelAclState));

	req->state = s;
	req->free_state = del_state_free;
	s->n = kacl_array(r, flex);
	s->filters = mq_malloc0(sizeof(KAcl) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
		kacl_read(r, req->api_version, true, &s->filters[i]);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	for (int32_t i = 0; i < s->n; i++)
	{
		KAcl	   *f = &s->filters[i];

		if (!kacl_check_filter(f) || f->matches_nothing)
			continue;
		kacl_filter_params(kjob_add(&s->job, DELETE_SQL, 0), f);
		f->stmt = s->job.n - 1;
	}
	kacl_add_cluster_check(&s->job, "alter");
	s->cluster = s->job.n - 1;
	pool_run(req, &s->job, deleted);
}
