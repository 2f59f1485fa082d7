/*-------------------------------------------------------------------------
 *
 * placement.h
 *	  Placement and reassignment on the broker's side (docs/replication.md,
 *	  "Placement and reassignment"): placing a replicated topic on the node
 *	  with only this broker's replicas hosted, marking replicas that moved
 *	  away not hosted, reading which partitions are moving, the copy
 *	  throttle of new replicas (placement.c, its budgets in throttle.c),
 *	  the leader's part of a move (reassign.c), and dropping the node's
 *	  copies of deleted topics (topic_drop.c).  Their typed calls are in
 *	  calls_placement.c.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_PLACEMENT_H
#define MQ_BROKER_PLACEMENT_H

#include "broker.h"

/* One row of mq_coord.moving: a move of ours, or one led by a leader of ours. */
typedef struct Moving
{
	char	   *topic;
	int			partition;
	int			target[MAX_REPLICAS];
	int			ntarget;
	int64_t		throttle_bytes; /* 0: none */
	int			leader;			/* -1: none */
	int			replicas[MAX_REPLICAS];	/* while moving: target, then leaving */
	int			nreplicas;
	int			isr[MAX_REPLICAS];
	int			nisr;
} Moving;

/* A broker's throttled copies (throttle.c): as leader, as follower. */
typedef struct ThrottleLoad
{
	int			broker;
	int			served;			/* throttled copies it serves as leader */
	int64_t		served_budget;	/* the smallest throttle among them */
	int			received;		/* throttled copies it receives */
	int64_t		received_budget;	/* the smallest throttle among them */
} ThrottleLoad;

typedef struct Throttles
{
	ThrottleLoad *load;
	int			n;
	int			cap;
} Throttles;

/* calls_placement.c */
extern bool node_place_topic(Broker *b, const Part *p, int partitions, const char *hosted,
							 int *absent, MqError *err);
extern bool node_unhost(Broker *b, const char *topic, int partition, MqError *err);
extern PGresult *node_replica_topics(Broker *b, MqError *err);
extern PGresult *coord_deleted_topics(Broker *b, const char *topics, const char *incarnations,
									  MqError *err);
extern bool node_drop_topic(Broker *b, const char *topic, const char *incarnation, bool *dropped,
							MqError *err);
extern bool node_set_replicas(Broker *b, const Part *p, const int *isr, int nisr, MqError *err);
extern bool coord_moving(Broker *b, Moving **rows, int *nrows, MqError *err);
extern void moving_free(Moving *rows, int nrows);
extern bool coord_register_rack(Broker *b, MqError *err);
extern bool coord_complete_reassignment(Broker *b, const Part *p, int *isr, int *nisr,
										bool *done, MqError *err);

/* placement.c */
extern void placement_tick(Broker *b);
extern bool placement_ensure_topic(Broker *b, Part *p);
extern void placement_forget(Broker *b, const Part *p);
extern void placement_unplace(Broker *b, const char *topic);
extern bool placement_read_moving(Broker *b);
extern void placement_register_rack(Broker *b);
extern void placement_retry_unhost(Broker *b);
extern void placement_throttle(Broker *b, Part *p, int64_t bytes);
extern void placement_free(Broker *b);

/* throttle.c */
extern bool throttle_is_copy(const Moving *m, int replica);
extern void throttles_add(Throttles *t, const Moving *m);
extern const ThrottleLoad *throttles_load(const Throttles *t, int broker);
extern int64_t throttle_rate(const Throttles *t, const Moving *m, int replica);
extern void throttles_free(Throttles *t);

/* topic_drop.c */
extern void topic_drop_read(Broker *b);
extern void topic_drop_apply(Broker *b);

/* reassign.c */
extern void reassign_leader_step(Broker *b, Part *p);
extern bool reassign_claims(Broker *b, const Part *p);

#endif							/* MQ_BROKER_PLACEMENT_H */
