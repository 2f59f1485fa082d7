/*-------------------------------------------------------------------------
 *
 * liveness.c
 *	  mq-broker's liveness: connecting to its node and to the coordinator,
 *	  setting their sessions up, the liveness lock, and the partition
 *	  leadership locks given back.
 *
 * Layer: above the typed calls (calls_*.c) and session.c, below the tick
 * (step.c).  It fires no state-machine event, runs no recovery and does
 * not wait in the loop: attaching to the node is two steps
 * (node_session_open, node_session_attach) between which step.c settles
 * the node's prepared transactions (recover.c), and step.c fires what a
 * new node session means for the partitions.
 *
 * Both connections are made under the broker's connection policy
 * (connpolicy.h: connect timeout, keepalives, retries with back-off and
 * jitter).  The coordinator session holds the advisory lock
 * (broker_lock_class, broker id) and heartbeats.  A broker that loses its
 * node gives up its liveness lock (liveness_give_up) and every leadership
 * lock at once, so the other brokers elect new leaders and drop it from
 * the ISR (event node_lost: every partition to NONE).  One that loses the
 * coordinator keeps leading and following in the epochs it has (event
 * coord_lost): another leader can only be elected in a new epoch, which
 * the data nodes fence, so acks=all stays safe; back on the coordinator
 * it takes its leadership locks back or steps down.
 *
 * Connecting to the coordinator runs on a thread of its own (connpolicy.h,
 * mq_connect_start), looked at each tick, so that a silent host holds
 * nothing else (docs/design.md, "Waiting for the coordinator").
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "util.h"

/* Give up the leadership lock of one partition (no-op when not held). */
void
release_lock(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;

	if (!p->lock_held)
		return;
	p->lock_held = false;
	if (b->coord == NULL)
		return;
	(void) coord_unlock_partition(b, p, &err);
	mq_error_free(&err);
}

/*
 * The node is gone: give up the liveness lock too, so that the others
 * elect in our place and shrink us out of the ISR.
 */
void
liveness_give_up(Broker *b)
{
	if (b->coord != NULL && b->live)
	{
		MqError		e2 = MQ_ERROR_INIT;

		(void) coord_unlock_broker(b, &e2);
		mq_error_free(&e2);
	}
	b->live = false;
}

/* A node connection that cannot be set up: drop it and retry later. */
static void
node_setup_failed(Broker *b, const char *what, MqError *err)
{
	log_mq_error(what, err);
	mq_error_free(err);
	if (b->node)
	{
		PQfinish(b->node);
		b->node = NULL;
	}
	(void) mq_retry_failed(&b->node_retry, &b->policy);
}
/*
 * Connect to the node when due and set its session up; true when a new
 * session is ready.  The caller then settles what the coordinator has
 * decided of the node's prepared transactions (recover.c: one of a
 * pipeline step holds its partitions' produce locks, which resigning
 * waits for; without the coordinator, the resign may wait, fail and be
 * retried until it is back) and, with the node still there, calls
 * node_session_attach.
 */
bool
node_session_open(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (b->node != NULL || !mq_retry_due(&b->node_retry))
		return false;
	b->node = mq_connect_policy(b->cfg->node, "mq-broker", &b->policy, &err);
	if (b->node == NULL)
	{
		int			pause = mq_retry_failed(&b->node_retry, &b->policy);

		mq_log_error("cannot connect to the node; retrying in %d ms: %s", pause, err.message);
		mq_error_free(&err);
		return false;
	}
	if (!node_setup_session(b, &err))
	{
		node_setup_failed(b, "cannot make the node session's commits durable", &err);
		return false;
	}
	return true;
}

/*
 * Resign whatever the node led before and attach our session to it; true
 * when done (the caller then drops every partition's role: the node leads
 * nothing now).
 */
bool
node_session_attach(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	int			resigned;

	/* whatever the node led before (say, before a crash) it does not lead now */
	if (!node_resign_all(b, &resigned, &err))
	{
		node_setup_failed(b, "cannot resign old leaderships on the node", &err);
		return false;
	}
	mq_log_info("connected to the node %s; resigned %d old leadership(s); "
				"partitions will follow the coordinator's leaders",
				mq_conn_label(b->node), resigned);

	/*
	 * From now on the node trusts its leaderships only while this session
	 * lives: if we die, clients of its partitions get not_leader at once
	 * instead of waiting for acknowledgements nobody will give.
	 */
	if (!node_attach(b, &err))
	{
		node_setup_failed(b, "cannot attach to the node", &err);
		return false;
	}
	mq_retry_succeeded(&b->node_retry);
	return true;
}

/*
 * Connecting runs on a thread (connpolicy.h): a silent coordinator host
 * holds it for connect_timeout, not the broker.  Each tick looks whether
 * the attempt is over; true once connected.
 */
static bool
connect_coordinator(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (b->coord_job == NULL)
	{
		if (!mq_retry_due(&b->coord_retry))
			return false;
		b->coord_job = mq_connect_start(b->cfg->coordinator, "mq-broker", &b->policy, &err);
		if (b->coord_job != NULL)
			return false;
	}
	else if (!mq_connect_finish(b->coord_job, &b->coord, &err))
		return false;
	b->coord_job = NULL;
	if (b->coord == NULL)
	{
		int			pause = mq_retry_failed(&b->coord_retry, &b->policy);

		mq_log_error("cannot connect to the coordinator; retrying in %d ms: %s", pause, err.message);
		mq_error_free(&err);
		return false;
	}
	coord_session_start(b);
	if (!coord_setup_session(b, &err))
	{
		log_mq_error("cannot set up the coordinator session", &err);
		mq_error_free(&err);
		if (b->coord == NULL)
			return false;
	}
	mq_retry_succeeded(&b->coord_retry);
	mq_log_info("connected to the coordinator %s", mq_conn_label(b->coord));
	return true;
}

void
ensure_coordinator(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	bool		got;

	if (b->coord == NULL && !connect_coordinator(b))
		return;
	if (b->live || b->node == NULL)
		return;					/* without a node we are no live replica */
	if (!coord_try_lock_broker(b, &got, &err))
	{
		mq_error_free(&err);
		return;
	}
	if (!got)
	{
		mq_log_warning("broker id %d is held by another session (another broker, or our old "
					   "session not yet gone); retrying", b->cfg->broker_id);
		return;
	}
	if (!coord_register(b, b->cfg->node_name ? b->cfg->node_name : mq_conn_label(b->node), &err))
	{
		log_mq_error("cannot register with the coordinator", &err);
		mq_error_free(&err);
		return;
	}
	b->live = true;
	b->live_since_us = mq_now_us();
	mq_log_info("registered as broker %d (liveness lock held); reading assignments",
				b->cfg->broker_id);
}
