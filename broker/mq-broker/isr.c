/*-------------------------------------------------------------------------
 *
 * isr.c
 *	  A leader's duties each tick: read its followers' progress from the
 *	  node, shrink the ISR by replicas that fell behind or whose broker is
 *	  not live, and expand it by replicas that caught up.
 *
 * The tick first reads every led partition's state in one statement
 * (leaders_read_states); a partition whose high watermark would move, or
 * that the node no longer has us lead, is read alone (mq.replica_leader_state),
 * which advances the high watermark or refuses our epoch.
 *
 * Without the coordinator (leaders_refresh) no ISR change is possible, but
 * the leaders still read their followers' progress every tick: that call
 * advances the node's high watermark, which nothing else does for a leader
 * alone in its ISR (min.insync.replicas 1: no follower fetch counts).
 * While the broker waits for a coordinator statement (loop.c) it does the
 * same every tick.ms, leaving a refusal to the next tick: resigning would
 * need the coordinator.
 *
 * Shrinking changes the coordinator first, then the node; expanding the
 * node first (the node's ISR is then the larger one, so the high
 * watermark never counts a replica the coordinator would not elect), then,
 * in a later tick, the coordinator (may_join_node says why).  A
 * coordinator that refuses the change for our epoch means we were
 * deposed: the partition takes the event deposed.
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

static bool
set_local_isr(Broker *b, Part *p, const int *isr, int n)
{
	MqError		err = MQ_ERROR_INIT;

	if (!node_set_isr(b, p, isr, n, &err))
	{
		/* a joining replica has not caught up after all: next tick */
		if (mq_error_is(&err, MQ_SQLSTATE_REPLICA_NOT_CAUGHT_UP))
			mq_log_info("%s: %s", part_label(p), err.message);
		else
			log_mq_error("cannot set the ISR on the node", &err);
		mq_error_free(&err);
		return false;
	}
	return true;
}

static bool
set_coordinator_isr(Broker *b, Part *p, const int *isr, int n)
{
	MqError		err = MQ_ERROR_INIT;
	bool		accepted;

	if (!coord_alter_isr(b, p, isr, n, &accepted, &err))
	{
		log_mq_error("cannot change the ISR on the coordinator", &err);
		mq_error_free(&err);
		return false;
	}
	if (!accepted)
	{
		mq_log_warning("%s: the coordinator refused an ISR change for epoch %d: we were deposed; "
					   "resigning", part_label(p), p->applied_epoch);
		fsm_fire(b, p, EV_DEPOSED);
		return false;
	}
	memcpy(p->isr, isr, sizeof(int) * n);
	p->nisr = n;
	return true;
}

/* Should an ISR member leave it?  The reason, or NULL. */
static const char *
why_shrink(Broker *b, const ReplicaProgress *r)
{
	/*
	 * Right after we (re)took our liveness lock, a broker that is not live
	 * may only be slower to come back from the same coordinator outage
	 * (act_leaderless gives leaders the same grace): it keeps its place
	 * for session.timeout.ms unless it falls behind.
	 */
	bool		settling = mq_now_us() - b->live_since_us < (int64_t) b->cfg->session_timeout_ms * 1000;

	if (!broker_is_live(b, r->id) && !settling)
		return "its broker is not live";
	if (r->lag_ms > b->cfg->lag_time_max_ms)
		return "it has not caught up within replica.lag.time.max.ms";
	if (b->cfg->lag_max_messages > 0 && r->leader_log_end - r->log_end > b->cfg->lag_max_messages)
		return "it lags more than replica.lag.max.messages";
	return NULL;
}

/*
 * Joining takes two ticks, as Kafka's maximal ISR: a follower that reached
 * the log end recently joins the node's ISR (the high watermark then waits
 * for it); a later read that shows it there holding the high watermark adds
 * it to the coordinator's ISR, which elections use.  From its first tick in
 * the node's ISR the high watermark cannot pass its log end, so once it
 * holds the high watermark it holds everything acknowledged.  Asking it to
 * hold the high watermark in the tick that adds it would race the ISR's
 * fetches: under steady load the high watermark is always a batch past a
 * follower that fetches a little later, and it never joined.
 */
