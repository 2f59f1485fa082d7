/*-------------------------------------------------------------------------
 *
 * calls_coord.c
 *	  Typed calls of the coordinator's functions (mq_coord.*) and of the
 *	  advisory locks that carry liveness and leadership (see calls.h and
 *	  src/sql/61_coordinator.sql).
 *
 * All go through session.c's coord_exec, which serves the followers' fetches
 * while it waits for the answer and gives up every role that depends on
 * the coordinator when its connection is lost.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "util.h"

/* Run; report the first value of the first row as a boolean when asked. */
static bool
coord_call(Broker *b, const char *sql, const MqParams *prm, bool *first, MqError *err)
{
	PGresult   *res = coord_exec(b, sql, prm, err);

	if (res == NULL)
		return false;
	if (first)
		*first = PQntuples(res) > 0 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return true;
}

static void
one_int(MqParams *prm, int v)
{
	mq_params_init(prm);
	mq_param_int(prm, MQ_INT4OID, v);
}

bool
coord_setup_session(Broker *b, MqError *err)
{
	MqParams	prm;
	const MqConnPolicy *pol = &b->policy;

	/* the server side of our keepalives: it frees our locks if we vanish */
	mq_params_init(&prm);
	mq_param_int(&prm, MQ_INT4OID, pol->keepalives_idle_s);
	mq_param_int(&prm, MQ_INT4OID, pol->keepalives_interval_s);
	mq_param_int(&prm, MQ_INT4OID, pol->keepalives_count);
	return coord_call(b, "SELECT pg_catalog.set_config('tcp_keepalives_idle', $1::text, false), "
					  "pg_catalog.set_config('tcp_keepalives_interval', $2::text, false), "
					  "pg_catalog.set_config('tcp_keepalives_count', $3::text, false), "
					  "pg_catalog.set_config('statement_timeout', '10s', false)", &prm, NULL, err);
}

bool
coord_try_lock_broker(Broker *b, bool *got, MqError *err)
{
	MqParams	prm;

	one_int(&prm, b->cfg->broker_id);
	return coord_call(b, "SELECT pg_catalog.pg_try_advisory_lock(mq_coord.broker_lock_class(), $1)",
					  &prm, got, err);
}

bool
coord_unlock_broker(Broker *b, MqError *err)
{
	MqParams	prm;

	one_int(&prm, b->cfg->broker_id);
	return coord_call(b, "SELECT pg_catalog.pg_advisory_unlock(mq_coord.broker_lock_class(), $1)",
					  &prm, NULL, err);
}

bool
coord_register(Broker *b, const char *node_name, MqError *err)
{
	MqParams	prm;

	one_int(&prm, b->cfg->broker_id);
	mq_param_text(&prm, MQ_TEXTOID, b->cfg->node_advertised);
	mq_param_text(&prm, MQ_TEXTOID, node_name);
	return coord_call(b, "SELECT mq_coord.register_broker($1, $2, $3)", &prm, NULL, err);
}

bool
coord_heartbeat(Broker *b, MqError *err)
{
	MqParams	prm;

	one_int(&prm, b->cfg->broker_id);
	return coord_call(b, "SELECT mq_coord.heartbeat($1)", &prm, NULL, err);
}

bool
coord_live_brokers(Broker *b, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->session_timeout_ms);
	res = coord_exec(b, "SELECT b.broker_id FROM mq_coord.broker b "
					 "WHERE mq_coord.broker_alive(b.broker_id, $1)", &prm, err);
	if (res == NULL)
		return false;
	b->nlive = 0;
	for (int i = 0; i < PQntuples(res) && b->nlive < MAX_LIVE_BROKERS; i++)
		b->live_brokers[b->nlive++] = atoi(PQgetvalue(res, i, 0));
	PQclear(res);
	return true;
}

