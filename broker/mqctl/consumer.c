/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  The consuming engine: batches of records from a topic (see
 *	  consumer.h), for the commands in cmd_consume.c and cmd_perf.c.
 *	  Layers: the commands above; below it consumer_route.c (a cluster
 *	  group) and consumer_member.c (a group member on one node), then
 *	  consumer_wait.c (cancellable waits) and
 *	  consumer_offsets.c (the commit's parameters), which call nothing
 *	  back up.
 *
 * In a group, the consumer is a member (consumer_member.c: joined,
 * heartbeating between batches, leaving at the end) and one batch is one
 * transaction: mq.poll() with the member id reads the partitions the
 * member owns and claims those it reads until the transaction ends, so
 * members get disjoint records even while a rebalance is being heard; the
 * caller processes (prints) the batch, then the offsets past it are
 * committed in the same transaction.  A crash in between commits nothing,
 * and the batch is delivered again: at-least-once, the default delivery
 * of Kafka's console consumer too.
 *
 * Without a group the positions live here, and each batch is a single
 * statement that fetches from every partition at once (a LATERAL call of
 * mq.fetch per partition), so a topic with many partitions still costs one
 * round trip per batch.  The LIMIT ends the statement once the batch is
 * full, so partitions late in the list may not be read at all: the
 * partition that goes first rotates, which keeps a busy partition from
 * starving the others.  No ORDER BY is needed (nor wanted: it would read
 * every partition and sort): a function call that refers to the outer
 * unnest() can only run as the inner side of a nested loop, so rows come
 * partition by partition, each in offset order, which is what
 * consumer_commit() relies on.
 *
 * Long polling: with nothing to read, mq.poll() and mq.fetch() wait on the
 * server (max_wait_ms, at most a heartbeat interval for a member) until
 * a producer commits to the topic.  A group member waits inside its batch
 * transaction, so its claims last for the wait; a member that a rebalance
 * gave one of those partitions finds it claimed and waits too, and
 * whoever wakes first reads.  mq.fetch() waits for one partition only, so
 * a reader of several partitions without a group waits differently: in a
 * transaction that is rolled back, it sets the positions of a group of its
 * own (named after its backend, so unique) with mq.commit_offset() and
 * lets mq.poll() wait over all of them, since a poll reads from where the
 * transaction's commit_offset put a position (docs/sql.md).  That costs a
 * few row writes per idle wait, never committed, and EXECUTE on mq.poll and
 * mq.commit_offset; without those rights it polls every 100 ms instead.
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "mqctl.h"
#include "pgbinary.h"

#define RECORD_COLUMNS CONSUMER_RECORD_COLUMNS

/* sleep between polls when the server cannot wait for us */
#define FALLBACK_POLL_MS 100

static void
open_partitions(MqConsumer *c, int32_t partition, ConsumerStart start, int64_t offset)
{
	MqParams	params;
	PGresult   *res;
	int			n;

	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->topic);
	res = mqctl_exec(c->conn,
					 "SELECT partition, log_start_offset, high_watermark FROM mq.partitions"
					 " WHERE topic = $1 ORDER BY partition", &params, 0);
	n = PQntuples(res);
	if (n == 0)
	{
		/* every topic has a partition: the topic is missing (MQ001's words) */
		mq_log_error(MQCTL_NO_TOPIC, c->topic);
		exit(MQ_EXIT_SERVER);
	}
	c->partitions = mq_malloc(sizeof(int32_t) * n);
	c->next = mq_malloc(sizeof(int64_t) * n);
	for (int i = 0; i < n; i++)
	{
		int32_t		part = atoi(PQgetvalue(res, i, 0));

		if (partition >= 0 && part != partition)
			continue;
		c->partitions[c->nparts] = part;
		c->next[c->nparts++] =
			start == START_OFFSET ? offset :
			strtoll(PQgetvalue(res, i, start == START_EARLIEST ? 1 : 2), NULL, 10);
	}
	if (c->nparts == 0)
	{
		mq_log_error("topic \"%s\" has no partition %d (it has %d, numbered from 0)"
					 MQCTL_SQLSTATE(MQ_SQLSTATE_UNKNOWN_PARTITION),
					 c->topic, partition, n);
		exit(MQ_EXIT_SERVER);
	}
	PQclear(res);
}

