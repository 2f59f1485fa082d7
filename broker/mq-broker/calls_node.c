/*-------------------------------------------------------------------------
 *
 * calls_node.c
 *	  Typed calls of the extension's replica functions on the broker's own
 *	  node (through session.c's node_exec, so that a lost node is noticed
 *	  at once) and on a leader's node over a follower's connection (see
 *	  calls.h).
 *
 * The replica functions are SECURITY DEFINER and check the leader epoch
 * themselves; the broker's role needs EXECUTE on them only
 * (src/sql/62_broker_role.sql).
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "pgbinary.h"
#include "util.h"

/* topic, partition: the first two parameters of every replica function */
static void
part_params(MqParams *prm, const Part *p)
{
	mq_params_init(prm);
	mq_param_text(prm, MQ_TEXTOID, p->topic);
	mq_param_int(prm, MQ_INT4OID, p->partition);
}

/* Run on the node; keep the first value of the first row when asked. */
static bool
node_call(Broker *b, const char *sql, const MqParams *prm, int64_t *first, MqError *err)
{
	PGresult   *res = node_exec(b, sql, prm, 0, err);

	if (res == NULL)
		return false;
	if (first)
		*first = PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)
			? atoll(PQgetvalue(res, 0, 0)) : -1;
	PQclear(res);
	return true;
}

bool
node_setup_session(Broker *b, MqError *err)
{
	/*
	 * Our appends must be durable before our next fetch offset acknowledges
	 * them to the leader: with the server's synchronous_commit = off, a
	 * crash of this node would take back records the leader already counted
	 * as replicated here (test/t/105 loses acknowledged records without
	 * this).  'local' is enough; a stricter setting is kept.
	 */
	return node_call(b, "SELECT CASE WHEN pg_catalog.current_setting('synchronous_commit') = 'off' "
					 "THEN pg_catalog.set_config('synchronous_commit', 'local', false) END",
					 NULL, NULL, err);
}

bool
node_resign_all(Broker *b, int *count, MqError *err)
{
	int64_t		n;

	if (!node_call(b, "SELECT mq.replica_resign_all()", NULL, &n, err))
		return false;
	*count = (int) n;
	return true;
}

bool
node_attach(Broker *b, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	return node_call(b, "SELECT mq.replica_attach_broker($1)", &prm, NULL, err);
}

/* Every tick: the node leads on our word for session.timeout.ms more. */
bool
node_renew_lease(Broker *b, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
	return node_call(b, "SELECT mq.replica_renew_lease($1)", &prm, NULL, err);
}

bool
node_become_leader(Broker *b, const Part *p, int epoch, int64_t *log_end, MqError *err)
{
	MqParams	prm;
	char		rbuf[128],
				ibuf[128];

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, epoch);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(p->replicas, p->nreplicas, rbuf, sizeof(rbuf)));
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(p->isr, p->nisr, ibuf, sizeof(ibuf)));
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->node_name ? b->cfg->node_name : "");
	return node_call(b, "SELECT mq.replica_become_leader($1, $2, $3, $4, $5, $6, $7)",
					 &prm, log_end, err);
}

bool
node_become_follower(Broker *b, const Part *p, int epoch, int leader,
					 const char *leader_name, MqError *err)
{
	MqParams	prm;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, epoch);
	if (leader >= 0)
		mq_param_int(&prm, MQ_INT4OID, leader);
	else
		mq_param_text(&prm, MQ_INT4OID, NULL);	/* resign: no leader known */
	mq_param_text(&prm, MQ_TEXTOID, leader >= 0 ? leader_name : NULL);
	return node_call(b, "SELECT mq.replica_become_follower($1, $2, $3, $4, $5)", &prm, NULL, err);
}

bool
node_set_isr(Broker *b, const Part *p, const int *isr, int n, MqError *err)
{
	MqParams	prm;
	char		buf[128];

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(isr, n, buf, sizeof(buf)));
	return node_call(b, "SELECT mq.replica_set_isr($1, $2, $3, $4)", &prm, NULL, err);
}

/* The columns of mq.replica_leader_state from col on, as the queries below select them */
static void
progress_row(const PGresult *res, int row, int col, ReplicaProgress *out)
{
	out->id = atoi(PQgetvalue(res, row, col));
	out->in_isr = strcmp(PQgetvalue(res, row, col + 1), "t") == 0;
	out->log_end = atoll(PQgetvalue(res, row, col + 2));
	out->lag_ms = atoll(PQgetvalue(res, row, col + 3));
	out->leader_log_end = atoll(PQgetvalue(res, row, col + 4));
	out->high_watermark = atoll(PQgetvalue(res, row, col + 5));
	out->epoch_start = atoll(PQgetvalue(res, row, col + 6));
	out->caught_up = strcmp(PQgetvalue(res, row, col + 7), "t") == 0;
}

#define PROGRESS_COLUMNS "replica_id, in_isr, coalesce(log_end_offset, -1), lag_ms, " \
	"leader_log_end_offset, high_watermark, coalesce(epoch_start_offset, 0), caught_up"

