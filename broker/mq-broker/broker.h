/*-------------------------------------------------------------------------
 *
 * broker.h
 *	  mq-broker's state: its two connections (own node, coordinator), the
 *	  partitions it holds a replica of, and each one's named state.
 *
 * Partition states and their transitions (docs/replication.md has the
 * diagram):
 *
 *	 NONE ----(coordinator names another leader)----> FOLLOWER_TRUNCATE
 *	 NONE ----(leader gone, we are in the ISR, lock won)----> LEADER
 *	 FOLLOWER_TRUNCATE --(KIP-101 done)--> FOLLOWER_FETCH
 *	 FOLLOWER_FETCH --(epoch changes / log diverged)--> FOLLOWER_TRUNCATE
 *	 LEADER --(deposed, node lost, coordinator lost, shutdown)--> NONE
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_H
#define MQ_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "config.h"
#include "mqconn.h"

#define MAX_REPLICAS 16

typedef enum PartState
{
	PART_NONE,					/* no role applied on the node yet */
	PART_LEADER,
	PART_FOLLOWER_TRUNCATE,		/* must run leader-epoch truncation */
	PART_FOLLOWER_FETCH			/* fetching from the leader */
} PartState;

typedef struct Part
{
	/* from the coordinator, refreshed every tick */
	char	   *topic;
	int			partition;
	int			partitions;
	char	   *config;			/* topic config, JSON */
	int			lock_id;
	int			replicas[MAX_REPLICAS];
	int			nreplicas;
	int			isr[MAX_REPLICAS];
	int			nisr;
	int			leader;			/* -1 when none */
	int			leader_epoch;
	char	   *leader_conninfo;
	char	   *leader_name;
	bool		seen;

	/* what this broker has applied */
	PartState	state;
	int			applied_epoch;	/* epoch the node was set to, -1 */
	bool		lock_held;		/* partition leadership lock on the coordinator */
	int64_t		leader_since_us;
	int64_t		leaderless_since_us;	/* when we saw it without a live leader, 0 */
	int64_t		preferred_ready_since_us;	/* leader: preferred replica in the ISR since */
	int64_t		hold_off_until_us;	/* handed leadership over: no re-election before */

	/*
	 * What metrics.c reports (-1 while unknown): this replica's log end and
	 * the high watermark (leader: from its last tick; follower: from its
	 * last fetch and append), the leader's log end as a follower last saw
	 * it, and, on the leader, each follower's progress.
	 */
	int64_t		m_log_end;
	int64_t		m_hwm;
	int64_t		m_leader_log_end;
	struct
	{
		int			id;
		bool		in_isr;
		int64_t		log_end;	/* its last fetch offset, -1 */
		int64_t		lag_ms;		/* since it last caught up */
	}			followers[MAX_REPLICAS];
	int			nfollowers;

	/* follower: connection to the leader's node and the fetch in flight */
	PGconn	   *fconn;
	char	   *fconn_info;
	bool		in_flight;
	int64_t		fetch_offset;
	int64_t		backoff_until_us;

	struct Part *next;
} Part;

typedef struct Broker
{
	BrokerConfig *cfg;
	PGconn	   *node;
	PGconn	   *coord;
	bool		live;			/* holds its liveness lock */
	int64_t		node_retry_us;
	int64_t		coord_retry_us;
	Part	   *parts;
	int			live_brokers[64];
	int			nlive;
	struct
	{
		int64_t		elections;	/* won by this broker */
		int64_t		isr_shrinks;
		int64_t		isr_expands;
		int64_t		handovers;	/* to the preferred leader */
		int64_t		truncations;	/* divergent suffixes cut as a follower */
	}			stats;			/* counters for metrics.c */
} Broker;

/* broker.c */
extern void broker_log(const char *level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void broker_tick(Broker *b);
extern void broker_shutdown(Broker *b);
extern void broker_node_lost(Broker *b, const MqError *err);
extern void broker_node_readable(Broker *b);
extern PGresult *node_exec(Broker *b, const char *sql, const MqParams *params,
						   int fmt, MqError *err);
extern const char *part_label(const Part *p);

/* metrics.c */
#include <sys/select.h>
extern bool metrics_start(Broker *b, const char *address);
extern void metrics_fdset(fd_set *rfds, fd_set *wfds, fd_set *efds, int *maxfd,
						  int64_t *timeout_us);
extern void metrics_run(fd_set *rfds, fd_set *wfds, fd_set *efds);
extern void metrics_stop(void);

/* follower.c */
extern void follower_step(Broker *b, Part *p);
extern void follower_on_readable(Broker *b, Part *p);
extern void follower_stop(Part *p);

#endif							/* MQ_BROKER_H */
