/*-------------------------------------------------------------------------
 *
 * tick.c
 *	  When the next control tick runs: tick.ms after the last one, or
 *	  tick.idle.ms after it while everything this broker serves is
 *	  steady.  An idle cluster's cost is its ticks (a heartbeat, the
 *	  assignments, the lease, each leader's progress: about nine
 *	  statements on the coordinator and the node); Kafka's brokers
 *	  heartbeat every two seconds (docs/design.md, "The idle tick").
 *
 * A steady broker sees a change others make (a new topic, a broker gone)
 * one idle tick later at most, and then ticks at tick.ms until it is
 * steady again; its own events (a fetch refused, the node lost) unsettle
 * it within tick.ms (loop.c asks again that often).  The idle period stays
 * at most a quarter of session.timeout.ms: a tick renews the lease and
 * heartbeats.
 *
 * Layer: a helper below loop.c and step.c (which gives a preferred
 * leader an idle period to run); it reads the broker's state, changes
 * nothing and calls only the lookups of assign.c and handover.c.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include "broker.h"
#include "fsm.h"
#include "util.h"

/*
 * Steady: a tick can find nothing to do for this partition but read its
 * progress.  Its preferred replica leads (unless rebalancing is off) with
 * the whole replica set in the ISR (a leader alone in its ISR moves its
 * high watermark only at the tick), nothing moves it, and this broker has
 * applied its role in the current epoch with nothing to retry.
 */
static bool
part_steady(Broker *b, const Part *p, int64_t now)
{
	int			me = b->cfg->broker_id;

	if (p->leader < 0 || p->ntarget > 0 || p->nreplicas < 2 || p->nisr != p->nreplicas ||
		p->applied_epoch != p->leader_epoch || p->backoff_until_us > now ||
		(b->cfg->auto_rebalance && p->leader != preferred_leader(p)))
		return false;
	if (p->leader == me)
		return p->state == PART_LEADER && p->lock_held;
	return p->state == PART_FOLLOWER_FETCH && broker_is_live(b, p->leader);
}

/*
 * The idle period: tick.idle.ms, at most a quarter of session.timeout.ms,
 * not below tick.ms.  Another broker that is steady sees a change up to
 * this long after us (step.c gives a preferred leader that long to run).
 */
int
broker_idle_tick_ms(const Broker *b)
{
	int			ms = b->cfg->tick_idle_ms;

	if (ms > b->cfg->session_timeout_ms / 4)
		ms = b->cfg->session_timeout_ms / 4;
	return ms < b->cfg->tick_ms ? b->cfg->tick_ms : ms;
}

/*
 * When the tick that started at start_us is followed by the next: steady
 * is both connections up, recovery with nothing to do and every
 * partition steady.
 */
int64_t
broker_next_tick_us(Broker *b, int64_t start_us)
{
	int64_t		now = mq_now_us();
	int			ms = b->cfg->tick_ms;
	bool		steady = b->node != NULL && b->coord != NULL && b->live &&
		!b->coord_busy && !b->recovery_pending;

	for (Part *p = b->parts; p && steady; p = p->next)
		steady = part_steady(b, p, now);
	if (steady)
		ms = broker_idle_tick_ms(b);
	return start_us + (int64_t) ms * 1000;
}