static bool
may_join_node(Broker *b, const ReplicaProgress *r)
{
	return broker_is_live(b, r->id) && r->caught_up && r->log_end >= 0 &&
		r->log_end >= r->epoch_start && r->lag_ms <= b->cfg->lag_time_max_ms;
}

static bool
may_join_coordinator(const Part *p, const ReplicaProgress *r)
{
	return r->in_isr && !int_in(r->id, p->isr, p->nisr) && r->caught_up &&
		r->log_end >= r->high_watermark;
}

/* Remember what metrics.c reports. */
static void
note_progress(Part *p, const ReplicaProgress *r)
{
	p->m_log_end = r->leader_log_end;
	p->m_hwm = r->high_watermark;
	if (p->nfollowers < MAX_REPLICAS)
	{
		p->followers[p->nfollowers].id = r->id;
		p->followers[p->nfollowers].in_isr = r->in_isr;
		p->followers[p->nfollowers].log_end = r->log_end;
		p->followers[p->nfollowers].lag_ms = r->lag_ms;
		p->nfollowers++;
	}
}

/* The ISRs a tick decided on: the node's and the coordinator's. */
typedef struct IsrChange
{
	int			node[MAX_REPLICAS];
	int			nnode;
	int			coord[MAX_REPLICAS];
	int			ncoord;
	int			nshrink;
	int			grow[MAX_REPLICAS];
	int			ngrow;
	int			promote[MAX_REPLICAS];
	int			npromote;
} IsrChange;

/* The node's ISR changed: metrics.c reports the followers' new places. */
static void
note_node_isr(Part *p, const int *isr, int n)
{
	for (int i = 0; i < p->nfollowers; i++)
		p->followers[i].in_isr = int_in(p->followers[i].id, isr, n);
}

static void
log_isr(const Part *p, const char *where, const int *isr, int n)
{
	char		buf[128];

	mq_log_info("%s: ISR %s is now %s", part_label(p), where, int_array_text(isr, n, buf, sizeof(buf)));
}

/*
 * Shrink first (coordinator, then node), then grow the node's ISR, then
 * the coordinator's by the members that hold the high watermark.
 */
static void
change_isr(Broker *b, Part *p, IsrChange *c)
{
	if (c->nshrink > 0)
	{
		if (!set_coordinator_isr(b, p, c->coord, c->ncoord) || !set_local_isr(b, p, c->node, c->nnode))
			return;
		note_node_isr(p, c->node, c->nnode);
		b->stats.isr_shrinks++;
		log_isr(p, "on the node", c->node, c->nnode);
	}
	if (c->ngrow > 0)
	{
		memcpy(c->node + c->nnode, c->grow, sizeof(int) * c->ngrow);
		if (!set_local_isr(b, p, c->node, c->nnode + c->ngrow))
			return;
		note_node_isr(p, c->node, c->nnode + c->ngrow);
		log_isr(p, "on the node", c->node, c->nnode + c->ngrow);
	}
	if (c->npromote > 0)
	{
		memcpy(c->coord + c->ncoord, c->promote, sizeof(int) * c->npromote);
		if (!set_coordinator_isr(b, p, c->coord, c->ncoord + c->npromote))
			return;
		b->stats.isr_expands++;
		log_isr(p, "on the coordinator", c->coord, c->ncoord + c->npromote);
	}
}

/* One follower's part in this tick's ISR change. */
static void
decide_isr(Broker *b, Part *p, const ReplicaProgress *r, IsrChange *c)
{
	const char *why;

	if (r->in_isr && (why = why_shrink(b, r)) != NULL)
	{
		mq_log_warning("%s: removing replica %d from the ISR: %s (log end %lld, leader's %lld, "
					   "last caught up %lld ms ago)", part_label(p), r->id, why,
					   (long long) r->log_end, (long long) r->leader_log_end, (long long) r->lag_ms);
		c->nshrink++;
		return;
	}
	if (r->in_isr)
	{
		c->node[c->nnode++] = r->id;
		if (int_in(r->id, p->isr, p->nisr))
			c->coord[c->ncoord++] = r->id;
		else if (may_join_coordinator(p, r))
		{
			mq_log_info("%s: replica %d holds the high watermark %lld; adding it to the coordinator's ISR",
						part_label(p), r->id, (long long) r->high_watermark);
			c->promote[c->npromote++] = r->id;
		}
	}
	else if (may_join_node(b, r))
	{
		mq_log_info("%s: replica %d caught up (log end %lld, high watermark %lld); adding it to the ISR",
					part_label(p), r->id, (long long) r->log_end, (long long) r->high_watermark);
		c->grow[c->ngrow++] = r->id;
	}
}

