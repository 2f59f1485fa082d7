/*-------------------------------------------------------------------------
 *
 * kfan.c
 *	  A request's statements spread over several pools (kfan.h).
 *
 * Loop thread only: no locking.  pending counts the jobs not back yet,
 * plus one while kfan_run is still starting them, since a pool may
 * answer at once (no connection) before the others are started.
 *
 *-------------------------------------------------------------------------
 */
#include "kfan.h"

#include <stdlib.h>

#include "util.h"

KJob *
kfan_job(KFan *f, KPool *pool)
{
	KRoute	   *r;

	for (int i = 0; i < f->n; i++)
		if (f->routes[i]->pool == pool)
			return &f->routes[i]->job;
	if (f->n == f->cap)
	{
		f->cap = f->cap ? 2 * f->cap : 4;
		f->routes = mq_realloc(f->routes, sizeof(KRoute *) * (size_t) f->cap);
	}
	r = mq_malloc0(sizeof(KRoute));
	r->pool = pool;
	r->fan = f;
	f->routes[f->n++] = r;
	return &r->job;
}

static void
fan_settle(KFan *f)
{
	if (--f->pending == 0)
		f->done(f->req);
}

static void
route_done(KRequest *sub)
{
	KRoute	   *r = sub->state;

	if (sub->db_lost)
		r->fan->req->db_lost = true;
	fan_settle(r->fan);
}

void
kfan_run(KFan *f, KRequest *req, KDoneFn done)
{
	f->req = req;
	f->done = done;
	f->pending = f->n + 1;
	for (int i = 0; i < f->n; i++)
	{
		KRoute	   *r = f->routes[i];

		r->sub.state = r;
		r->sub.role = f->daemon_role ? NULL : req->role;	/* borrowed: never freed */
		pool_run_on(r->pool, &r->sub, &r->job, route_done);
	}
	fan_settle(f);
}

void
kfan_free(KFan *f)
{
	for (int i = 0; i < f->n; i++)
	{
		kjob_free(&f->routes[i]->job);
		free(f->routes[i]);
	}
	free(f->routes);
	f->routes = NULL;
	f->n = f->cap = 0;
}
