/*-------------------------------------------------------------------------
 *
 * elect.c
 *	  Elections: a broker that finds a partition's leadership lock free
 *	  (the leader's session ended or it gave the lock up) takes it, and
 *	  mq_coord.elect checks it is in the ISR (or that unclean election is
 *	  allowed), bumps the leader epoch and records it, in one transaction;
 *	  then the node is made the leader in that epoch and the partition
 *	  moves to LEADER (event elected).
 *
 * A paused leader keeps its lock, so a broker that sees the leader's
 * heartbeat older than session.timeout.ms ends that session
 * (mq_coord.fence_broker); the data nodes refuse whatever the paused
 * broker does afterwards by epoch.
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

/* The lock is held by someone else: fence the leader if it stopped beating. */
static void
fence_if_paused(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	bool		fenced;

	if (p->leader < 0 || p->leader == b->cfg->broker_id || broker_is_live(b, p->leader))
		return;
	if (coord_fence(b, p->leader, &fenced, &err) && fenced)
		mq_log_warning("%s: leader broker %d missed its heartbeats for %d ms; "
					   "ended its coordinator session so that an election can run",
					   part_label(p), p->leader, b->cfg->session_timeout_ms);
	mq_error_free(&err);
}

/* Take the partition's leadership lock; false when we do not hold it. */
bool
take_lock(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	bool		got;

	if (p->lock_held)
		return true;
	if (!coord_try_lock_partition(b, p, &got, &err))
	{
		mq_error_free(&err);
		return false;
	}
	p->lock_held = got;
	if (!got)
		fence_if_paused(b, p);	/* held: by a live leader, or by a paused one */
	return got;
}

/*
 * Try to become the leader: take the partition's lock (free means the
 * leader is gone or gave up), get elected, and make the node the leader.
 */
void
try_elect(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	int			epoch;
	int			prev = p->leader;
	int64_t		log_end;
	char		ibuf[128];

	if (!take_lock(b, p))
		return;
	if (!coord_elect(b, p, &epoch, &err))
	{
		log_mq_error("election failed", &err);
		mq_error_free(&err);
		release_lock(b, p);
		return;
	}
	if (epoch < 0)
	{
		release_lock(b, p);		/* not eligible: leave it to an ISR member */
		return;
	}
	/* the ISR as elect left it (unclean election resets it to us) */
	(void) coord_read_isr(b, p, &err);
	mq_error_free(&err);

	follower_stop(p);
	if (!node_become_leader(b, p, epoch, &log_end, &err))
	{
		log_mq_error("elected, but the node refused to lead; giving the leadership up", &err);
		mq_error_free(&err);
		release_lock(b, p);
		return;
	}
	mq_log_info("%s: elected leader in epoch %d (previous leader %d, ISR %s, log end %lld); "
				"the node takes produce now", part_label(p), epoch, prev,
				int_array_text(p->isr, p->nisr, ibuf, sizeof(ibuf)), (long long) log_end);
	p->leader = b->cfg->broker_id;
	p->leader_epoch = epoch;
	p->applied_epoch = epoch;
	p->leader_since_us = mq_now_us();
	p->nfollowers = 0;
	b->stats.elections++;
	fsm_fire(b, p, EV_ELECTED);
}
