/*-------------------------------------------------------------------------
 *
 * reassign.c
 *	  The leader's part of moving a partition's replicas (Kafka's KIP-455;
 *	  docs/replication.md, "Placement and reassignment").
 *
 * While a partition moves, the coordinator's replica set is the target
 * followed by the replicas leaving, and the new replicas follow like any
 * other (placement.c throttles their copy).  Each tick the leader:
 *   1. gives its node the coordinator's replica set, so that the new
 *      replicas are reported by mq.replica_leader_state and join the ISR
 *      once caught up (isr.c, the usual rule);
 *   2. once the whole target is in the ISR: if it is itself in the target,
 *      completes the move on the coordinator (replicas = target, ISR
 *      within it; coordinator first, then its node, as for an ISR shrink:
 *      the node's ISR stays the larger, and dropping members only raises
 *      the high watermark over records every remaining member holds);
 *      otherwise, once its progress shows every target replica in its
 *      node's ISR holding the high watermark, it hands leadership to the
 *      first target replica as handover.c does for a preferred leader
 *      (resign in its epoch,
 *      release the lock; that replica, in the ISR, is elected in a new
 *      epoch and completes the move itself).
 * The brokers of the replicas that left then no longer see them assigned
 * and mark them not hosted on their nodes (placement.c).
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "placement.h"
#include "util.h"

static bool
same_set(const int *a, int na, const int *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* 1. The node's replica set is the coordinator's. */
static bool
sync_node_replicas(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	char		buf[128];

	if (same_set(p->node_replicas, p->nnode_replicas, p->replicas, p->nreplicas))
		return true;
	if (!node_set_replicas(b, p, NULL, 0, &err))
	{
		log_mq_error("cannot give the node the partition's replica set", &err);
		mq_error_free(&err);
		return false;
	}
	memcpy(p->node_replicas, p->replicas, sizeof(int) * p->nreplicas);
	p->nnode_replicas = p->nreplicas;
	mq_log_info("%s: replicas on the node are now %s", part_label(p),
				int_array_text(p->replicas, p->nreplicas, buf, sizeof(buf)));
	return true;
}

static bool
target_in_sync(const Part *p)
{
	for (int i = 0; i < p->ntarget; i++)
		if (!int_in(p->target[i], p->isr, p->nisr))
			return false;
	return p->ntarget > 0;
}

/* 2a. We stay: the move ends, coordinator first, then the node. */
static void
complete(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	int			isr[MAX_REPLICAS];
	int			nisr;
	bool		done;
	char		rbuf[128],
				ibuf[128];

	if (!coord_complete_reassignment(b, p, isr, &nisr, &done, &err) || !done)
	{
		mq_error_free(&err);
		return;					/* not yet, or deposed: the next tick tells */
	}
	memcpy(p->replicas, p->target, sizeof(int) * p->ntarget);
	p->nreplicas = p->ntarget;
	memcpy(p->isr, isr, sizeof(int) * nisr);
	p->nisr = nisr;
	p->ntarget = 0;
	mq_log_info("%s: reassignment complete: replicas %s, ISR %s", part_label(p),
				int_array_text(p->replicas, p->nreplicas, rbuf, sizeof(rbuf)),
				int_array_text(isr, nisr, ibuf, sizeof(ibuf)));
	if (!node_set_replicas(b, p, isr, nisr, &err))
	{
		log_mq_error("cannot give the node the replica set after the move; retrying", &err);
		mq_error_free(&err);
		p->nnode_replicas = 0;	/* step 1 sets it again */
		return;
	}
	memcpy(p->node_replicas, p->replicas, sizeof(int) * p->nreplicas);
	p->nnode_replicas = p->nreplicas;
}

/*
 * Before handing over: did this tick's progress (read before this tick's
 * ISR changes) show every target replica in the node's ISR with the whole
 * high watermark?  A replica added to the ISR may have been behind a high
 * watermark that moved after its progress was read; once it is in the
 * node's ISR and holds the high watermark, the high watermark cannot pass
 * its log end, so nothing acknowledged is missing from it.
 */
static bool
target_holds_hwm(Broker *b, const Part *p)
{
	for (int i = 0; i < p->ntarget; i++)
	{
		bool		ok = p->target[i] == b->cfg->broker_id;

		for (int j = 0; j < p->nfollowers && !ok; j++)
			ok = p->followers[j].id == p->target[i] && p->followers[j].in_isr &&
				p->m_hwm >= 0 && p->followers[j].log_end >= p->m_hwm;
		if (!ok)
			return false;
	}
	return true;
}

/* 2b. We leave the replica set: hand leadership to the first target replica. */
static void
hand_over(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	int			epoch = p->applied_epoch;

	if (!broker_is_live(b, p->target[0]) || !target_holds_hwm(b, p))
		return;
	if (!node_become_follower(b, p, epoch, -1, NULL, &err))
	{
		log_mq_error("cannot resign to hand leadership to the reassignment's target", &err);
		mq_error_free(&err);
		return;
	}
	mq_log_info("%s: leaving the replica set: the target is in the ISR; resigned epoch %d "
				"and released the leadership for broker %d", part_label(p), epoch, p->target[0]);
	b->stats.handovers++;
	fsm_fire(b, p, EV_HANDED_OVER);
	p->hold_off_until_us = mq_now_us() + (int64_t) b->cfg->session_timeout_ms * 1000;
}

void
reassign_leader_step(Broker *b, Part *p)
{
	if (p->state != PART_LEADER || !sync_node_replicas(b, p))
		return;
	if (!target_in_sync(p))
		return;
	if (int_in(b->cfg->broker_id, p->target, p->ntarget))
		complete(b, p);
	else
		hand_over(b, p);
}

/*
 * A follower's side: we are the first target replica, in the ISR, and the
 * leader leaves the replica set: run for leader whenever its lock is free
 * (whatever auto.leader.rebalance.enable says).
 */
bool
reassign_claims(Broker *b, const Part *p)
{
	int			me = b->cfg->broker_id;

	return p->ntarget > 0 && p->target[0] == me && int_in(me, p->isr, p->nisr) &&
		!int_in(p->leader, p->target, p->ntarget);
}
