/*-------------------------------------------------------------------------
 *
 * step.c
 *	  The control tick (every tick.ms): make sure both connections are up,
 *	  read the assignments, and move each partition one step: pick the
 *	  tick event that says what the coordinator's view is (it names us
 *	  leader, names another live broker, or nobody live leads) and let the
 *	  transition table (fsm.c) choose the action.  The actions of the table
 *	  live here too: the tick's work per state, and the tidying up on
 *	  entering NONE; and the events a lost or new connection fires.
 *
 * Layer: the dispatcher, above the handlers it calls (elect.c, isr.c,
 * handover.c, reassign.c, follower.c, ...) and above liveness.c and
 * session.c; only loop.c and main.c stand above it.  The table's actions
 * reach fsm.c, below, as broker_fsm_actions, which main.c hands down in
 * Broker.hooks with broker_node_lost_roles and broker_coord_lost_roles
 * (what session.c calls when a connection is lost).
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "broker.h"
#include "calls.h"
#include "placement.h"
#include "util.h"

static FsmEvent
tick_event(Broker *b, const Part *p)
{
	if (p->leader == b->cfg->broker_id)
		return EV_NAMED_ME;
	if (p->leader < 0 || !broker_is_live(b, p->leader))
		return EV_LEADERLESS;
	return EV_NAMED_OTHER;
}

/* ---------------------------------------------------------------------
 * Tick actions
 * --------------------------------------------------------------------- */

/* Named leader but not leading (yet): run, unless we just handed it over. */
static void
act_claim(Broker *b, Part *p)
{
	if (mq_now_us() >= p->hold_off_until_us || !preferred_ready(b, p))
		try_elect(b, p);		/* e.g. restarted: re-elect to bump the epoch */
}

/*
 * Leading: the leader's duties, or a re-election when our epoch is stale.
 * Back from a coordinator outage that nobody used to elect another leader,
 * the lock is taken back and the epoch kept.
 */
static void
act_lead(Broker *b, Part *p)
{
	if (p->applied_epoch == p->leader_epoch && !p->lock_held && take_lock(b, p))
		mq_log_info("%s: leadership lock taken back; still leading epoch %d",
					part_label(p), p->applied_epoch);
	if (p->applied_epoch != p->leader_epoch || !p->lock_held)
	{
		act_claim(b, p);
		return;
	}
	leader_duties(b, p);
	if (p->state == PART_LEADER)
		reassign_leader_step(b, p);
	if (p->state == PART_LEADER)
		maybe_hand_over(b, p);
}

/* We lead, but the coordinator says otherwise: resign, then act as a replica. */
static void
act_step_down(Broker *b, Part *p)
{
	mq_log_warning("%s: the coordinator names broker %d leader in epoch %d; "
				   "we led epoch %d: becoming a follower", part_label(p), p->leader,
				   p->leader_epoch, p->applied_epoch);
	if (fsm_fire(b, p, EV_DEPOSED))
		fsm_fire(b, p, tick_event(b, p));
}

/* A follower's step, then its fetch (fetch_session.c) once it may fetch. */
static void
follow(Broker *b, Part *p)
{
	if (follower_step(b, p))
		fetch_session_want(b, p);
}

/* Another live broker leads: follow it, unless we are its preferred leader. */
static void
act_replicate(Broker *b, Part *p)
{
	int			me = b->cfg->broker_id;

	p->leaderless_since_us = 0;
	/* the preferred replica, back in the ISR, takes the lock when it is let go */
	if (((b->cfg->auto_rebalance || p->elect_preferred) && preferred_leader(p) == me &&
		 int_in(me, p->isr, p->nisr)) ||
		reassign_claims(b, p))
	{
		try_elect(b, p);
		if (p->state == PART_LEADER)
			return;
	}
	follow(b, p);
}

