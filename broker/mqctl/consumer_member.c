/*-------------------------------------------------------------------------
 *
 * consumer_member.c
 *	  The consuming engine's membership of a consumer group on one node
 *	  (docs/groups.md, "Membership"; src/sql/51_group_members.sql): it joins with
 *	  mq.join_group (session timeout CONSUMER_SESSION_TIMEOUT_MS, the range
 *	  assignor), heartbeats with mq.heartbeat from the poll loop, commits
 *	  a batch's offsets with its member id and generation, and leaves with
 *	  mq.leave_group.  consumer_route.c is the same for a cluster group.
 *
 * Layer: below consumer.c, which polls with the member id (mq.poll reads
 * only the partitions the member owns, looked up on every read) and calls
 * these around its batch transactions; calls only consumer_offsets.c,
 * session.c and broker/common.
 *
 * Rebalances.  A heartbeat goes with the member's generation every
 * CONSUMER_HEARTBEAT_MS, outside the batch transaction, so that the
 * group's row lock, which the heartbeat takes, is not held across a long
 * poll.  A stale generation (MQ030) joins again with the member id, which
 * returns the current generation; a member the group no longer has (MQ031:
 * its session timed out) joins as a new member, since mq.join_group
 * refuses a member id it does not know.  A commit can still come from a
 * generation that ended since the last heartbeat (MQ030), or for a
 * partition moved away meanwhile (MQ034): it is retried, from a
 * savepoint, after a heartbeat inside the transaction (the hint of
 * MQ030), fenced with the current generation for the partitions the
 * member still owns.  The offsets of the partitions it no longer owns are
 * committed without member id: mq.poll claimed every partition of the
 * batch for this transaction, so no other member can have read them
 * since, and the new owner reads from these offsets once the claims go
 * at COMMIT, as a Kafka member commits what it consumed when its
 * partitions are revoked.  Nothing is printed twice for a rebalance.
 *
 * Locking: the heartbeat of a retried commit holds the group's row lock
 * until the COMMIT that follows it, so no rebalance comes in between.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"
#include "pgbinary.h"

/*
 * The offsets past a batch, member-fenced (member_id $5, generation $6)
 * on the partitions in $7 (NULL: all), plain on the others.
 */
#define MEMBER_COMMIT_SQL \
	"SELECT mq.commit_offset($1, $2, u.p, u.o," \
	"                        member_id => CASE WHEN f.fenced THEN $5 END," \
	"                        generation_id => CASE WHEN f.fenced THEN $6::int4 END)" \
	"  FROM unnest($3::int4[], $4::int8[]) AS u(p, o)" \
	" CROSS JOIN LATERAL (SELECT $7::int4[] IS NULL OR u.p = ANY ($7::int4[]) AS fenced) f"

/* Join (again with member_id, or as a new member without); false: err. */
static bool
join(MqConsumer *c, MqError *err)
{
	MqParams	params;
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->group);
	mq_param_text(&params, MQ_TEXTOID, c->topic);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	mq_param_int(&params, MQ_INT4OID, CONSUMER_SESSION_TIMEOUT_MS);
	res = mq_exec(c->conn, "SELECT member, generation FROM mq.join_group($1, ARRAY[$2::text],"
				  " member_id => $3, session_timeout_ms => $4)", &params, 0, err);
	if (res == NULL)
		return false;
	free(c->member_id);
	c->member_id = mq_strdup(PQgetvalue(res, 0, 0));
	c->generation = atoi(PQgetvalue(res, 0, 1));
	PQclear(res);
	consumer_heartbeat_sent(c);
	return true;
}

void
consumer_member_join(MqConsumer *c)
{
	MqError		err = MQ_ERROR_INIT;

	if (!join(c, &err))
		mqctl_fail(c->conn, &err);
}

/* The group no longer has us (MQ031): join as a new member. */
static void
join_anew(MqConsumer *c)
{
	MqError		err = MQ_ERROR_INIT;

	mq_log_warning("group \"%s\": the session of member %s expired; joining again",
				   c->group, c->member_id);
	free(c->member_id);
	c->member_id = NULL;
	if (!join(c, &err))
		mqctl_fail(c->conn, &err);
}

