/*-------------------------------------------------------------------------
 *
 * coffsets.h
 *	  __consumer_offsets in a replicated cluster: its partitions and their
 *	  leaders as every daemon describes them (coffsets.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_COFFSETS_H
#define MQK_COFFSETS_H

#include "kfan.h"
#include "mqkafka.h"

/* Kafka's internal topic of offset commits, created when first named */
#define CONSUMER_OFFSETS_TOPIC "__consumer_offsets"

/* partitions per listener (the extension's MQ_CO_NODE_PARTITIONS) */
#define KCO_NODE_PARTITIONS 2

/* its partition count in the cluster's view (0: no listener known) */
extern int	coffsets_partitions(void);

/*
 * The leader of one of its partitions, -1 if it has none live; *replica
 * is the broker that holds it (-1: none).
 */
extern int	coffsets_leader(int partition, int *replica);

/*
 * A job on f for every live listener's node (this one's local pool):
 * make its topic have these partitions.
 */
extern void coffsets_add_ensures(KFan *f, int partitions);

#endif							/* MQK_COFFSETS_H */