/*
 * Nobody live leads.  When the preferred replica is alive and in the ISR
 * it runs for the election this tick: the others give it an idle period
 * and two ticks (it may see the partition an idle tick after us, tick.c),
 * and at least session.timeout.ms, as long as they would wait for a
 * broker that stopped, so that leadership starts (and returns) where
 * placement wants it without a second change later: a busy preferred
 * replica electing itself for one partition after another used to lose
 * the last ones to a broker that had waited only the ticks, and took them
 * back auto.leader.rebalance.delay.ms later, a NOT_LEADER for every
 * client writing to them (kafka-python's default retries=0 fails those
 * sends).  Right after we (re)took our liveness lock, a named
 * leader that is not live may only be slower to come back from the same
 * coordinator outage (it serves on meanwhile): it gets session.timeout.ms
 * to take its lock back before anyone runs against it.
 */
static void
act_leaderless(Broker *b, Part *p)
{
	int			me = b->cfg->broker_id;
	int64_t		now = mq_now_us();
	bool		grace = p->leader >= 0 && p->leader != me &&
		now - b->live_since_us < (int64_t) b->cfg->session_timeout_ms * 1000;
	int64_t		left_to_preferred_ms = broker_idle_tick_ms(b) + 2 * b->cfg->tick_ms;

	if (left_to_preferred_ms < b->cfg->session_timeout_ms)
		left_to_preferred_ms = b->cfg->session_timeout_ms;
	if (p->leaderless_since_us == 0)
		p->leaderless_since_us = now;
	if (!grace && (int_in(me, p->isr, p->nisr) || p->unclean) &&
		(preferred_leader(p) == me || !preferred_ready(b, p) ||
		 now - p->leaderless_since_us > left_to_preferred_ms * 1000))
		try_elect(b, p);
	if (p->state == PART_LEADER)
		return;
	/* a leader whose broker is not live: keep trying it until one is elected */
	if (p->leader >= 0 && p->leader != me)
		follow(b, p);
}

/* ---------------------------------------------------------------------
 * Outcome actions: tidying up on entering NONE
 * --------------------------------------------------------------------- */

/* Deposed or handed over: the epoch is no longer ours, nor the lock. */
static void
act_resign(Broker *b, Part *p)
{
	p->applied_epoch = -1;
	release_lock(b, p);
}

static void
act_forget_epoch(Broker *b, Part *p)
{
	p->applied_epoch = -1;
}

/* The node is gone or new: no fetch, no epoch, no leadership lock. */
static void
act_drop_role(Broker *b, Part *p)
{
	follower_stop(p);
	p->applied_epoch = -1;
	release_lock(b, p);
}

/* The coordinator is gone: the locks went with its session. */
static void
act_drop_role_keep_locks(Broker *b, Part *p)
{
	follower_stop(p);
	p->applied_epoch = -1;
	p->lock_held = false;
}

/*
 * The coordinator is gone but the node is not: a leader keeps serving and
 * a follower keeps fetching in the epoch they have (docs/replication.md,
 * "Serving without the coordinator"); only the lock went with the session.
 */
static void
act_keep_role_lose_locks(Broker *b, Part *p)
{
	p->lock_held = false;
}

static void
act_stop_fetching(Broker *b, Part *p)
{
	follower_stop(p);
}

/* The table's actions, by id, handed down to fsm.c (Broker.hooks). */
#define FSM_ACTION_FN(fn) [FSM_##fn] = fn,
const FsmAction broker_fsm_actions[FSM_NACTIONS] = {
	FSM_ACTIONS(FSM_ACTION_FN)
};

/* ---------------------------------------------------------------------
 * A lost or new connection (session.c and liveness.c report; we fire)
 * --------------------------------------------------------------------- */

static void
drop_roles(Broker *b, FsmEvent why)
{
	for (Part *p = b->parts; p; p = p->next)
		fsm_fire(b, p, why);
}

static int
count_leaders(Broker *b)
{
	int			led = 0;

	for (Part *p = b->parts; p; p = p->next)
		led += (p->state == PART_LEADER);
	return led;
}

