/*-------------------------------------------------------------------------
 *
 * broker.h
 *	  mq-broker's state: its two connections (own node, coordinator), the
 *	  partitions it holds a replica of, and each one's state in the state
 *	  machine of fsm.h (docs/replication.md shows it as a graph).
 *
 * Where the work lives (each file's header says more):
 *	 main.c        command line, signals, --print-fsm
 *	 loop.c        the poll() loop: ticks, fetch answers, metrics; the
 *	               same served while conn.c waits for the coordinator
 *	 conn.c        connections to the node and the coordinator; liveness
 *	 calls_node.c  typed calls of the node's (and a leader node's) functions
 *	 calls_coord.c typed calls of the coordinator's functions
 *	 assign.c      reading assignments; creating topics on the node
 *	 step.c        the tick: one event per partition, the table's actions
 *	 elect.c       elections and fencing a paused leader
 *	 isr.c         a leader's ISR shrink and expansion
 *	 handover.c    handing leadership to the preferred replica
 *	 placement.c   topics placed with only our replicas hosted; throttle
 *	 throttle.c    the throttle's budgets: a leader's, a follower's
 *	 reassign.c    the leader's part of moving replicas (placement.h)
 *	 calls_placement.c typed calls of the placement functions
 *	 follower.c    a follower's epoch, truncation and fetch loop
 *	 batch.c       the little of a fetched batch the broker reads
 *	 producer_ids.c keeping the node supplied with cluster-wide producer ids
 *	 config.c      the ini file
 *	 metrics.c     the Prometheus endpoint
 *
 * Locking: none; the broker is one thread (connpolicy.c's cancel and
 * connect threads touch nothing of this).  While it waits for the
 * coordinator it serves only what needs no coordinator (loop.c,
 * broker_serve_while_waiting): follower fetch answers, the next fetch,
 * leaders' progress reads and scrapes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_H
#define MQ_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "config.h"
#include "connpolicy.h"
#include "fsm.h"
#include "mqconn.h"

#define MAX_REPLICAS 16
#define MAX_LIVE_BROKERS 64

typedef struct FollowerInfo
{
	int			id;
	bool		in_isr;
	int64_t		log_end;		/* its last fetch offset, -1 */
	int64_t		lag_ms;			/* since it last caught up */
} FollowerInfo;

typedef struct Part
{
	/* from the coordinator, refreshed every tick */
	char	   *topic;
	int			partition;
	int			partitions;
	char	   *config;			/* topic config, JSON */
	bool		unclean;		/* config: unclean.leader.election.enable */
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

	/* what this broker has applied; state is written by fsm_fire() only */
	PartState	state;
	int			applied_epoch;	/* epoch the node was set to, -1 */
	bool		lock_held;		/* partition leadership lock on the coordinator */
	int64_t		leader_since_us;
	int64_t		leaderless_since_us;	/* when we saw it without a live leader, 0 */
	int64_t		preferred_ready_since_us;	/* leader: preferred replica in the ISR since */
	int			preferred_ready_epoch;	/* ... in this leader epoch */
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
	FollowerInfo followers[MAX_REPLICAS];
	int			nfollowers;

	/*
	 * Reassignment (placement.c, reassign.c): the target replica set while
	 * the partition moves (ntarget 0: not moving) and, on a throttled
	 * copy, the bytes/s it copies at (throttle.c); on the leader, the
	 * replica set its node has (0: not set by us yet).
	 */
	int			target[MAX_REPLICAS];
	int			ntarget;
	int64_t		copy_rate;		/* 0: no limit */
	int			node_replicas[MAX_REPLICAS];
	int			nnode_replicas;

	/* follower: connection to the leader's node and the fetch in flight */
	PGconn	   *fconn;
	char	   *fconn_info;
	MqRetry		fconn_retry;	/* reconnecting to the leader's node */
	bool		in_flight;
	int64_t		fetch_offset;
	int64_t		offsets_version;	/* committed offsets the node applied; -1: unknown */
	int64_t		backoff_until_us;	/* no fetch before (leader said "not yet") */

	struct Part *next;
} Part;

