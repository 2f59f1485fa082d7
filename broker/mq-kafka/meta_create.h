/*-------------------------------------------------------------------------
 *
 * meta_create.h
 *	  Automatic topic creation by Metadata in a replicated cluster
 *	  (meta_create.c), for h_metadata.c.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_META_CREATE_H
#define MQK_META_CREATE_H

#include "kjob.h"
#include "mqkafka.h"

/*
 * The names of $1 (text[]) that Metadata may create as the current role:
 * valid (Kafka's rule), not a topic of this node, and the role may create
 * them (each name looked up alone: OFFSET 0, as in meta_part.h).  On a
 * single daemon h_metadata.c creates them in place; in a
 * cluster meta_create.c has the coordinator make them.
 */
#define META_CREATABLE_SQL \
	"SELECT t FROM unnest($1::text[]) t" \
	" WHERE mq._topic_name_valid(t) AND mq.has_topic_privilege(t, 'create')" \
	"   AND NOT EXISTS (SELECT 1 FROM mq.topics x WHERE x.topic = t OFFSET 0)"

typedef struct MetaCreate
{
	KRequest   *req;			/* the Metadata request */
	KDoneFn		done;			/* run on it when the creations are over */
	int32_t		n;
	char	  **names;			/* the names asked that the view lacks */
	bool	   *made;			/* of names: the coordinator made it here */
	KJob		check;			/* which of names the client may create */
	KRequest	check_req;		/* as the client's role, on this node */
	KJob		coord;			/* mq_coord.create_topic of those */
	KRequest	coord_req;		/* as the daemon's role, on the coordinator */
} MetaCreate;

/*
 * Create on the coordinator, with --auto-create-topics partitions, each of
 * the n names (NULL entries skipped) that the cluster's view does not
 * have and the request's role may create, then done(req).
 */
extern void meta_create_run(MetaCreate *mc, KRequest *req, const KSlice *names, int32_t n,
							KDoneFn done);

/* did meta_create_run make the topic of name? */
extern bool meta_create_made(const MetaCreate *mc, KSlice name);

extern void meta_create_free(MetaCreate *mc);

#endif							/* MQK_META_CREATE_H */
