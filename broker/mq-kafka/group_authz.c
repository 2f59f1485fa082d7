/*-------------------------------------------------------------------------
 *
 * group_authz.c
 *	  Whether a SASL client's role may use a consumer group, asked before
 *	  each group request is served, as Kafka's authorizer checks every
 *	  group API: READ on the group for JoinGroup, SyncGroup, Heartbeat,
 *	  LeaveGroup (and OffsetCommit, h_offsets.c), DESCRIBE for
 *	  DescribeGroups and for each group ListGroups lists.  Without that, a
 *	  principal without rights could take a member id from DescribeGroups
 *	  and heartbeat, sync (reading the victim's assignment) or leave in its
 *	  name.
 *
 * The answer is mq.has_group_privilege run as the client's role (pool.c
 * sets the role per transaction), so mq's grants decide exactly as they
 * do for SQL clients, and a revoke takes effect at the client's next
 * group request.  A connection without SASL acts as the daemon's own role
 * and nothing is asked.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#include "group_authz.h"

#include <string.h>

#include "kerr.h"

static const char sql_group_privilege[] = "SELECT mq.has_group_privilege($1, $2)";

void
group_authz_run(KRequest *req, KGroupAuthz *a, const char *op,
				char *const *groups, int n, KDoneFn done)
{
	if (req->role == NULL || n == 0)
	{
		done(req);
		return;
	}
	for (int i = 0; i < n; i++)
	{
		KStmt	   *st = kjob_add(&a->job, sql_group_privilege, 0);

		kstmt_text(st, MQ_TEXTOID, groups[i] ? groups[i] : "");
		kstmt_text(st, MQ_TEXTOID, op);
	}
	pool_run(req, &a->job, done);
}

int16_t
group_authz_error(const KGroupAuthz *a, int i)
{
	const KStmt *st;
	int16_t		code;

	if (i >= a->job.n)
		return KERR_NONE;		/* nothing was asked: no SASL */
	st = &a->job.stmts[i];
	if (kstmt_failed(st, &code))
		return code == KERR_NONE ? KERR_GROUP_AUTHORIZATION_FAILED : code;
	return strcmp(PQgetvalue(st->res, 0, 0), "t") == 0 ? KERR_NONE :
		KERR_GROUP_AUTHORIZATION_FAILED;
}

void
group_authz_free(KGroupAuthz *a)
{
	kjob_free(&a->job);
}
