/*-------------------------------------------------------------------------
 *
 * kmirror.h
 *	  A request's job, once it ran on this node, sent again to every other
 *	  live node of a replicated cluster: the statements that succeeded
 *	  here, as the client's role, through kfan.  For what each node keeps
 *	  for itself but Kafka keeps for the cluster (ACLs: CreateAcls and
 *	  DeleteAcls; SCRAM credentials: AlterUserScramCredentials).  The
 *	  answer is this node's; a node that refuses or is down is logged and
 *	  keeps what it had.
 *
 * Loop thread only.  Without a cluster it calls done at once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KMIRROR_H
#define MQK_KMIRROR_H

#include "kfan.h"

typedef struct KMirror
{
	KFan		fan;
	KRequest	sub;			/* what the fan runs for (the client's role) */
	KRequest   *req;			/* the client's request */
	KDoneFn		done;
} KMirror;

/* job's successful statements on every other live node; then done(req) */
extern void kmirror_run(KMirror *m, KRequest *req, const KJob *job, KDoneFn done);
extern void kmirror_free(KMirror *m);

#endif							/* MQK_KMIRROR_H */