int
node_leader_state(Broker *b, const Part *p, ReplicaProgress *out, int max, MqError *err)
{
	MqParams	prm;
	PGresult   *res;
	int			n;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	res = node_exec(b, "SELECT " PROGRESS_COLUMNS " FROM mq.replica_leader_state($1, $2, $3)",
					&prm, 0, err);
	if (res == NULL)
		return -1;
	n = PQntuples(res) < max ? PQntuples(res) : max;
	for (int i = 0; i < n; i++)
		progress_row(res, i, 0, &out[i]);
	PQclear(res);
	return n;
}

/*
 * mq.replica_leader_states for the n partitions in parts, in their applied
 * epochs: quiet[k] says whether parts[k] was answered, its followers then
 * in its states and nstates (at most MAX_REPLICAS - 1).
 */
bool
node_leader_states(Broker *b, Part *const *parts, int n, bool *quiet, MqError *err)
{
	MqArray		a[3];
	MqParams	prm;
	PGresult   *res;

	mq_array_init(&a[0], MQ_TEXTOID);
	mq_array_init(&a[1], MQ_INT4OID);
	mq_array_init(&a[2], MQ_INT4OID);
	for (int k = 0; k < n; k++)
	{
		mq_array_add(&a[0], parts[k]->topic, strlen(parts[k]->topic));
		mq_array_add_int32(&a[1], parts[k]->partition);
		mq_array_add_int32(&a[2], parts[k]->applied_epoch);
		quiet[k] = false;
		parts[k]->nstates = 0;
	}
	mq_params_init(&prm);
	for (int i = 0; i < 3; i++)
	{
		int			len;
		const char *bytes = mq_array_bytes(&a[i], &len);

		mq_param_binary(&prm, i == 0 ? MQ_TEXTARRAYOID : MQ_INT4ARRAYOID, bytes, len);
	}
	res = node_exec(b, "SELECT i, quiet, " PROGRESS_COLUMNS
					" FROM mq.replica_leader_states($1, $2, $3)", &prm, 0, err);
	for (int i = 0; i < 3; i++)
		mq_array_free(&a[i]);
	if (res == NULL)
		return false;
	for (int row = 0; row < PQntuples(res); row++)
	{
		int			k = atoi(PQgetvalue(res, row, 0)) - 1;
		Part	   *p;

		if (k < 0 || k >= n || strcmp(PQgetvalue(res, row, 1), "t") != 0)
			continue;
		p = parts[k];
		quiet[k] = true;
		/* a quiet partition without followers: one row, replica_id NULL */
		if (!PQgetisnull(res, row, 2) && p->nstates < MAX_REPLICAS - 1)
			progress_row(res, row, 2, &p->states[p->nstates++]);
	}
	PQclear(res);
	return true;
}

bool
node_truncate(Broker *b, const Part *p, int64_t offset, int64_t *removed, MqError *err)
{
	MqParams	prm;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_int(&prm, MQ_INT8OID, offset);
	return node_call(b, "SELECT mq.replica_truncate($1, $2, $3, $4)", &prm, removed, err);
}

bool
node_log_state(Broker *b, const Part *p, int *latest_epoch, int64_t *log_end,
			   int64_t *hwm, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	part_params(&prm, p);
	res = node_exec(b, "SELECT latest_epoch, log_end_offset, coalesce(high_watermark, 0) "
					"FROM mq.replica_log_state($1, $2)", &prm, 0, err);
	if (res == NULL)
		return false;
	*latest_epoch = atoi(PQgetvalue(res, 0, 0));
	*log_end = atoll(PQgetvalue(res, 0, 1));
	*hwm = atoll(PQgetvalue(res, 0, 2));
	PQclear(res);
	return true;
}

bool
node_epoch_end(Broker *b, const Part *p, int epoch, int64_t *end, MqError *err)
{
	MqParams	prm;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, epoch);
	return node_call(b, "SELECT coalesce(requested_end_offset, 0) FROM mq.replica_log_state($1, $2, $3)",
					 &prm, end, err);
}

bool
node_append(Broker *b, const Part *p, const char *batch, int len, int64_t *log_end,
			MqError *err)
{
	MqParams	prm;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_binary(&prm, 0, batch, len);
	return node_call(b, "SELECT mq.replica_append($1, $2, $3, $4)", &prm, log_end, err);
}

/* ---------------------------------------------------------------------
 * The leader's node, over the follower's own connection
 * --------------------------------------------------------------------- */

bool
leader_setup_conn(Broker *b, PGconn *conn, MqError *err)
{
	/*
	 * What our fetches write on the leader (our progress, its high
	 * watermark) is soft state that dies with its leadership: no WAL flush
	 * per fetch for it.  The records themselves are flushed on our node
	 * before a fetch offset acknowledges them (node_setup_session).
	 */
	PGresult   *res = mq_exec_timeout(conn, "SET synchronous_commit = off", NULL, 0,
									  b->cfg->node_timeout_ms, err);

	PQclear(res);
	return res != NULL;
}