typedef struct Broker
{
	BrokerConfig *cfg;
	MqConnPolicy policy;		/* every connection of this broker */
	PGconn	   *node;
	PGconn	   *coord;
	MqConnectJob *coord_job;	/* connecting to the coordinator (conn.c), NULL */
	bool		coord_warned;	/* a WARNING came with the statement under way */
	bool		coord_busy;		/* conn.c waits for a coordinator statement */
	bool		node_lost_pending;	/* lost the node meanwhile: roles go after it */
	int64_t		wait_refresh_us;	/* next leader refresh while waiting (loop.c) */
	bool		live;			/* holds its liveness lock */
	int64_t		live_since_us;	/* when it took it (mq_now_us) */
	MqRetry		node_retry;
	MqRetry		coord_retry;
	Part	   *parts;
	int			live_brokers[MAX_LIVE_BROKERS];
	int			nlive;
	struct PlacedTopic *placed; /* topics placed on the node (placement.c) */
	struct Unhost *unhosts;		/* replicas that moved away, still to mark */
	int64_t		rack_live_since_us;	/* live_since_us when our rack was registered */
	struct
	{
		int64_t		elections;	/* won by this broker */
		int64_t		isr_shrinks;
		int64_t		isr_expands;
		int64_t		handovers;	/* to the preferred leader */
		int64_t		truncations;	/* divergent suffixes cut as a follower */
	}			stats;			/* counters for metrics.c */
} Broker;

/* fsm.c */
extern const char *part_label(const Part *p);

/* conn.c */
extern void broker_init(Broker *b, BrokerConfig *cfg);
extern void ensure_node(Broker *b);
extern void ensure_coordinator(Broker *b);
extern PGresult *node_exec(Broker *b, const char *sql, const MqParams *params,
						   int fmt, MqError *err);
extern PGresult *coord_exec(Broker *b, const char *sql, const MqParams *params,
							MqError *err);
extern void broker_node_lost(Broker *b, const MqError *err);
extern void broker_node_readable(Broker *b);
extern void log_mq_error(const char *what, const MqError *err);
extern void release_lock(Broker *b, Part *p);

/* assign.c */
extern bool read_assignments(Broker *b);
extern bool ensure_topic(Broker *b, Part *p);
extern bool int_in(int v, const int *a, int n);
extern bool broker_is_live(Broker *b, int id);
extern int	parse_int_array(const char *s, int *out, int max);
extern bool topic_config_unclean(const char *config_json);
extern void free_part(Part *p);

/* step.c */
extern void broker_tick(Broker *b);
extern void broker_renew_lease(Broker *b);
extern void broker_shutdown(Broker *b);

/* elect.c */
extern void try_elect(Broker *b, Part *p);
extern bool take_lock(Broker *b, Part *p);

/* isr.c */
extern void leader_duties(Broker *b, Part *p);
extern void leader_refresh(Broker *b, Part *p);
extern void leader_refresh_waiting(Broker *b, Part *p);

/* handover.c */
extern int	preferred_leader(const Part *p);
extern bool preferred_ready(Broker *b, const Part *p);
extern void maybe_hand_over(Broker *b, Part *p);

/* follower.c */
extern void follower_step(Broker *b, Part *p);
extern void follower_on_readable(Broker *b, Part *p);
extern void follower_stop(Part *p);

/* producer_ids.c */
extern void supply_producer_ids(Broker *b);

/* recover.c */
extern void recover_prepared(Broker *b);

/* loop.c */
extern void broker_run(Broker *b, volatile int *stop_requested);
extern void broker_serve_while_waiting(Broker *b, int fd, int64_t deadline_us);

/* metrics.c */
struct pollfd;
extern bool metrics_start(Broker *b, const char *address);
/* add the daemon's descriptor to fds (returns how many); lower *timeout_ms if due sooner */
extern int	metrics_pollfds(struct pollfd *fds, int64_t *timeout_ms);
extern void metrics_run(void);
extern void metrics_stop(void);

#endif							/* MQ_BROKER_H */