/* hooks.node_lost: leadership and liveness go, others elect and shrink us out. */
void
broker_node_lost_roles(Broker *b)
{
	int			led = count_leaders(b);

	drop_roles(b, EV_NODE_LOST);
	liveness_give_up(b);
	mq_log_warning("gave up leadership of %d partition(s) and liveness; "
				   "reconnecting to the node in %d ms", led, b->node_retry.last_ms);
}

/* hooks.coord_lost: serve on in our epochs; the locks went with the session. */
void
broker_coord_lost_roles(Broker *b, int pause_ms)
{
	int			led = count_leaders(b);

	drop_roles(b, EV_COORD_LOST);
	mq_log_warning("serving %d leadership(s) on in their epochs without the coordinator "
				   "(a new election fences them on the data nodes); reconnecting in %d ms",
				   led, pause_ms);
}

/*
 * A new node session (liveness.c): settle the prepared transactions the
 * coordinator has decided before resigning (liveness.c, node_session_open
 * says why), then attach; the node leads nothing now.
 */
static void
ensure_node(Broker *b)
{
	if (!node_session_open(b))
		return;
	recover_prepared(b);
	if (b->node == NULL)
		return;
	if (node_session_attach(b))
		drop_roles(b, EV_NODE_ATTACHED);
}

/* ---------------------------------------------------------------------
 * The tick
 * --------------------------------------------------------------------- */

static void
step(Broker *b, Part *p)
{
	if (b->node == NULL || b->coord == NULL || !b->live)
		return;
	if (!ensure_topic(b, p))
		return;
	fsm_fire(b, p, tick_event(b, p));
}

/*
 * The node leads on our word only while our lease there lasts (leadership.c):
 * renewed every tick, and while a coordinator statement is waited for
 * (loop.c), for session.timeout.ms, the time after which another broker may
 * be elected in our place.
 */
void
broker_renew_lease(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (b->node != NULL && !node_renew_lease(b, &err))
	{
		log_mq_error("cannot renew the broker's lease on its node", &err);
		mq_error_free(&err);
	}
}

void
broker_tick(Broker *b)
{
	ensure_node(b);
	broker_renew_lease(b);
	ensure_coordinator(b);
	if (b->node != NULL && (b->coord == NULL || !b->live))
	{
		/* serving without the coordinator: leaders keep their watermark moving */
		leaders_refresh(b, true);
		return;
	}
	if (b->node == NULL || b->coord == NULL || !b->live)
		return;
	supply_producer_ids(b);		/* before the node leads anything */
	recover_prepared(b);		/* before a role change waits on a prepared one */
	if (b->node == NULL || b->coord == NULL)
		return;
	if (!read_assignments(b))
		return;
	leaders_read_states(b);
	for (Part *p = b->parts; p; p = p->next)
		step(b, p);
	fetch_sessions_tidy(b);
	follower_conns_tidy(b);
}

/* SIGTERM: resign every leadership on the node, then leave. */
void
broker_shutdown(Broker *b)
{
	int			n = 0;

	for (Part *p = b->parts; p; p = p->next)
	{
		n += (p->state == PART_LEADER);
		fsm_fire(b, p, EV_SHUTDOWN);
	}
	if (b->node)
	{
		MqError		err = MQ_ERROR_INIT;
		int			resigned;

		(void) node_resign_all(b, &resigned, &err);
		mq_error_free(&err);
	}
	if (b->coord_job)
		mq_connect_abandon(b->coord_job);	/* its thread closes what it connects */
	b->coord_job = NULL;
	if (b->coord)
		PQfinish(b->coord);		/* our locks go with the session */
	if (b->node)
		PQfinish(b->node);
	b->coord = b->node = NULL;
	fetch_sessions_free(b);
	follower_conns_free(b);
	while (b->parts)
	{
		Part	   *p = b->parts;

		b->parts = p->next;
		free_part(p);
	}
	placement_free(b);
	mq_log_info("shut down: resigned %d leadership(s) and released every lock", n);
}
