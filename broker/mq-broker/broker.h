/*-------------------------------------------------------------------------
 *
 * broker.h
 *	  mq-broker's state: its two connections (own node, coordinator), the
 *	  partitions it holds a replica of, and each one's state in the state
 *	  machine of fsm.h (docs/replication.md shows it as a graph).
 *
 * Where the work lives (each file's header says more), top layer first
 * (docs/design.md, "Layers"; a file calls only files below it, and a
 * lower one reports up through the pointers of Broker.hooks):
 *	 main.c        command line, signals, --print-fsm; fills Broker.hooks
 *	 loop.c        the poll() loop: ticks, fetch answers, metrics; the
 *	               same served while session.c waits for the coordinator
 *	 step.c        the tick: one event per partition, the table's actions,
 *	               the events a lost or new connection fires
 *	 elect.c       elections and fencing a paused leader
 *	 isr.c         a leader's ISR shrink and expansion
 *	 handover.c    handing leadership to the preferred replica
 *	 reassign.c    the leader's part of moving replicas (placement.h)
 *	 assign.c      reading assignments; creating topics on the node
 *	 producer_ids.c keeping the node supplied with cluster-wide producer ids
 *	 recover.c     settling the node's in-doubt prepared transactions
 *	 follower.c    a follower's epoch, truncation and fetch loop
 *	 placement.c   topics placed with only our replicas hosted; throttle
 *	 topic_drop.c  dropping the node's copies of deleted topics
 *	 throttle.c    the throttle's budgets: a leader's, a follower's
 *	 liveness.c    connecting to the node and the coordinator; liveness
 *	               and leadership locks
 *	 calls_node.c  typed calls of the node's (and a leader node's) functions
 *	 calls_coord.c typed calls of the coordinator's functions
 *	 calls_placement.c typed calls of the placement functions
 *	 session.c     statements on the two sessions, deadlines, a lost one
 *	 fsm.c         the transition table and fsm_fire (actions: step.c's,
 *	               through hooks.fsm_actions)
 *	 intarray.c    int4[] text form and membership
 *	 batch.c       the little of a fetched batch the broker reads
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

/* A follower as a leader's node sees it (mq.replica_leader_state). */
typedef struct ReplicaProgress
{
	int			id;
	bool		in_isr;
	int64_t		log_end;		/* -1 while unknown */
	int64_t		lag_ms;
	int64_t		leader_log_end;
	int64_t		high_watermark;
	int64_t		epoch_start;
	bool		caught_up;		/* reached the log end in this epoch */
} ReplicaProgress;

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
	char	   *incarnation;	/* the topic's: another is another topic */
	bool		seen;

	/* what this broker has applied; state is written by fsm_fire() only */
	PartState	state;
	int			applied_epoch;	/* epoch the node was set to, -1 */
	bool		lock_held;		/* partition leadership lock on the coordinator */
	int64_t		leader_since_us;
	int64_t		leaderless_since_us;	/* when we saw it without a live leader, 0 */
	int64_t		preferred_ready_since_us;	/* leader: preferred replica in the ISR since */
	int			preferred_ready_epoch;	/* ... in this leader epoch */
	bool		elect_preferred;	/* ElectLeaders: hand over at once */
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
	 * leader: its followers' progress as the tick's one statement for every
	 * led partition read it (isr.c, leaders_read_states), taken once by
	 * this tick's read while states_gen is the broker's and the epoch the
	 * one it was read in
	 */
	ReplicaProgress states[MAX_REPLICAS];
	int			nstates;
	int			states_epoch;
	uint64_t	states_gen;

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

	/*
	 * follower: reconnecting to the leader's node for truncation (its
	 * connection is one of Broker.leader_conns, follower.c), and the
	 * fetch session whose fetch in flight holds the partition
	 */
	MqRetry		fconn_retry;
	struct FetchSession *session;
	bool		in_flight;
	int			sent_index;		/* its place in that fetch */
	int64_t		fetch_offset;
	int64_t		offsets_version;	/* committed offsets the node applied; -1: unknown */
	int64_t		applied_hwm;	/* the last answer's high watermark and log */
	int64_t		applied_log_start;	/* start the node was given; -1: unknown */
	bool		last_records;	/* the last answer brought records */
	int64_t		backoff_until_us;	/* no fetch before (leader said "not yet") */

	struct Part *next;
} Part;

struct Broker;

/*
 * What the upper layers hand down to the lower ones (main.c fills it,
 * broker_init copies it): session.c and fsm.c call up only through these.
 */
typedef struct BrokerHooks
{
	/* fsm.c runs a row's action as fsm_actions[id] (step.c's table) */
	const FsmAction *fsm_actions;
	/* session.c waits for the coordinator: serve what needs none (loop.c) */
	void		(*serve_while_waiting) (struct Broker *b, int fd, int64_t deadline_us);
	/* session.c lost the node: roles and liveness go (step.c) */
	void		(*node_lost) (struct Broker *b);
	/* session.c lost the coordinator, reconnecting in pause_ms (step.c) */
	void		(*coord_lost) (struct Broker *b, int pause_ms);
} BrokerHooks;

