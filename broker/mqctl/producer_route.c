/*-------------------------------------------------------------------------
 *
 * producer_route.c
 *	  The producing engine on a replicated cluster given the coordinator's
 *	  address alone (docs/cli.md, "A replicated cluster"): each partition's
 *	  part of a batch goes to that partition's leader, found through the
 *	  coordinator (broker/common/route.c), and a leader change is followed.
 *
 * Parts led by different nodes cannot share a transaction, so in a
 * cluster each part is its own call (its own transaction, as with
 * acks=all on one node): a batch is acknowledged part by part, and a part
 * once acknowledged is not sent again.  A part that fails because its
 * leader changed (MQ020, or the partition unknown on that node) or went
 * away (a lost connection) is sent again, with the same producer id,
 * epoch and sequence, to the leader the coordinator names after a
 * jittered back-off, for up to RETRY_FOR_MS: the new leader has the
 * producer's state of every batch the old one acknowledged (it is
 * replicated with the partition, and ids are cluster-wide), so a retry of
 * an acknowledged part returns its offsets without writing it twice.
 * Without idempotence, a lost connection ends the command as on one node
 * (the part may have been written); MQ020 is retried, as nothing was
 * written.  acks=all: MQ021 (nothing written) is retried, and so are
 * MQ022 and MQ023 when idempotent (the retry is deduplicated).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "mqctl.h"
#include "producer.h"

#define RETRY_FOR_MS		30000

static bool
route_setup(PGconn *conn, void *arg, MqError *err)
{
	return producer_setup_session((MqProducer *) arg, conn, err);
}

bool
producer_route_open(MqProducer *pr, PGconn *conn)
{
	MqError		err = MQ_ERROR_INIT;
	int			found = mq_router_detect(conn, pr->topic, &err);

	if (found < 0)
		mqctl_fail(conn, &err);
	if (found == 0)
		return false;
	pr->router = mq_malloc0(sizeof(MqRouter));
	if (!mq_router_open(pr->router, conn, mqctl_conninfo(), mq_progname, pr->topic,
						route_setup, pr, &err))
		mqctl_fail(NULL, &err);
	pr->npartitions = pr->router->npartitions;
	pr->conn = NULL;
	return true;
}

/*
 * The connection for what any node answers (mq.init_producer,
 * mq.partition_for): on one node its connection, in a cluster a leader's,
 * waiting for one for up to RETRY_FOR_MS.
 */
PGconn *
producer_home(MqProducer *pr, MqError *err)
{
	int64_t		give_up_at = mq_now_us() + (int64_t) RETRY_FOR_MS * 1000;

	if (pr->router == NULL)
		return pr->conn;
	for (;;)
	{
		for (int32_t p = 0; p < pr->router->npartitions; p++)
		{
			PGconn	   *conn;

			if (mq_router_leader(pr->router, p) < 0)
				continue;
			conn = mq_router_conn(pr->router, p, err);
			if (conn != NULL)
			{
				mq_error_free(err);
				return conn;
			}
			mq_router_failed(pr->router, p, err);
		}
		if (mq_now_us() >= give_up_at)
		{
			if (err->message == NULL)
				err->message = mq_strdup("no partition of the topic has a leader");
			err->connection_lost = true;
			return NULL;
		}
		(void) mq_router_backoff(pr->router, err);
	}
}

/* May a part that failed with err be sent again? */
static bool
retriable(const MqProducer *pr, const MqError *err)
{
	if (err->connection_lost)
		return pr->idempotent;
	if (mq_router_retriable(err) || mq_error_is(err, MQ_SQLSTATE_NOT_ENOUGH_REPLICAS))
		return true;
	return pr->idempotent &&
		(mq_error_is(err, MQ_SQLSTATE_NOT_ENOUGH_REPLICAS_AFTER_APPEND) ||
		 mq_error_is(err, MQ_SQLSTATE_REQUEST_TIMED_OUT));
}

/* Send the parts not acknowledged yet; *failed is the partition that failed. */
static bool
send_routed(MqProducer *pr, int32_t *failed, MqError *err)
{
	for (int i = 0; i < pr->nparts; i++)
	{
		ProducerPart *part = &pr->parts[i];
		PGconn	   *conn;

		if (part->sent)
			continue;
		*failed = part->partition;
		conn = mq_router_conn(pr->router, part->partition, err);
		if (conn == NULL || !producer_send_part(pr, conn, part, err))
			return false;
		part->sent = true;
	}
	return true;
}

bool
producer_route_deliver(MqProducer *pr, ProducerAssign assign, MqError *err)
{
	int64_t		give_up_at = mq_now_us() + (int64_t) RETRY_FOR_MS * 1000;

	for (;;)
	{
		int32_t		failed = -1;
		MqError		refresh = MQ_ERROR_INIT;

		if ((pr->assigned || assign(pr, err)) && send_routed(pr, &failed, err))
		{
			/* what the retries left in err */
			mq_error_free(err);
			mq_router_succeeded(pr->router);
			return true;
		}
		if (!retriable(pr, err) || mq_now_us() >= give_up_at)
			return false;
		mq_router_failed(pr->router, failed, err);
		mq_log_warning("%.*s; sending to the partition's leader again",
					   (int) strcspn(err->message, "\n"), err->message);
		/* the coordinator may be briefly away too: keep trying until the deadline */
		(void) mq_router_backoff(pr->router, &refresh);
		mq_error_free(&refresh);
	}
}

void
producer_route_close(MqProducer *pr)
{
	if (pr->router == NULL)
		return;
	mq_router_close(pr->router);
	free(pr->router);
	pr->router = NULL;
}
