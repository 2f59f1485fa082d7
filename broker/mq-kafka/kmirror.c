/*-------------------------------------------------------------------------
 *
 * kmirror.c
 *	  A job's successful statements sent again to every other live node
 *	  (kmirror.h).
 *
 * Loop thread only: no locking.  The request's state owns the KMirror,
 * whose fan's jobs hold copies of the statements.
 *
 *-------------------------------------------------------------------------
 */
#include "kmirror.h"

#include "cluster.h"
#include "util.h"

/* every node has answered: those that refused, logged; then the answer */
static void
mirrored(KRequest *sub)
{
	KMirror    *m = sub->state;

	for (int r = 0; r < m->fan.n; r++)
		for (int i = 0; i < m->fan.routes[r]->job.n; i++)
		{
			const KStmt *st = &m->fan.routes[r]->job.stmts[i];

			if (st->err.message)
				mq_log_warning("another node refused a change this node made: %s",
							   st->err.message);
		}
	m->done(m->req);
}

void
kmirror_run(KMirror *m, KRequest *req, const KJob *job, KDoneFn done)
{
	m->req = req;
	m->done = done;
	for (int b = 0; cluster_enabled() && b < cluster_nbrokers(); b++)
	{
		const KBroker *k = cluster_broker_at(b);
		KPool	   *pool = k->live && k->id != kconfig.node_id ? cluster_node_pool(k) : NULL;
		KJob	   *copy = pool ? kfan_job(&m->fan, pool) : NULL;

		for (int i = 0; copy && i < job->n; i++)
			if (job->stmts[i].err.message == NULL)
				kjob_copy(copy, &job->stmts[i]);
	}
	m->sub.state = m;
	m->sub.role = req->role;	/* borrowed: never freed */
	kfan_run(&m->fan, &m->sub, mirrored);
}

void
kmirror_free(KMirror *m)
{
	kfan_free(&m->fan);
}