void
consumer_member_heartbeat(MqConsumer *c)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	if (!consumer_heartbeat_due(c))
		return;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->group);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	mq_param_int(&params, MQ_INT4OID, c->generation);
	res = mq_exec(c->conn, "SELECT generation FROM mq.heartbeat($1, $2, $3) LIMIT 1",
				  &params, 0, &err);
	if (res != NULL)
		c->generation = atoi(PQgetvalue(res, 0, 0));
	else if (mq_error_is(&err, MQ_SQLSTATE_STALE_GENERATION))
	{
		/* the group rebalanced: the same member joins its new generation */
		mq_error_free(&err);
		if (!join(c, &err) && !mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
			mqctl_fail(c->conn, &err);
		if (err.message != NULL)
			join_anew(c);		/* it expired meanwhile */
	}
	else if (mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
		join_anew(c);
	else
		mqctl_fail(c->conn, &err);
	PQclear(res);
	mq_error_free(&err);
}

void
consumer_member_expired(MqConsumer *c)
{
	join_anew(c);
}

/* Run the member commit with $7 = fenced (NULL: every partition). */
static bool
commit_fenced(MqConsumer *c, const PGresult *batch, int nrows, MqArray *fenced, MqError *err)
{
	MqArray		parts;
	MqArray		offsets;
	MqParams	params;
	PGresult   *res;
	const char *data;
	int			len;

	consumer_commit_params(c, batch, nrows, &parts, &offsets, &params);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	mq_param_int(&params, MQ_INT4OID, c->generation);
	if (fenced == NULL)
		mq_param_text(&params, MQ_INT4ARRAYOID, NULL);
	else
	{
		data = mq_array_bytes(fenced, &len);
		mq_param_binary(&params, MQ_INT4ARRAYOID, data, len);
	}
	res = mq_exec(c->conn, MEMBER_COMMIT_SQL, &params, 0, err);
	mq_array_free(&parts);
	mq_array_free(&offsets);
	PQclear(res);
	return res != NULL;
}

/*
 * Inside the transaction: the current generation and the partitions of the
 * topic the member owns now, by a heartbeat without generation (it cannot
 * be stale).  False when the group no longer has the member (MQ031).
 */
static bool
learn_assignment(MqConsumer *c, MqArray *owned)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->group);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	mq_param_text(&params, MQ_TEXTOID, c->topic);
	res = mq_exec(c->conn, "SELECT generation, partition FROM mq.heartbeat($1, $2)"
				  " WHERE topic IS NULL OR topic = $3", &params, 0, &err);
	if (res == NULL)
	{
		if (!mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
			mqctl_fail(c->conn, &err);
		mq_error_free(&err);
		return false;
	}
	for (int i = 0; i < PQntuples(res); i++)
	{
		c->generation = atoi(PQgetvalue(res, i, 0));
		if (!PQgetisnull(res, i, 1))
			mq_array_add_int32(owned, atoi(PQgetvalue(res, i, 1)));
	}
	PQclear(res);
	return true;
}

/* A commit refused for a rebalance: again, fenced where still owned. */
static void
commit_after_rebalance(MqConsumer *c, const PGresult *batch, int nrows)
{
	MqArray		owned;
	MqError		err = MQ_ERROR_INIT;

	mqctl_command(c->conn, "ROLLBACK TO SAVEPOINT mqctl_commit");
	mq_array_init(&owned, MQ_INT4OID);
	if (!learn_assignment(c, &owned))
	{
		/* expired: commit plainly under the claims, join anew at the next poll */
		mqctl_command(c->conn, "ROLLBACK TO SAVEPOINT mqctl_commit");
		c->heartbeat_due_us = 0;
		mq_array_reset(&owned);
	}
	if (!commit_fenced(c, batch, nrows, &owned, &err))
		mqctl_fail(c->conn, &err);
	mq_array_free(&owned);
}

void
consumer_member_commit(MqConsumer *c, const PGresult *batch, int nrows)
{
	MqError		err = MQ_ERROR_INIT;

	mqctl_command(c->conn, "SAVEPOINT mqctl_commit");
	if (!commit_fenced(c, batch, nrows, NULL, &err))
	{
		if (!mq_error_is(&err, MQ_SQLSTATE_STALE_GENERATION) &&
			!mq_error_is(&err, MQ_SQLSTATE_PARTITION_NOT_OWNED) &&
			!mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
			mqctl_fail(c->conn, &err);
		commit_after_rebalance(c, batch, nrows);
	}
	mq_error_free(&err);
	mqctl_command(c->conn, "COMMIT");
	c->in_txn = false;
}

/* Leave the group at once (a new generation for the others). */
void
consumer_member_leave(MqConsumer *c)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	if (c->member_id == NULL || PQstatus(c->conn) != CONNECTION_OK)
		return;
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->group);
	mq_param_text(&params, MQ_TEXTOID, c->member_id);
	res = mq_exec(c->conn, "SELECT mq.leave_group($1, $2)", &params, 0, &err);
	/* a member whose session timed out has left already */
	if (res == NULL && !mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_MEMBER))
		mq_log_warning("could not leave group \"%s\": %.*s", c->group,
					   (int) strcspn(err.message, "\n"), err.message);
	PQclear(res);
	mq_error_free(&err);
	free(c->member_id);
	c->member_id = NULL;
}
