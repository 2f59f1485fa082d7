/*-------------------------------------------------------------------------
 *
 * consumer_route.c
 *	  The consuming engine on a replicated cluster given the coordinator's
 *	  address alone (docs/cli.md, "A replicated cluster"): a member of a
 *	  cluster consumer group (mq_coord.join_cluster_group, heartbeats,
 *	  generations; src/sql/65_cluster_groups.sql) that reads the partitions
 *	  it is assigned from their leaders and commits its offsets there.
 *
 * Membership and assignment live on the coordinator; records and
 * committed offsets on each partition's leader, replicated with it.  One
 * batch comes from one leader, in one transaction on that leader: mq.poll
 * over the member's partitions that node leads (its partitions argument),
 * which claims them until the transaction ends, then mq.commit_offset past
 * what was printed, COMMIT, and mq.await_commit, which returns once the
 * leader's in-sync replicas hold the commit: only then is the commit
 * acknowledged, so a failover after it cannot lose it.  A commit that
 * fails or is not acknowledged is reported on standard error with the
 * offsets it covered ("may be read again"): those records come again
 * (at-least-once), all others exactly once.  The claims make overlapping
 * assignments during a rebalance harmless: whoever polls a partition reads
 * from its committed position.
 *
 * Leader changes (MQ020, MQ006, a lost connection) are followed with the
 * router's jittered back-off (broker/common/route.c).  Heartbeats go every
 * CONSUMER_HEARTBEAT_MS from the poll loop (a poll waits no longer); an
 * expired member (MQ031) joins again with its member id.  One node's
 * group has the same shape in consumer_member.c.  A coordinator
 * that is away delays heartbeats only: reading goes on with the
 * assignment in hand until it is back.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"
#include "pgbinary.h"

#define AWAIT_COMMIT_MS		10000

/* Take the generation and assignment of a join or heartbeat result. */
static void
take_assignment(MqConsumer *c, PGresult *res)
{
	int32_t		gen = atoi(PQgetvalue(res, 0, 1));

	if (c->member_id == NULL)
		c->member_id = mq_strdup(PQgetvalue(res, 0, 0));
	if (gen != c->generation)
		mq_log_info("cluster group \"%s\": generation %d", c->group, gen);
	c->generation = gen;
	if (c->nassigned > 0)
		memset(c->assigned, 0, sizeof(bool) * c->nassigned);
	for (int i = 0; i < PQntuples(res); i++)
	{
		int32_t		p;

		if (PQgetisnull(res, i, 3) || strcmp(PQgetvalue(res, i, 2), c->topic) != 0)
			continue;
		p = atoi(PQgetvalue(res, i, 3));
		if (p >= c->nassigned)
		{
			c->assigned = mq_realloc(c->assigned, sizeof(bool) * (p + 1));
			memset(c->assigned + c->nassigned, 0, sizeof(bool) * (p + 1 - c->nassigned));
			c->nassigned = p + 1;
		}
		c->assigned[p] = true;
	}
	PQclear(res);
	/* partitions were added: learn their leaders */
	if (c->nassigned > c->router->npartitions)
	{
		MqError		err = MQ_ERROR_INIT;

		if (!mq_router_refresh(c->router, &err))
			mq_log_warning("cannot read the routes of \"%s\": %s", c->topic, err.message);
		mq_error_free(&err);
	}
}

/* Join (again, with our member id once we have one). */
static bool
join(MqConsumer *c, MqError *err)
{
	MqParams	params;
	PGconn	   *coord = mq_router_coord(c->router, err);
	PGresult   *res;
	char		topics[600];

	if (coord == NULL)
		return false;
	/* a text[] literal of one element: the name quoted, as array_in reads it */
	snprintf(topics, sizeof(topics), "{\"%s\"}", c->topic);
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->group);
	mq_param_text(&params, MQ_TEXTARRAYOID, topics);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	mq_param_int(&params, MQ_INT4OID, CONSUMER_SESSION_TIMEOUT_MS);
	res = mq_exec(coord, "SELECT member_id, generation, topic, partition"
				  "  FROM mq_coord.join_cluster_group($1, $2, $3, $4)", &params, 0, err);
	if (res == NULL)
		return false;
	take_assignment(c, res);
	consumer_heartbeat_sent(c);
	return true;
}

/* Heartbeat when due; a failure other than expiry waits for the next one. */
static void
heartbeat(MqConsumer *c)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *coord;
	PGresult   *res = NULL;

	if (!consumer_heartbeat_due(c))
		return;
	coord = mq_router_coord(c->router, &err);
	if (coord != NULL)
	{
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, c->group);
		mq_param_text(&params, MQ_TEXTOID, c->member_id);
		res = mq_exec(coord, "SELECT member_id, generation, topic, partition"
					  "  FROM mq_coord.cluster_group_heartbeat($1, $2)", &params, 0, &err);
	}
	if (res != NULL)
		take_assignment(c, res);
	else if (mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
	{
		mq_log_warning("cluster group \"%s\": the session of member %s expired; joining again",
					   c->group, c->member_id);
		mq_error_free(&err);
		if (!join(c, &err))
			mq_log_warning("cannot join again: %s", err.message);
	}
	else
		mq_log_warning("cluster group heartbeat failed: %.*s",
					   (int) strcspn(err.message, "\n"), err.message);
	mq_error_free(&err);
}

