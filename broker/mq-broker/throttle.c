/*-------------------------------------------------------------------------
 *
 * throttle.c
 *	  The reassignment throttle's budgets, Kafka's --throttle on both
 *	  sides (docs/replication.md, "Placement and reassignment";
 *	  docs/design.md, "The reassignment throttle on both sides").
 *
 * A throttled copy is a replica of a moving partition whose move has a
 * throttle, that is not its leader and not in its ISR: a new replica
 * catching up (or one that fell behind during the move).  Per broker, the
 * copies it serves as leader share one budget and the copies it receives
 * as a follower share another: each budget is the smallest throttle among
 * the moves of those copies, split evenly between them.  A copy copies at
 * the smaller of its two shares, so the copies one leader serves sum to at
 * most its budget, and so do the copies one broker receives.  One move of
 * one new replica gets its throttle, as before the leader's side counted.
 *
 * The leader's broker is not in the data path (followers pull from the
 * leader's node), so every follower broker works out the leader's share
 * itself from the moves it reads on the coordinator each tick
 * (mq_coord.moving returns the moves led by the leaders of its copies).
 *
 * Pure computation: no I/O, unit-tested in test/unit/throttle_test.c.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "placement.h"
#include "util.h"

/* A replica of m copying under the throttle? */
bool
throttle_is_copy(const Moving *m, int replica)
{
	return m->throttle_bytes > 0 && m->leader >= 0 && replica != m->leader &&
		int_in(replica, m->replicas, m->nreplicas) && !int_in(replica, m->isr, m->nisr);
}

static ThrottleLoad *
load_of(Throttles *t, int broker)
{
	for (int i = 0; i < t->n; i++)
		if (t->load[i].broker == broker)
			return &t->load[i];
	if (t->n == t->cap)
	{
		t->cap = t->cap ? t->cap * 2 : 8;
		t->load = mq_realloc(t->load, sizeof(ThrottleLoad) * t->cap);
	}
	t->load[t->n] = (ThrottleLoad)
	{
		.broker = broker
	};
	return &t->load[t->n++];
}

static void
charge(int *count, int64_t *budget, int64_t throttle)
{
	if (*count == 0 || throttle < *budget)
		*budget = throttle;
	(*count)++;
}

/* Count m's throttled copies against their leader and their followers. */
void
throttles_add(Throttles *t, const Moving *m)
{
	for (int i = 0; i < m->nreplicas; i++)
	{
		ThrottleLoad *l;

		if (!throttle_is_copy(m, m->replicas[i]))
			continue;
		l = load_of(t, m->leader);
		charge(&l->served, &l->served_budget, m->throttle_bytes);
		l = load_of(t, m->replicas[i]);
		charge(&l->received, &l->received_budget, m->throttle_bytes);
	}
}

/* The load of a broker, NULL when it serves and receives no throttled copy. */
const ThrottleLoad *
throttles_load(const Throttles *t, int broker)
{
	for (int i = 0; i < t->n; i++)
		if (t->load[i].broker == broker)
			return &t->load[i];
	return NULL;
}

/*
 * Bytes per second the replica on broker replica may copy of m: 0 when it
 * is not a throttled copy (no limit), else the smaller of its leader's
 * and its own broker's share, at least 1 (t must count m).
 */
int64_t
throttle_rate(const Throttles *t, const Moving *m, int replica)
{
	const ThrottleLoad *l,
			   *f;
	int64_t		rate;

	if (!throttle_is_copy(m, replica))
		return 0;
	l = throttles_load(t, m->leader);
	f = throttles_load(t, replica);
	if (l == NULL || f == NULL || l->served == 0 || f->received == 0)
		return m->throttle_bytes;	/* not counted: only its own throttle */
	rate = l->served_budget / l->served;
	if (f->received_budget / f->received < rate)
		rate = f->received_budget / f->received;
	return rate > 0 ? rate : 1;
}

void
throttles_free(Throttles *t)
{
	free(t->load);
	t->load = NULL;
	t->n = t->cap = 0;
}
