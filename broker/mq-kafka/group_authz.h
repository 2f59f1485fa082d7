/*-------------------------------------------------------------------------
 *
 * group_authz.h
 *	  A SASL client's rights on consumer groups, asked of the database
 *	  before a group request is served (group_authz.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_GROUP_AUTHZ_H
#define MQK_GROUP_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

#include "kjob.h"
#include "mqkafka.h"

/* Lives in the handler's state; one statement per group asked about. */
typedef struct KGroupAuthz
{
	KJob		job;
} KGroupAuthz;

/*
 * Ask whether req's role may do op ("read", "describe") on each of the n
 * groups, then done(req).  Without a role (no SASL) nothing is asked and
 * done runs at once.
 */
extern void group_authz_run(KRequest *req, KGroupAuthz *a, const char *op,
							char *const *groups, int n, KDoneFn done);
/* KERR_NONE if group i is allowed; else the Kafka error to answer */
extern int16_t group_authz_error(const KGroupAuthz *a, int i);
extern void group_authz_free(KGroupAuthz *a);

#endif							/* MQK_GROUP_AUTHZ_H */
