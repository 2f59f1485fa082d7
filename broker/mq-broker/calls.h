/*-------------------------------------------------------------------------
 *
 * calls.h
 *	  Typed calls of the SQL functions mq-broker uses: on its own node and
 *	  on a leader's node (calls_node.c), and on the coordinator
 *	  (calls_coord.c).  Each builds its parameters, runs the statement with
 *	  the connection's deadline and hands back plain C values, so that no
 *	  other file builds a parameter block or reads a result by column.
 *
 * Every function returns false after filling err (err->connection_lost
 * when the connection is gone; session.c has then already given up what
 * depended on it).  docs/replication.md, "Privileges of the broker's
 * role", lists exactly these functions: src/sql/62_broker_role.sql grants
 * them, so a call added here needs a grant there too.
 *
 * Locking: none; called from the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_CALLS_H
#define MQ_BROKER_CALLS_H

#include "broker.h"

/* One row of mq_coord.assignments, valid during the callback only. */
typedef struct Assignment
{
	const char *topic;
	int			partition;
	int			partitions;
	const char *config;
	int			lock_id;
	const char *replicas;		/* int4[] text */
	int			leader;			/* -1: none */
	int			leader_epoch;
	const char *isr;			/* int4[] text */
	const char *leader_conninfo;	/* NULL: none */
	const char *leader_name;
	bool		elect_preferred;	/* ElectLeaders asked for the preferred one */
	const char *incarnation;	/* the topic's (66_topic_delete.sql) */
} Assignment;

/* One partition of a decided output part (mq_coord.txn_outputs_pending). */
typedef struct PendingOutput
{
	const char *txn_id;
	const char *gid;
	const char *topic;
	int			partition;
	int			epoch;
	int64_t		records_end;
} PendingOutput;

/*
 * One output partition this broker now leads whose decided records must be
 * sent again (mq_coord.txn_outputs_moved): epoch is the partition's current
 * leader epoch, keys and vals bytea[] text as the coordinator gave them.
 */
typedef struct MovedOutput
{
	const char *txn_id;
	const char *gid;
	const char *topic;
	int			partition;
	int			epoch;
	int64_t		producer_id;
	int			producer_epoch;
	int			base_sequence;
	const char *keys;
	const char *vals;
	const char *headers;		/* jsonb[] text, or NULL */
	const char *timestamps;		/* timestamptz[] text (CreateTimes), or NULL */
} MovedOutput;

/* A step's offset this broker, the input's leader now, commits again. */
typedef struct MovedOffset
{
	const char *txn_id;
	const char *group;
	const char *topic;
	int			partition;
	int64_t		next_offset;
	int			epoch;
} MovedOffset;

/* calls_node.c: the broker's own node */
extern bool node_setup_session(Broker *b, MqError *err);
extern bool node_resign_all(Broker *b, int *count, MqError *err);
extern bool node_attach(Broker *b, MqError *err);
extern bool node_renew_lease(Broker *b, MqError *err);
extern bool node_become_leader(Broker *b, const Part *p, int epoch, int64_t *log_end,
							   MqError *err);
extern bool node_become_follower(Broker *b, const Part *p, int epoch, int leader,
								 const char *leader_name, MqError *err);
extern bool node_set_isr(Broker *b, const Part *p, const int *isr, int n, MqError *err);
extern int	node_leader_state(Broker *b, const Part *p, ReplicaProgress *out, int max,
							  MqError *err);
extern bool node_leader_states(Broker *b, Part *const *parts, int n, bool *quiet, MqError *err);
extern bool node_truncate(Broker *b, const Part *p, int64_t offset, int64_t *removed,
						  MqError *err);
extern bool node_log_state(Broker *b, const Part *p, int *latest_epoch, int64_t *log_end,
						   int64_t *hwm, MqError *err);
