/*-------------------------------------------------------------------------
 *
 * handover.c
 *	  Preferred leaders.  The first replica of a partition's placement is
 *	  its preferred leader: create_topic spreads preferred leaders over the
 *	  brokers, so leadership (and produce load) spreads with them.
 *
 * After a failover leadership sits elsewhere; once the preferred replica
 * has been back in the ISR for auto.leader.rebalance.delay.ms, the leader
 * hands it over (Kafka's auto.leader.rebalance.enable): it resigns on its
 * node and gives up the partition's lock (event handed_over), and the
 * preferred replica, which tries that lock every tick while it is in the
 * ISR and not leading, wins the election.  Only records beyond the
 * preferred replica's log end are cut from the old leader, and those were
 * never acknowledged with acks=all (the high watermark is the minimum
 * over the ISR, which holds the preferred one).  An election asked for
 * through the coordinator (Kafka's ElectLeaders, mq_coord.elect_preferred)
 * hands over at the next tick, without the delay and even with
 * auto.leader.rebalance.enable off.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include "broker.h"
#include "calls.h"
#include "util.h"

int
preferred_leader(const Part *p)
{
	return p->nreplicas > 0 ? p->replicas[0] : -1;
}

/* Is the preferred replica (not us) alive and in the ISR? */
bool
preferred_ready(Broker *b, const Part *p)
{
	int			pref = preferred_leader(p);

	return pref >= 0 && pref != b->cfg->broker_id &&
		int_in(pref, p->isr, p->nisr) && broker_is_live(b, pref);
}

/* The leader's side: hand leadership to the preferred replica when due. */
void
maybe_hand_over(Broker *b, Part *p)
{
	MqError		err = MQ_ERROR_INIT;
	int64_t		now = mq_now_us();
	int			epoch = p->applied_epoch;

	if ((!b->cfg->auto_rebalance && !p->elect_preferred) || !preferred_ready(b, p))
	{
		p->preferred_ready_since_us = 0;
		return;
	}
	/* counted from within this leadership: an older one's start is stale */
	if (p->preferred_ready_since_us == 0 || p->preferred_ready_epoch != epoch)
	{
		p->preferred_ready_since_us = now;
		p->preferred_ready_epoch = epoch;
	}
	if (!p->elect_preferred &&
		now - p->preferred_ready_since_us < (int64_t) b->cfg->rebalance_delay_ms * 1000)
		return;

	/* resign in our epoch: produce is refused and acks=all waiters fail over */
	if (!node_become_follower(b, p, epoch, -1, NULL, &err))
	{
		log_mq_error("cannot resign to hand leadership to the preferred replica", &err);
		mq_error_free(&err);
		return;
	}
	if (p->elect_preferred)
		mq_log_info("%s: an election of the preferred leader, broker %d, was asked for; "
					"resigned epoch %d and released the leadership for it", part_label(p),
					preferred_leader(p), epoch);
	else
		mq_log_info("%s: the preferred leader, broker %d, has been in the ISR for %d ms; "
					"resigned epoch %d and released the leadership for it", part_label(p),
					preferred_leader(p), b->cfg->rebalance_delay_ms, epoch);
	p->preferred_ready_since_us = 0;
	b->stats.handovers++;
	fsm_fire(b, p, EV_HANDED_OVER);
	/* do not take it straight back: give the preferred replica its chance */
	p->hold_off_until_us = now + (int64_t) b->cfg->session_timeout_ms * 1000;
}