/*
 * One statement for every partition this broker leads: the quiet ones (the
 * node leads them in our epoch, their high watermark would not move) are
 * answered at once and kept for this tick's read_progress; the others are
 * read one by one there, as before.  An idle broker leading hundreds of
 * partitions sends one statement a tick instead of one per partition
 * (docs/design.md, "One leader-state read per tick").
 */
void
leaders_read_states(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	Part	  **led;
	bool	   *quiet;
	int			n = 0;

	b->states_gen++;
	for (Part *p = b->parts; p; p = p->next)
		n += (p->state == PART_LEADER);
	if (n == 0 || b->node == NULL)
		return;
	led = mq_malloc(sizeof(Part *) * n);
	quiet = mq_malloc(sizeof(bool) * n);
	n = 0;
	for (Part *p = b->parts; p; p = p->next)
		if (p->state == PART_LEADER)
			led[n++] = p;
	if (node_leader_states(b, led, n, quiet, &err))
	{
		for (int k = 0; k < n; k++)
			if (quiet[k])
			{
				led[k]->states_gen = b->states_gen;
				led[k]->states_epoch = led[k]->applied_epoch;
			}
	}
	else
	{
		if (!err.connection_lost)
			log_mq_error("cannot read the leaders' state on the node", &err);
		mq_error_free(&err);
	}
	free(led);
	free(quiet);
}

/* This tick's state of p from leaders_read_states, once; -1: none */
static int
take_quiet_state(Broker *b, Part *p, ReplicaProgress *prog)
{
	if (p->states_gen == 0 || p->states_gen != b->states_gen ||
		p->states_epoch != p->applied_epoch)
		return -1;
	p->states_gen = 0;
	memcpy(prog, p->states, sizeof(ReplicaProgress) * p->nstates);
	return p->nstates;
}

/*
 * Read the followers' progress (which advances the high watermark) and
 * note it for metrics; -1 when the node no longer has us lead (after
 * resigning, if may_resign) or is unreachable.
 */
static int
read_progress(Broker *b, Part *p, ReplicaProgress *prog, bool may_resign)
{
	MqError		err = MQ_ERROR_INIT;
	int			nprog = take_quiet_state(b, p, prog);

	if (nprog < 0)
		nprog = node_leader_state(b, p, prog, MAX_REPLICAS - 1, &err);
	if (nprog < 0)
	{
		if (!err.connection_lost && may_resign)
		{
			log_mq_error("the node no longer leads as we think; resigning", &err);
			fsm_fire(b, p, EV_DEPOSED);
		}
		mq_error_free(&err);
		return -1;
	}
	p->nfollowers = 0;
	for (int i = 0; i < nprog; i++)
		note_progress(p, &prog[i]);
	return nprog;
}

void
leader_duties(Broker *b, Part *p)
{
	ReplicaProgress prog[MAX_REPLICAS];
	int			nprog = read_progress(b, p, prog, true);
	IsrChange	c = {0};

	if (nprog < 0)
		return;
	c.node[c.nnode++] = b->cfg->broker_id;
	c.coord[c.ncoord++] = b->cfg->broker_id;
	for (int i = 0; i < nprog; i++)
		decide_isr(b, p, &prog[i], &c);
	change_isr(b, p, &c);
}

/*
 * Without the coordinator, or while a coordinator statement is under way
 * (loop.c, may_resign false: the node says whether we still lead at the
 * next tick, where resigning can give the lock up), every leader reads its
 * progress (the high watermark moves) and changes nothing.
 */
void
leaders_refresh(Broker *b, bool may_resign)
{
	ReplicaProgress prog[MAX_REPLICAS];

	leaders_read_states(b);
	for (Part *p = b->parts; p; p = p->next)
		if (p->state == PART_LEADER)
			(void) read_progress(b, p, prog, may_resign);
}