static const char *
value_or_null(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

bool
coord_assignments(Broker *b, void (*each) (Broker *b, const Assignment *a), MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	res = coord_exec(b, "SELECT topic, partition, partitions, config, lock_id, replicas, "
					 "coalesce(leader, -1), leader_epoch, isr, leader_conninfo, leader_name, elect_preferred, "
					 "incarnation "
					 "FROM mq_coord.assignments($1)", &prm, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < PQntuples(res); i++)
	{
		Assignment	a;

		a.topic = PQgetvalue(res, i, 0);
		a.partition = atoi(PQgetvalue(res, i, 1));
		a.partitions = atoi(PQgetvalue(res, i, 2));
		a.config = PQgetvalue(res, i, 3);
		a.lock_id = atoi(PQgetvalue(res, i, 4));
		a.replicas = PQgetvalue(res, i, 5);
		a.leader = atoi(PQgetvalue(res, i, 6));
		a.leader_epoch = atoi(PQgetvalue(res, i, 7));
		a.isr = PQgetvalue(res, i, 8);
		a.leader_conninfo = value_or_null(res, i, 9);
		a.leader_name = value_or_null(res, i, 10);
		a.elect_preferred = strcmp(PQgetvalue(res, i, 11), "t") == 0;
		a.incarnation = PQgetvalue(res, i, 12);
		each(b, &a);
	}
	PQclear(res);
	return true;
}

bool
coord_try_lock_partition(Broker *b, const Part *p, bool *got, MqError *err)
{
	MqParams	prm;

	one_int(&prm, p->lock_id);
	return coord_call(b, "SELECT pg_catalog.pg_try_advisory_lock(mq_coord.partition_lock_class(), $1)",
					  &prm, got, err);
}

bool
coord_unlock_partition(Broker *b, const Part *p, MqError *err)
{
	MqParams	prm;

	one_int(&prm, p->lock_id);
	return coord_call(b, "SELECT pg_catalog.pg_advisory_unlock(mq_coord.partition_lock_class(), $1)",
					  &prm, NULL, err);
}

bool
coord_fence(Broker *b, int broker_id, bool *fenced, MqError *err)
{
	MqParams	prm;

	one_int(&prm, broker_id);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	return coord_call(b, "SELECT mq_coord.fence_broker($1, $2, $3)", &prm, fenced, err);
}

/* *epoch = the new leader epoch, or -1 when we are not eligible. */
bool
coord_elect(Broker *b, const Part *p, int *epoch, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->session_timeout_ms);
	res = coord_exec(b, "SELECT mq_coord.elect($1, $2, $3, $4)", &prm, err);
	if (res == NULL)
		return false;
	*epoch = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? atoi(PQgetvalue(res, 0, 0)) : -1;
	PQclear(res);
	return true;
}

/* The ISR as the coordinator holds it now (elect may have reset it). */
bool
coord_read_isr(Broker *b, Part *p, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	res = coord_exec(b, "SELECT isr FROM mq_coord.partition WHERE topic = $1 AND partition = $2",
					 &prm, err);
	if (res == NULL)
		return false;
	if (PQntuples(res) == 1)
		p->nisr = parse_int_array(PQgetvalue(res, 0, 0), p->isr, MAX_REPLICAS);
	PQclear(res);
	return true;
}

bool
coord_alter_isr(Broker *b, const Part *p, const int *isr, int n, bool *accepted, MqError *err)
{
	MqParams	prm;
	PGresult   *res;
	char		buf[128];

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, p->topic);
	mq_param_int(&prm, MQ_INT4OID, p->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, p->applied_epoch);
	mq_param_text(&prm, MQ_INT4ARRAYOID, int_array_text(isr, n, buf, sizeof(buf)));
	res = coord_exec(b, "SELECT mq_coord.alter_isr($1, $2, $3, $4, $5)", &prm, err);
	if (res == NULL)
		return false;
	*accepted = !PQgetisnull(res, 0, 0);
	PQclear(res);
	return true;
}

/* A new block of count cluster-wide producer ids for this broker. */
bool
coord_allocate_producer_ids(Broker *b, int count, int64_t *first, int64_t *last, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, count);
	res = coord_exec(b, "SELECT first_id, last_id FROM mq_coord.allocate_producer_ids($1, $2)",
					 &prm, err);
	if (res == NULL)
		return false;
	*first = atoll(PQgetvalue(res, 0, 0));
	*last = atoll(PQgetvalue(res, 0, 1));
	PQclear(res);
	return true;
}