/*
 * Without a committed offset, start at the log end (Kafka's
 * auto.offset.reset=latest): commit the end offsets of the partitions the
 * group has none for, on each leader, once at the start.  Best effort:
 * where it fails, the poll's own reset (latest) applies.
 */
static void
commit_end_offsets(MqConsumer *c)
{
	MqRouter   *r = c->router;

	for (int32_t p = 0; p < r->npartitions; p++)
	{
		MqParams	params;
		MqError		err = MQ_ERROR_INIT;
		PGconn	   *conn = mq_router_conn(r, p, &err);
		PGresult   *res = NULL;

		if (conn != NULL)
		{
			mq_params_init(&params);
			mq_param_text(&params, MQ_TEXTOID, c->group);
			mq_param_text(&params, MQ_TEXTOID, c->topic);
			mq_param_int(&params, MQ_INT4OID, p);
			res = mq_exec(conn,
						  "SELECT mq.commit_offset($1, $2, p.partition, p.high_watermark)"
						  "  FROM mq.partitions p"
						  " WHERE p.topic = $2 AND p.partition = $3"
						  "   AND mq.committed_offset($1, $2, p.partition) IS NULL",
						  &params, 0, &err);
		}
		if (res == NULL)
			mq_router_failed(r, p, &err);
		PQclear(res);
		mq_error_free(&err);
	}
}

bool
consumer_route_open(MqConsumer *c, ConsumerStart start)
{
	MqError		err = MQ_ERROR_INIT;
	int			found = mq_router_detect(c->conn, c->topic, &err);

	if (found < 0)
		mqctl_fail(c->conn, &err);
	if (found == 0)
		return false;
	if (c->group == NULL)
		mq_fatal(MQ_EXIT_UNAVAILABLE,
				 "\"%s\" is a replicated topic and this is its coordinator: "
				 "read it through the coordinator with --group, or without a group from its leaders' nodes",
				 c->topic);
	c->router = mq_malloc0(sizeof(MqRouter));
	c->start = start;
	/* the router's own coordinator connection: c->conn stays the caller's */
	if (!mq_router_open(c->router, NULL, mqctl_conninfo(), mq_progname, c->topic,
						NULL, NULL, &err) || !join(c, &err))
		mqctl_fail(NULL, &err);
	if (start == START_LATEST)
		commit_end_offsets(c);
	return true;
}

/* The partitions of ours that broker leads, as an int4[] parameter. */
static int
leader_partitions(MqConsumer *c, int32_t broker, MqArray *parts, int32_t *first)
{
	int			n = 0;

	mq_array_init(parts, MQ_INT4OID);
	for (int32_t p = 0; p < c->nassigned && p < c->router->npartitions; p++)
		if (c->assigned[p] && mq_router_leader(c->router, p) == broker)
		{
			if (n++ == 0)
				*first = p;
			mq_array_add_int32(parts, p);
		}
	return n;
}

/* One leader's part of a poll: its batch (in a transaction) or NULL. */
static PGresult *
poll_leader(MqConsumer *c, int32_t broker, int max_records, int wait_ms, bool *failed)
{
	MqParams	params;
	MqArray		parts;
	MqError		err = MQ_ERROR_INIT;
	int32_t		first = -1;
	PGconn	   *conn;
	PGresult   *res = NULL;
	const char *data;
	int			len;

	if (leader_partitions(c, broker, &parts, &first) == 0)
	{
		mq_array_free(&parts);
		return NULL;
	}
	conn = mq_router_conn(c->router, first, &err);
	if (conn != NULL && mq_command(conn, "BEGIN", &err))
	{
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, c->group);
		mq_param_text(&params, MQ_TEXTOID, c->topic);
		mq_param_int(&params, MQ_INT4OID, max_records);
		mq_param_int(&params, MQ_INT4OID, wait_ms);
		mq_param_text(&params, MQ_TEXTOID, c->start == START_LATEST ? "latest" : "earliest");
		data = mq_array_bytes(&parts, &len);
		mq_param_binary(&params, MQ_INT4ARRAYOID, data, len);
		res = mq_exec(conn, "SELECT " CONSUMER_RECORD_COLUMNS
					  "  FROM mq.poll($1, $2, $3, false, $4, 1, NULL, $5, $6) f",
					  &params, 1, &err);
	}
	mq_array_free(&parts);
	if (res != NULL && PQntuples(res) > 0)
	{
		c->txn_conn = conn;
		c->in_txn = true;
		mq_router_succeeded(c->router);
		return res;
	}
	PQclear(res);
	if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
	{
		MqError		ignored = MQ_ERROR_INIT;

		(void) mq_command(conn, "ROLLBACK", &ignored);
		mq_error_free(&ignored);
	}
	if (err.message != NULL)
	{
		if (!mq_router_retriable(&err))
			mqctl_fail(NULL, &err);
		mq_router_failed(c->router, first, &err);
		*failed = true;
	}
	mq_error_free(&err);
	return NULL;
}