bool
leader_epoch_end_offset(Broker *b, Part *p, PGconn *conn, int latest, int *epoch, int64_t *end,
						MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	part_params(&prm, p);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_int(&prm, MQ_INT4OID, latest);
	res = mq_exec_timeout(conn, "SELECT leader_epoch, end_offset "
						  "FROM mq.replica_epoch_end_offset($1, $2, $3, $4)",
						  &prm, 0, b->cfg->node_timeout_ms, err);
	if (res == NULL)
		return false;
	*epoch = atoi(PQgetvalue(res, 0, 0));
	*end = atoll(PQgetvalue(res, 0, 1));
	PQclear(res);
	return true;
}

/* How many producer ids the node can still issue from its blocks. */
bool
node_producer_ids_left(Broker *b, int64_t *left, MqError *err)
{
	return node_call(b, "SELECT mq.replica_producer_ids_left()", NULL, left, err);
}

/* Add a block from the coordinator; *left: the node's ids left after it. */
bool
node_add_producer_ids(Broker *b, int64_t first, int64_t last, int64_t *left, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT8OID, first);
	mq_param_int(&prm, MQ_INT8OID, last);
	return node_call(b, "SELECT mq.replica_add_producer_ids($1, $2)", &prm, left, err);
}

/*
 * The node's mq: prepared transactions, oldest first (at most max): gid[i]
 * is allocated (the caller frees it), age_ms[i] how long it has been
 * prepared.  Returns how many, or -1 after a failure.
 */
int
node_txn_in_doubt(Broker *b, char **gid, int64_t *age_ms, int max, MqError *err)
{
	PGresult   *res = node_exec(b, "SELECT gid, age_ms FROM mq.txn_in_doubt()", NULL, 0, err);
	int			n = 0;

	if (res == NULL)
		return -1;
	for (; n < PQntuples(res) && n < max; n++)
	{
		gid[n] = mq_strdup(PQgetvalue(res, n, 0));
		age_ms[n] = atoll(PQgetvalue(res, n, 1));
	}
	PQclear(res);
	return n;
}

/* COMMIT or ROLLBACK PREPARED; *finished: false when it was not prepared. */
bool
node_txn_finish(Broker *b, const char *gid, bool commit, bool *finished, MqError *err)
{
	MqParams	prm;
	int64_t		v;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_text(&prm, MQ_BOOLOID, commit ? "true" : "false");
	if (!node_call(b, "SELECT mq.txn_finish($1, $2)::integer", &prm, &v, err))
		return false;
	*finished = v == 1;
	return true;
}

/* Does the node lead the partition in epoch with its high watermark >= end? */
bool
node_txn_output_replicated(Broker *b, const PendingOutput *o, bool *replicated, MqError *err)
{
	MqParams	prm;
	int64_t		v;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, o->topic);
	mq_param_int(&prm, MQ_INT4OID, o->partition);
	mq_param_int(&prm, MQ_INT4OID, o->epoch);
	mq_param_int(&prm, MQ_INT8OID, o->records_end);
	if (!node_call(b, "SELECT mq.txn_output_replicated($1, $2, $3, $4)::integer", &prm, &v, err))
		return false;
	*replicated = v == 1;
	return true;
}

/* Send decided records again on this node (its leader); *records_end: their end. */
bool
node_txn_redo_output(Broker *b, const MovedOutput *o, int64_t *records_end, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, o->topic);
	mq_param_int(&prm, MQ_INT4OID, o->partition);
	mq_param_int(&prm, MQ_INT4OID, o->epoch);
	mq_param_int(&prm, MQ_INT8OID, o->producer_id);
	mq_param_int(&prm, MQ_INT4OID, o->producer_epoch);
	mq_param_int(&prm, MQ_INT4OID, o->base_sequence);
	mq_param_text(&prm, MQ_BYTEAARRAYOID, o->keys);
	mq_param_text(&prm, MQ_BYTEAARRAYOID, o->vals);
	mq_param_text(&prm, MQ_JSONBARRAYOID, o->headers);
	mq_param_text(&prm, MQ_TIMESTAMPTZARRAYOID, o->timestamps);
	return node_call(b, "SELECT mq.txn_redo_output($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", &prm,
					 records_end, err);
}

/* Commit a step's offset again on this node (its leader), forward only; *replicated: on the ISR. */
bool
node_txn_redo_offset(Broker *b, const MovedOffset *o, bool *replicated, MqError *err)
{
	MqParams	prm;
	int64_t		v;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, o->group);
	mq_param_text(&prm, MQ_TEXTOID, o->topic);
	mq_param_int(&prm, MQ_INT4OID, o->partition);
	mq_param_int(&prm, MQ_INT4OID, o->epoch);
	mq_param_int(&prm, MQ_INT8OID, o->next_offset);
	if (!node_call(b, "SELECT mq.txn_redo_offset($1, $2, $3, $4, $5)::integer", &prm, &v, err))
		return false;
	*replicated = v == 1;
	return true;
}
