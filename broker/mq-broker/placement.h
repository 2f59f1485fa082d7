/*-------------------------------------------------------------------------
 *
 * placement.h
 *	  Placement and reassignment on the broker's side (docs/replication.md,
 *	  "Placement and reassignment"): placing a replicated topic on the node
 *	  with only this broker's replicas hosted, marking replicas that moved
 *	  away not hosted, reading which partitions are moving, the copy
 *	  throttle of new replicas (placement.c), and the leader's part of a
 *	  move (reassign.c).  Their typed calls are in calls_placement.c.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_PLACEMENT_H
#define MQ_BROKER_PLACEMENT_H

#include "broker.h"

/* One row of mq_coord.moving, valid during the callback only. */
typedef struct Moving
{
	const char *topic;
	int			partition;
	const char *target;			/* int4[] text */
	int64_t		throttle_bytes; /* 0: none */
} Moving;

/* calls_placement.c */
extern bool node_place_topic(Broker *b, const Part *p, const char *hosted, int *absent,
							 MqError *err);
extern bool node_unhost(Broker *b, const char *topic, int partition, MqError *err);
extern bool node_set_replicas(Broker *b, const Part *p, const int *isr, int nisr, MqError *err);
extern bool coord_moving(Broker *b, void (*each) (Broker *b, const Moving *m), MqError *err);
extern bool coord_register_rack(Broker *b, MqError *err);
extern bool coord_complete_reassignment(Broker *b, const Part *p, int *isr, int *nisr,
										bool *done, MqError *err);

/* placement.c */
extern bool placement_ensure_topic(Broker *b, Part *p);
extern void placement_forget(Broker *b, const Part *p);
extern bool placement_read_moving(Broker *b);
extern void placement_register_rack(Broker *b);
extern void placement_retry_unhost(Broker *b);
extern void placement_throttle(Broker *b, Part *p, int64_t bytes);
extern bool placement_throttled(Broker *b, const Part *p);
extern void placement_free(Broker *b);

/* reassign.c */
extern void reassign_leader_step(Broker *b, Part *p);
extern bool reassign_claims(Broker *b, const Part *p);

#endif							/* MQ_BROKER_PLACEMENT_H */