void
consumer_open(MqConsumer *c, PGconn *conn, const char *topic,
			  const char *group, int32_t partition, ConsumerStart start,
			  int64_t offset)
{
	memset(c, 0, sizeof(*c));
	c->conn = conn;
	c->cancel = PQgetCancel(conn);
	c->topic = topic;
	c->group = group;
	/* a coordinator: a cluster group over the partitions' leaders (consumer_route.c) */
	if (consumer_route_open(c, start))
		return;
	if (group == NULL)
	{
		open_partitions(c, partition, start, offset);
		return;
	}
	/* joined first: a refused join (MQ032) must leave the group's offsets as they were */
	consumer_member_join(c);
	if (start == START_LATEST)
	{
		MqParams	params;

		/*
		 * mq.poll starts a group without offsets at the log start; Kafka's
		 * console consumer starts at the end unless --from-beginning.  Two
		 * consumers of a new group starting at once may both do this; the
		 * later commit wins, which can only move a position back a little.
		 */
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, group);
		mq_param_text(&params, MQ_TEXTOID, topic);
		PQclear(mqctl_exec(conn,
						   "SELECT mq.commit_offset($1, $2, p.partition, p.high_watermark)"
						   "  FROM mq.partitions p"
						   " WHERE p.topic = $2 AND mq.committed_offset($1, $2, p.partition) IS NULL",
						   &params, 0));
	}
}

/*
 * A member's batch: a poll of its partitions in a new transaction, left
 * open when it read records.  A poll that finds the member gone (MQ031:
 * its session timed out) joins again and polls once more.  NULL when
 * interrupted, or when the member was gone twice.
 */
static PGresult *
poll_group(MqConsumer *c, int max_records, int wait_ms)
{
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = NULL;

	for (int tries = 0; tries < 2 && res == NULL && !consumer_interrupted(); tries++)
	{
		consumer_member_heartbeat(c);
		mqctl_command(c->conn, "BEGIN");
		c->in_txn = true;
		mq_params_init(&params);
		mq_param_text(&params, MQ_TEXTOID, c->group);
		mq_param_text(&params, MQ_TEXTOID, c->topic);
		mq_param_int(&params, MQ_INT4OID, max_records);
		mq_param_int(&params, MQ_INT4OID,
					 wait_ms < CONSUMER_HEARTBEAT_MS ? wait_ms : CONSUMER_HEARTBEAT_MS);
		mq_param_text(&params, MQ_TEXTOID, c->member_id);
		res = consumer_exec_wait(c, "SELECT " RECORD_COLUMNS
								 "  FROM mq.poll($1, $2, $3, false, $4, 1, $5) f",
								 &params, MQ_SQLSTATE_UNKNOWN_MEMBER, &err);
		if (res == NULL || PQntuples(res) == 0)
		{
			/* nothing to commit: let the claims go at once */
			mqctl_command(c->conn, "ROLLBACK");
			c->in_txn = false;
		}
		if (res == NULL && !consumer_interrupted())
			consumer_member_expired(c);	/* MQ031: its session timed out */
		mq_error_free(&err);
	}
	return res;
}

/* The partitions and their positions as binary int4[] and int8[] parameters. */
static void
position_params(MqConsumer *c, MqParams *params, MqArray *parts, MqArray *offsets)
{
	const char *data;
	int			len;

	mq_array_init(parts, MQ_INT4OID);
	mq_array_init(offsets, MQ_INT8OID);
	for (int k = 0; k < c->nparts; k++)
	{
		int			i = (c->rotation + k) % c->nparts;

		mq_array_add_int32(parts, c->partitions[i]);
		mq_array_add_int64(offsets, c->next[i]);
	}
	data = mq_array_bytes(parts, &len);
	mq_param_binary(params, MQ_INT4ARRAYOID, data, len);
	data = mq_array_bytes(offsets, &len);
	mq_param_binary(params, MQ_INT8ARRAYOID, data, len);
}

/*
 * Without a group, several partitions: wait for records on any of them
 * with mq.poll() over a group of this session's own, whose positions are
 * ours for the length of a transaction that is rolled back (see the top).
 * Partitions added since consumer_open() are left out, as in every batch.
 */