PGresult *
consumer_route_poll(MqConsumer *c, int max_records, int wait_ms)
{
	int32_t    *leaders = mq_malloc(sizeof(int32_t) * (c->router->npartitions + 1));
	int			nleaders = 0;
	bool		failed = false;
	PGresult   *res = NULL;

	heartbeat(c);
	for (int32_t p = 0; p < c->nassigned && p < c->router->npartitions; p++)
	{
		int32_t		b = mq_router_leader(c->router, p);
		bool		seen = false;

		if (!c->assigned[p])
			continue;
		if (b < 0)
			failed = true;		/* leaderless as far as we know: refresh below */
		for (int i = 0; i < nleaders && !seen; i++)
			seen = leaders[i] == b;
		if (b >= 0 && !seen)
			leaders[nleaders++] = b;
	}
	c->leader_rotation++;
	for (int k = 0; k < nleaders && res == NULL && !consumer_interrupted(); k++)
		res = poll_leader(c, leaders[(c->leader_rotation + k) % nleaders], max_records,
						  wait_ms / nleaders, &failed);
	free(leaders);
	if (res == NULL && failed)
	{
		MqError		err = MQ_ERROR_INIT;

		(void) mq_router_backoff(c->router, &err);
		mq_error_free(&err);
	}
	else if (res == NULL && nleaders == 0 && wait_ms > 0)
		mq_sleep_ms(wait_ms);	/* nothing assigned: wait for a rebalance */
	return res;
}

/* Say which offsets of the batch may come again, and why. */
static void
report_unacknowledged(MqConsumer *c, const PGresult *batch, int nrows, const MqError *err)
{
	for (int r = 0; r < nrows; r++)
	{
		int32_t		part = mq_get_int32(batch, r, REC_PARTITION);
		int			from = r;

		while (r + 1 < nrows && mq_get_int32(batch, r + 1, REC_PARTITION) == part)
			r++;
		mq_log_warning("the commit of \"%s\" partition %d offsets %lld to %lld was not acknowledged "
					   "(%.*s): they may be read again",
					   c->topic, part, (long long) mq_get_int64(batch, from, REC_OFFSET),
					   (long long) mq_get_int64(batch, r, REC_OFFSET),
					   (int) strcspn(err->message, "\n"), err->message);
	}
}

/* Commit the offsets past the batch's rows on txn_conn, then await the replicas. */
static bool
commit_batch(MqConsumer *c, const PGresult *batch, int nrows, MqError *err)
{
	MqArray		parts;
	MqArray		offsets;
	MqParams	params;
	PGresult   *res;

	consumer_commit_params(c, batch, nrows, &parts, &offsets, &params);
	res = mq_exec(c->txn_conn, CONSUMER_COMMIT_SQL, &params, 0, err);
	mq_array_free(&parts);
	mq_array_free(&offsets);
	if (res == NULL)
		return false;
	PQclear(res);
	if (!mq_command(c->txn_conn, "COMMIT", err))
		return false;
	c->in_txn = false;
	mq_params_init(&params);
	mq_param_int(&params, MQ_INT4OID, AWAIT_COMMIT_MS);
	res = mq_exec(c->txn_conn, "SELECT mq.await_commit($1)", &params, 0, err);
	PQclear(res);
	return res != NULL;
}

void
consumer_route_commit(MqConsumer *c, const PGresult *batch, int nrows)
{
	MqError		err = MQ_ERROR_INIT;

	if (!c->in_txn || c->txn_conn == NULL)
		return;
	if (!commit_batch(c, batch, nrows, &err))
	{
		report_unacknowledged(c, batch, nrows, &err);
		if (c->in_txn && PQstatus(c->txn_conn) == CONNECTION_OK)
		{
			MqError		ignored = MQ_ERROR_INIT;

			(void) mq_command(c->txn_conn, "ROLLBACK", &ignored);
			mq_error_free(&ignored);
		}
		if (!mq_router_retriable(&err) && !mq_error_is(&err, MQ_SQLSTATE_REQUEST_TIMED_OUT))
			mqctl_fail(NULL, &err);
		if (nrows > 0)
			mq_router_failed(c->router, mq_get_int32(batch, 0, REC_PARTITION), &err);
	}
	c->in_txn = false;
	c->txn_conn = NULL;
	mq_error_free(&err);
}

void
consumer_route_close(MqConsumer *c)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *coord;

	if (c->in_txn && c->txn_conn != NULL)
		(void) mq_command(c->txn_conn, "ROLLBACK", &err);
	mq_error_free(&err);
	coord = c->member_id != NULL ? mq_router_coord(c->router, &err) : NULL;
	if (coord != NULL)
	{
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, c->group);
		mq_param_text(&params, MQ_TEXTOID, c->member_id);
		PQclear(mq_exec(coord, "SELECT mq_coord.leave_cluster_group($1, $2)", &params, 0, &err));
	}
	mq_error_free(&err);
	mq_router_close(c->router);
	free(c->router);
	free(c->member_id);
	free(c->assigned);
	c->router = NULL;
}