typedef struct Broker
{
	BrokerConfig *cfg;
	BrokerHooks hooks;
	MqConnPolicy policy;		/* every connection of this broker */
	PGconn	   *node;
	PGconn	   *coord;
	MqConnectJob *coord_job;	/* connecting to the coordinator (liveness.c), NULL */
	bool		coord_warned;	/* a WARNING came with the statement under way */
	bool		coord_busy;		/* session.c waits for a coordinator statement */
	bool		node_lost_pending;	/* lost the node meanwhile: roles go after it */
	int64_t		wait_refresh_us;	/* next leader refresh while waiting (loop.c) */
	uint64_t	states_gen;		/* leaders_read_states calls (isr.c) */
	bool		live;			/* holds its liveness lock */
	bool		recovery_pending;	/* the last tick's recovery found work */
	int64_t		live_since_us;	/* when it took it (mq_now_us) */
	MqRetry		node_retry;
	MqRetry		coord_retry;
	Part	   *parts;
	struct FetchSession *sessions;	/* one per leader's node (fetch_session.c) */
	struct LeaderConn *leader_conns;	/* truncation's, one per leader's node (follower.c) */
	int			live_brokers[MAX_LIVE_BROKERS];
	int			nlive;
	struct PlacedTopic *placed; /* topics placed on the node (placement.c) */
	struct Unhost *unhosts;		/* replicas that moved away, still to mark */
	int			place_chunk;	/* partitions per placing statement (placement.c) */
	int			place_done;		/* placing statements run this tick */
	int64_t		place_until_us; /* no further one this tick after */
	int64_t		rack_live_since_us;	/* live_since_us when our rack was registered */
	bool		drops_due;		/* look for deleted topics on the node (topic_drop.c) */
	int64_t		drops_live_since_us;	/* live_since_us when last looked */
	bool		drops_read;		/* this tick looked (topic_drop_read) */
	PGresult   *drops_gone;		/* and found these deleted, to drop */
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
extern Part *broker_find_part(struct Broker *b, const char *topic, int partition);

/* session.c */
extern void broker_init(Broker *b, BrokerConfig *cfg, const BrokerHooks *hooks);
extern PGresult *node_exec(Broker *b, const char *sql, const MqParams *params,
						   int fmt, MqError *err);
extern PGresult *coord_exec(Broker *b, const char *sql, const MqParams *params,
							MqError *err);
extern void coord_session_start(Broker *b);
extern void broker_node_lost(Broker *b, const MqError *err);
extern void broker_node_readable(Broker *b);
extern void log_mq_error(const char *what, const MqError *err);

/* liveness.c */
extern bool node_session_open(Broker *b);
extern bool node_session_attach(Broker *b);
extern void ensure_coordinator(Broker *b);
extern void liveness_give_up(Broker *b);
extern void release_lock(Broker *b, Part *p);

/* intarray.c */
extern int	parse_int_array(const char *s, int *out, int max);
extern bool int_in(int v, const int *a, int n);
extern const char *int_array_text(const int *a, int n, char *buf, size_t size);

/* assign.c */
extern bool read_assignments(Broker *b);
extern bool ensure_topic(Broker *b, Part *p);
extern bool broker_is_live(Broker *b, int id);
extern bool topic_config_unclean(const char *config_json);
extern void free_part(Part *p);

/* step.c */
extern const FsmAction broker_fsm_actions[FSM_NACTIONS];
extern void broker_node_lost_roles(Broker *b);
extern void broker_coord_lost_roles(Broker *b, int pause_ms);
extern void broker_tick(Broker *b);
extern int64_t broker_next_tick_us(Broker *b, int64_t start_us);
extern int	broker_idle_tick_ms(const Broker *b);
extern void broker_renew_lease(Broker *b);
extern void broker_shutdown(Broker *b);

/* elect.c */
extern void try_elect(Broker *b, Part *p);
extern bool take_lock(Broker *b, Part *p);

/* isr.c */
extern void leaders_read_states(Broker *b);
extern void leader_duties(Broker *b, Part *p);
extern void leaders_refresh(Broker *b, bool may_resign);

/* handover.c */
extern int	preferred_leader(const Part *p);
extern bool preferred_ready(Broker *b, const Part *p);
extern void maybe_hand_over(Broker *b, Part *p);

/* follower.c */
extern bool follower_step(Broker *b, Part *p);
extern void follower_take_batch(Broker *b, Part *p, const char *batch, int len);
extern void follower_take_error(Broker *b, Part *p, const MqError *err);
extern void follower_stop(Part *p);
extern void follower_conns_tidy(Broker *b);
extern void follower_conns_free(Broker *b);

/* fetch_session.c */
typedef struct FetchSession FetchSession;
extern void fetch_session_want(Broker *b, Part *p);
extern void fetch_session_readable(Broker *b, FetchSession *s);
extern FetchSession *fetch_session_next(Broker *b, FetchSession *s);
extern int	fetch_session_fd(const FetchSession *s);
extern void fetch_sessions_tidy(Broker *b);
extern void fetch_sessions_free(Broker *b);

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