static PGresult *
wait_partitions(MqConsumer *c, int max_records, int wait_ms)
{
	char		group[64];
	MqParams	params;
	MqArray		parts;
	MqArray		offsets;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res = NULL;

	snprintf(group, sizeof(group), "mqctl.wait.%d", PQbackendPID(c->conn));
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, group);
	mq_param_text(&params, MQ_TEXTOID, c->topic);
	position_params(c, &params, &parts, &offsets);
	mq_param_int(&params, MQ_INT4OID, max_records);
	mq_param_int(&params, MQ_INT4OID, wait_ms);

	mqctl_command(c->conn, "BEGIN");
	res = mq_exec(c->conn,
				  "SELECT count(mq.commit_offset($1, $2, u.p, u.o))"
				  "  FROM unnest($3::int4[], $4::int8[]) AS u(p, o)",
				  &params, 0, &err);
	if (res != NULL)
	{
		PQclear(res);
		res = consumer_exec_wait(c,
								 "SELECT " RECORD_COLUMNS
								 "  FROM mq.poll($1, $2, $5, false, $6, 1, NULL, 'latest') f"
								 " WHERE f.partition = ANY ($3::int4[])",
								 &params, "42501", &err);
	}
	else if (err.connection_lost || !mq_error_is(&err, "42501"))
		mqctl_fail(c->conn, &err);
	if (res == NULL && !consumer_interrupted())
	{
		/* insufficient_privilege: poll without a wait from now on */
		mq_log_warning("%s: reading several partitions without a group polls every %d ms",
					   err.message, FALLBACK_POLL_MS);
		c->cannot_wait = true;
	}
	mqctl_command(c->conn, "ROLLBACK");
	mq_error_free(&err);
	mq_array_free(&parts);
	mq_array_free(&offsets);
	return res;
}

static PGresult *
poll_partitions(MqConsumer *c, int max_records, int wait_ms)
{
	MqArray		parts;
	MqArray		offsets;
	MqParams	params;
	MqError		err = MQ_ERROR_INIT;
	PGresult   *res;

	/* one partition: mq.fetch waits for it itself (several: wait_partitions) */
	mq_params_init(&params);
	mq_param_text(&params, MQ_TEXTOID, c->topic);
	position_params(c, &params, &parts, &offsets);
	mq_param_int(&params, MQ_INT4OID, max_records);
	mq_param_int(&params, MQ_INT4OID, c->nparts == 1 ? wait_ms : 0);
	c->rotation = (c->rotation + 1) % c->nparts;
	res = consumer_exec_wait(c,
							 "SELECT " RECORD_COLUMNS
							 "  FROM unnest($2::int4[], $3::int8[]) AS u(p, o)"
							 " CROSS JOIN LATERAL mq.fetch($1, u.p, u.o, $4, $5) f"
							 " LIMIT $4",
							 &params, NULL, &err);
	mq_error_free(&err);
	mq_array_free(&parts);
	mq_array_free(&offsets);

	if (PQntuples(res) > 0 || c->nparts == 1 || wait_ms <= 0 || consumer_interrupted())
		return res;
	PQclear(res);
	if (c->cannot_wait)
	{
		mq_sleep_ms(wait_ms < FALLBACK_POLL_MS ? wait_ms : FALLBACK_POLL_MS);
		return NULL;
	}
	return wait_partitions(c, max_records, wait_ms);
}

PGresult *
consumer_poll(MqConsumer *c, int max_records, int wait_ms)
{
	if (c->router != NULL)
		return consumer_route_poll(c, max_records, wait_ms);
	return c->group ? poll_group(c, max_records, wait_ms) :
		poll_partitions(c, max_records, wait_ms);
}

static int
partition_index(const MqConsumer *c, int32_t partition)
{
	/* partitions are usually 0..n-1, in order */
	if (partition < c->nparts && c->partitions[partition] == partition)
		return partition;
	for (int i = 0; i < c->nparts; i++)
		if (c->partitions[i] == partition)
			return i;
	return -1;
}

void
consumer_commit(MqConsumer *c, const PGresult *batch, int nrows)
{
	if (c->router != NULL)
	{
		consumer_route_commit(c, batch, nrows);
		return;
	}
	if (c->group)
	{
		if (c->in_txn)
			consumer_member_commit(c, batch, nrows);
		return;
	}
	for (int r = 0; r < nrows; r++)
	{
		int			i = partition_index(c, mq_get_int32(batch, r, REC_PARTITION));

		if (i >= 0)
			c->next[i] = mq_get_int64(batch, r, REC_OFFSET) + 1;
	}
}

void
consumer_close(MqConsumer *c)
{
	if (c->router != NULL)
		consumer_route_close(c);
	else if (c->group != NULL)
	{
		if (c->in_txn && PQstatus(c->conn) == CONNECTION_OK)
			mqctl_command(c->conn, "ROLLBACK");
		consumer_member_leave(c);
	}
	PQfreeCancel(c->cancel);
	free(c->partitions);
	free(c->next);
	memset(c, 0, sizeof(*c));
}
