/*-------------------------------------------------------------------------
 *
 * kfan.h
 *	  One request's statements on several pools at once: a job per pool
 *	  (this node's, or another node's in a replicated cluster), run
 *	  concurrently; the request's done callback runs once all are back.
 *	  Offset commits and fetches use it to reach each partition's leader.
 *
 * Loop thread only.  Each pool's job runs as a request of its own (the
 * pools queue and answer requests), so nothing waits on another node in
 * the loop.  A lost connection of the local pool still closes the
 * client's connection afterwards (req->db_lost); another node's does not.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KFAN_H
#define MQK_KFAN_H

#include "kjob.h"
#include "mqkafka.h"

typedef struct KFan KFan;

typedef struct KRoute
{
	KRequest	sub;			/* what the pool runs */
	KPool	   *pool;
	KJob		job;
	KFan	   *fan;
} KRoute;

struct KFan
{
	KRequest   *req;
	KDoneFn		done;
	bool		daemon_role;	/* the jobs run as the daemon, not as req's role */
	int			n;
	int			cap;
	int			pending;
	KRoute	  **routes;			/* n of cap; a cluster of any size */
};

/* the job for pool (made on first use) */
extern KJob *kfan_job(KFan *f, KPool *pool);
/* run every job; done(req) when all are back */
extern void kfan_run(KFan *f, KRequest *req, KDoneFn done);
extern void kfan_free(KFan *f);

#endif							/* MQK_KFAN_H */