extern bool node_epoch_end(Broker *b, const Part *p, int epoch, int64_t *end, MqError *err);
extern bool node_append(Broker *b, const Part *p, const char *batch, int len,
						int64_t *log_end, MqError *err);
extern bool node_producer_ids_left(Broker *b, int64_t *left, MqError *err);
extern bool node_add_producer_ids(Broker *b, int64_t first, int64_t last, int64_t *left,
								  MqError *err);
extern int	node_txn_in_doubt(Broker *b, char **gid, int64_t *age_ms, int max, MqError *err);
extern bool node_txn_finish(Broker *b, const char *gid, bool commit, bool *finished,
							MqError *err);
extern bool node_txn_output_replicated(Broker *b, const PendingOutput *o, bool *replicated,
									   MqError *err);
extern bool node_txn_redo_output(Broker *b, const MovedOutput *o, int64_t *records_end,
								 MqError *err);
extern bool node_txn_redo_offset(Broker *b, const MovedOffset *o, bool *replicated, MqError *err);

/* calls_node.c: the leader's node, over a follower's connection (truncation's, or a fetch session's) */
extern bool leader_setup_conn(Broker *b, PGconn *conn, MqError *err);
extern bool leader_epoch_end_offset(Broker *b, Part *p, PGconn *conn, int latest, int *epoch,
									int64_t *end, MqError *err);

/* calls_coord.c */
extern bool coord_setup_session(Broker *b, MqError *err);
extern bool coord_try_lock_broker(Broker *b, bool *got, MqError *err);
extern bool coord_unlock_broker(Broker *b, MqError *err);
extern bool coord_register(Broker *b, const char *node_name, MqError *err);
extern bool coord_heartbeat(Broker *b, MqError *err);
extern bool coord_live_brokers(Broker *b, MqError *err);
extern bool coord_assignments(Broker *b, void (*each) (Broker *b, const Assignment *a),
							  MqError *err);
extern bool coord_try_lock_partition(Broker *b, const Part *p, bool *got, MqError *err);
extern bool coord_unlock_partition(Broker *b, const Part *p, MqError *err);
extern bool coord_fence(Broker *b, int broker_id, bool *fenced, MqError *err);
extern bool coord_elect(Broker *b, const Part *p, int *epoch, MqError *err);
extern bool coord_read_isr(Broker *b, Part *p, MqError *err);
extern bool coord_alter_isr(Broker *b, const Part *p, const int *isr, int n,
							bool *accepted, MqError *err);
extern bool coord_txn_resolve(Broker *b, const char *gid, int64_t age_ms, char *action,
							  size_t size, MqError *err);
extern bool coord_txn_any_open(Broker *b, bool *open, MqError *err);
extern bool coord_txn_outputs_pending(Broker *b,
									  void (*each) (Broker *b, const PendingOutput *o, void *arg),
									  void *arg, MqError *err);
extern bool coord_txn_output_durable(Broker *b, const char *txn_id, const char *gid,
									 char *state, size_t size, MqError *err);
extern bool coord_txn_outputs_moved(Broker *b,
									void (*each) (Broker *b, const MovedOutput *o, void *arg),
									void *arg, MqError *err);
extern bool coord_txn_output_redone(Broker *b, const MovedOutput *o, char *state, size_t size,
									MqError *err);
extern bool coord_txn_part_committed(Broker *b, const char *gid, MqError *err);
extern bool coord_txn_offsets_pending(Broker *b,
									  void (*each) (Broker *b, const char *gid, void *arg),
									  void *arg, MqError *err);
extern bool coord_txn_offsets_moved(Broker *b,
									void (*each) (Broker *b, const MovedOffset *o, void *arg),
									void *arg, MqError *err);
extern bool coord_txn_offsets_redone(Broker *b, const MovedOffset *o, char *state, size_t size,
									 MqError *err);
extern bool coord_allocate_producer_ids(Broker *b, int count, int64_t *first, int64_t *last,
										MqError *err);

#endif							/* MQ_BROKER_CALLS_H */