/* What recovery does with a gid prepared age_ms ago: commit, rollback or wait. */
bool
coord_txn_resolve(Broker *b, const char *gid, int64_t age_ms, char *action, size_t size,
				  MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT8OID, age_ms);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->txn_timeout_ms);
	res = coord_exec(b, "SELECT mq_coord.txn_resolve($1, $2, $3, $4)", &prm, err);
	if (res == NULL)
		return false;
	snprintf(action, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/* Each partition of this broker's decided outputs not known durable, by gid. */
bool
coord_txn_outputs_pending(Broker *b, void (*each) (Broker *b, const PendingOutput *o, void *arg),
						  void *arg, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	res = coord_exec(b, "SELECT txn_id, gid, topic, partition, epoch, records_end "
					 "FROM mq_coord.txn_outputs_pending($1)", &prm, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < PQntuples(res); i++)
	{
		PendingOutput o;

		o.txn_id = PQgetvalue(res, i, 0);
		o.gid = PQgetvalue(res, i, 1);
		o.topic = PQgetvalue(res, i, 2);
		o.partition = atoi(PQgetvalue(res, i, 3));
		o.epoch = atoi(PQgetvalue(res, i, 4));
		o.records_end = atoll(PQgetvalue(res, i, 5));
		each(b, &o, arg);
	}
	PQclear(res);
	return true;
}

/* An output part is on its ISR (checked by this broker); *state: the step's. */
bool
coord_txn_output_durable(Broker *b, const char *txn_id, const char *gid, char *state,
						 size_t size, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, txn_id);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	res = coord_exec(b, "SELECT mq_coord.txn_output_durable($1, $2, $3)", &prm, err);
	if (res == NULL)
		return false;
	snprintf(state, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/* Is any step decided and not complete? */
bool
coord_txn_any_open(Broker *b, bool *open, MqError *err)
{
	return coord_call(b, "SELECT mq_coord.txn_any_open()", NULL, open, err);
}

/* Each output partition this broker leads whose decided records must be sent again. */
bool
coord_txn_outputs_moved(Broker *b, void (*each) (Broker *b, const MovedOutput *o, void *arg),
						void *arg, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	res = coord_exec(b, "SELECT txn_id, gid, topic, partition, epoch, producer_id, producer_epoch, "
					 "base_sequence, keys, vals, headers, timestamps "
					 "FROM mq_coord.txn_outputs_moved($1)", &prm, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < PQntuples(res) && b->coord != NULL; i++)
	{
		MovedOutput o;

		o.txn_id = PQgetvalue(res, i, 0);
		o.gid = PQgetvalue(res, i, 1);
		o.topic = PQgetvalue(res, i, 2);
		o.partition = atoi(PQgetvalue(res, i, 3));
		o.epoch = atoi(PQgetvalue(res, i, 4));
		o.producer_id = atoll(PQgetvalue(res, i, 5));
		o.producer_epoch = atoi(PQgetvalue(res, i, 6));
		o.base_sequence = atoi(PQgetvalue(res, i, 7));
		o.keys = PQgetvalue(res, i, 8);
		o.vals = PQgetvalue(res, i, 9);
		o.headers = PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10);
		o.timestamps = PQgetisnull(res, i, 11) ? NULL : PQgetvalue(res, i, 11);
		each(b, &o, arg);
	}
	PQclear(res);
	return true;
}

/* A partition sent again is on this broker's ISR in o->epoch; *state: the step's. */
bool
coord_txn_output_redone(Broker *b, const MovedOutput *o, char *state, size_t size, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, o->txn_id);
	mq_param_text(&prm, MQ_TEXTOID, o->topic);
	mq_param_int(&prm, MQ_INT4OID, o->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, o->epoch);
	res = coord_exec(b, "SELECT mq_coord.txn_output_redone($1, $2, $3, $4, $5)", &prm, err);
	if (res == NULL)
		return false;
	snprintf(state, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/* This broker committed prepared part gid: an offsets part ends its step. */
bool
coord_txn_part_committed(Broker *b, const char *gid, MqError *err)
{
	MqParams	prm;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, gid);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	return coord_call(b, "SELECT mq_coord.txn_part_committed($1, $2)", &prm, NULL, err);
}

/* The gid of each offsets part of this broker's node whose step's outputs are durable. */
bool
coord_txn_offsets_pending(Broker *b, void (*each) (Broker *b, const char *gid, void *arg),
						  void *arg, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	res = coord_exec(b, "SELECT gid FROM mq_coord.txn_offsets_pending($1)", &prm, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < PQntuples(res) && b->coord != NULL; i++)
		each(b, PQgetvalue(res, i, 0), arg);
	PQclear(res);
	return true;
}

/* Each step's offset this broker, the input's leader now, must commit again. */
bool
coord_txn_offsets_moved(Broker *b, void (*each) (Broker *b, const MovedOffset *o, void *arg),
						void *arg, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	one_int(&prm, b->cfg->broker_id);
	res = coord_exec(b, "SELECT txn_id, group_id, topic, partition, next_offset, epoch "
					 "FROM mq_coord.txn_offsets_moved($1)", &prm, err);
	if (res == NULL)
		return false;
	for (int i = 0; i < PQntuples(res) && b->coord != NULL; i++)
	{
		MovedOffset o;

		o.txn_id = PQgetvalue(res, i, 0);
		o.group = PQgetvalue(res, i, 1);
		o.topic = PQgetvalue(res, i, 2);
		o.partition = atoi(PQgetvalue(res, i, 3));
		o.next_offset = atoll(PQgetvalue(res, i, 4));
		o.epoch = atoi(PQgetvalue(res, i, 5));
		each(b, &o, arg);
	}
	PQclear(res);
	return true;
}

/* A step's offset is on this broker's ISR in o->epoch (the step is done once all are); *state: the step's. */
bool
coord_txn_offsets_redone(Broker *b, const MovedOffset *o, char *state, size_t size, MqError *err)
{
	MqParams	prm;
	PGresult   *res;

	mq_params_init(&prm);
	mq_param_text(&prm, MQ_TEXTOID, o->txn_id);
	mq_param_text(&prm, MQ_TEXTOID, o->group);
	mq_param_text(&prm, MQ_TEXTOID, o->topic);
	mq_param_int(&prm, MQ_INT4OID, o->partition);
	mq_param_int(&prm, MQ_INT4OID, b->cfg->broker_id);
	mq_param_int(&prm, MQ_INT4OID, o->epoch);
	res = coord_exec(b, "SELECT mq_coord.txn_offsets_redone($1, $2, $3, $4, $5, $6)", &prm, err);
	if (res == NULL)
		return false;
	snprintf(state, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}
