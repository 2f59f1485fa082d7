/*-------------------------------------------------------------------------
 *
 * cluster.h
 *	  The replicated cluster as this daemon sees it (--coordinator): the
 *	  Kafka listeners of every node, which of them are live, each node's
 *	  address, and each replicated partition's leader, replicas and ISR,
 *	  read from the coordinator database every --refresh-ms.  Metadata
 *	  answers from it, FindCoordinator chooses a group's coordinator from
 *	  it, and offset commits find the partition's leader in it.
 *
 * Loop thread only, so no locking.  Without --coordinator every function
 * answers as for a single daemon: this daemon leads and coordinates all.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_CLUSTER_H
#define MQK_CLUSTER_H

#include "mqkafka.h"

typedef struct KBroker
{
	int			id;
	char	   *host;
	int			port;
	bool		live;
	char	   *node_conninfo;	/* its node, as mq_coord.broker has it; NULL */
} KBroker;

typedef struct KPartView
{
	char	   *topic;
	int			partition;
	int			leader;			/* -1: none */
	char	   *replicas;		/* int[] in text form */
	char	   *isr;
} KPartView;

extern void cluster_start(void (*view_changed) (void));
extern bool cluster_enabled(void);
/* the listeners of the last view, by broker id (none before the first) */
extern int	cluster_nbrokers(void);
extern const KBroker *cluster_broker_at(int i);
extern const KBroker *cluster_broker(int id);
/* the view's replicated partitions, sorted by topic and partition */
extern int	cluster_npartitions(void);
extern const KPartView *cluster_partition_at(int i);
/* a replicated partition, or NULL (unreplicated, unknown, or no view) */
extern const KPartView *cluster_partition(const char *topic, int partition);
/* the view has partitions 0 .. partitions - 1 of topic, each led by a live listener */
extern bool cluster_topic_ready(const char *topic, int partitions);
/* the broker that coordinates group: -1 while no listener is live */
extern int	cluster_group_coordinator(const char *group);
extern bool cluster_coordinates(const char *group);
/*
 * The pool of the node that leads (topic, partition): the local pool for
 * partitions this node leads or that are not replicated; NULL with *code
 * a Kafka error when no live leader is known.
 */
extern KPool *cluster_leader_pool(const char *topic, int partition, int16_t *code);
/*
 * The pool of a node holding topic, for what any broker answers in Kafka
 * (CreatePartitions' and the config requests' checks): this node's when
 * it holds a replica of partition 0 (or the topic is not replicated, or
 * unknown), else that partition's leader's, else a replica's node.
 */
extern KPool *cluster_topic_pool(const char *topic);
/*
 * The pool of the node where transactional id's transactions live
 * (h_txn_end.c): chosen as a group's coordinator is, but among every
 * registered listener, live or not, so that it stays put while a daemon
 * restarts (any daemon serves the id through that node's pool); the local
 * pool when that is this node or none is known.
 */
extern KPool *cluster_txn_pool(const char *id);
/*
 * The one-connection pool to the coordinator database that the view's
 * refreshes use (NULL without --coordinator): CreateTopics in a cluster.
 */
extern KPool *cluster_coord_pool(void);
/* the pool of broker b's node (made on first use); NULL if none can be */
extern KPool *cluster_node_pool(const KBroker *b);

#endif							/* MQK_CLUSTER_H */
