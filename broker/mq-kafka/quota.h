/*-------------------------------------------------------------------------
 *
 * quota.h
 *	  Kafka's client quotas: read from the database (quota_load.c) and
 *	  enforced (quota.c), with the rate each client entity uses.  Loop
 *	  thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_QUOTA_H
#define MQK_QUOTA_H

#include "mqkafka.h"

typedef enum KQuotaKind
{
	KQUOTA_PRODUCE,				/* producer_byte_rate: Produce request bytes */
	KQUOTA_FETCH,				/* consumer_byte_rate: Fetch response bytes */
	KQUOTA_REQUEST,				/* request_percentage: database time, in us */
	KQUOTA_KINDS
} KQuotaKind;

/* a part of a quota entity (a user, a client id): absent, a name, or the default */
typedef enum KQuotaPart
{
	KQUOTA_NONE,
	KQUOTA_NAME,
	KQUOTA_DEFAULT
} KQuotaPart;

/* quota_load.c: read the quotas now and every QUOTA_REFRESH_MS from then on */
extern void quota_start(void);
/* read them again now (they were just changed through this daemon), then done(req) */
extern void quota_reload(KRequest *req, KDoneFn done);

/* quota.c: enforce the rows of mq.client_quota_lookup() from now on; their count */
extern int	quota_take(PGresult *res);
/* drop the meters nobody used for an hour */
extern void quota_expire(void);

/*
 * Count amount of kind (bytes, or us of database time) against req's
 * client (its role and client id) and return how long its connection
 * must now wait, in ms: 0 within its quota or without one.  The caller
 * answers with that throttle_time_ms and sets req->throttle_ms, which
 * mutes the connection for as long.
 */
extern int32_t quota_record(KRequest *req, KQuotaKind kind, int64_t amount);

#endif							/* MQK_QUOTA_H */
