/*
 * throttle_test.c: the reassignment throttle's budgets (throttle.c)
 * without PostgreSQL: the throttled copies one leader serves share its
 * budget, the ones one broker receives share that broker's, each budget
 * being the smallest throttle among those moves; one move of one new
 * replica copies at its throttle; a replica that is not a throttled copy
 * (no move, no throttle, in the ISR, the leader) is not limited.  Then
 * the sums, over many made-up sets of moves.
 */
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "unit.h"
#include "broker_stubs.h"

#define NMOVES 16

static Moving moves[NMOVES];
static int	nmoves;

/* A move led by leader over replicas (target, then leaving), ISR isr. */
static Moving *
move(int64_t throttle, int leader, const char *replicas, const char *isr)
{
	Moving	   *m = &moves[nmoves++];

	memset(m, 0, sizeof(*m));
	m->partition = nmoves - 1;
	m->throttle_bytes = throttle;
	m->leader = leader;
	for (const char *c = replicas; *c; c++)
		m->replicas[m->nreplicas++] = *c - '0';
	for (const char *c = isr; *c; c++)
		m->isr[m->nisr++] = *c - '0';
	return m;
}

static void
count(Throttles *t)
{
	throttles_free(t);
	for (int i = 0; i < nmoves; i++)
		throttles_add(t, &moves[i]);
}

static void
reset(Throttles *t)
{
	throttles_free(t);
	nmoves = 0;
}

/* For every broker: what the copies it serves, and receives, sum to. */
static bool
sums_hold(const Throttles *t, int nbrokers)
{
	for (int b = 0; b < nbrokers; b++)
	{
		int64_t		out = 0,
					in = 0,
					out_budget = INT64_MAX,
					in_budget = INT64_MAX;

		for (int i = 0; i < nmoves; i++)
			for (int r = 0; r < moves[i].nreplicas; r++)
			{
				int64_t		rate = throttle_rate(t, &moves[i], moves[i].replicas[r]);

				if (rate == 0)
					continue;
				if (rate > moves[i].throttle_bytes)
					return false;	/* never above its own move's throttle */
				if (moves[i].leader == b)
				{
					out += rate;
					out_budget = moves[i].throttle_bytes < out_budget ? moves[i].throttle_bytes : out_budget;
				}
				if (moves[i].replicas[r] == b)
				{
					in += rate;
					in_budget = moves[i].throttle_bytes < in_budget ? moves[i].throttle_bytes : in_budget;
				}
			}
		if ((out > 0 && out > out_budget) || (in > 0 && in > in_budget))
			return false;
	}
	return true;
}

int
main(void)
{
	Throttles	t = {0};
	Moving	   *a,
			   *b,
			   *c,
			   *d;
	const ThrottleLoad *l;
	unsigned int seed = 12345;
	bool		all_hold = true;

	/* one move, one new replica: its throttle (the follower-side rule of before) */
	a = move(1000, 1, "312", "12");
	count(&t);
	CHECK(throttle_rate(&t, a, 3) == 1000, "a lone new replica copies at its move's throttle");
	CHECK(throttle_rate(&t, a, 1) == 0, "the leader is not a throttled copy");
	CHECK(throttle_rate(&t, a, 2) == 0, "nor is a replica in the ISR (one leaving)");
	CHECK(throttle_rate(&t, a, 5) == 0, "nor a broker that is not a replica");
	reset(&t);

	/* N = 3 copies served by leader 1, each to another broker: they share R */
	a = move(3000, 1, "21", "1");
	b = move(3000, 1, "31", "1");
	c = move(3000, 1, "41", "1");
	count(&t);
	l = throttles_load(&t, 1);
	CHECK(l && l->served == 3 && l->served_budget == 3000 && l->received == 0,
		  "leader 1 serves three throttled copies, budget 3000");
	CHECK(throttle_rate(&t, a, 2) == 1000 && throttle_rate(&t, b, 3) == 1000 &&
		  throttle_rate(&t, c, 4) == 1000, "three copies from one leader: R/3 each, R in all");
	reset(&t);

	/* M = 2 copies received by broker 3, from two leaders: they share R */
	a = move(2000, 1, "31", "1");
	b = move(2000, 2, "32", "2");
	count(&t);
	CHECK(throttle_rate(&t, a, 3) == 1000 && throttle_rate(&t, b, 3) == 1000,
		  "two copies received by one broker: R/2 each, R in all");
	reset(&t);

	/* both sides at once: leader 1 serves 2, broker 3 receives 3 */
	a = move(6000, 1, "31", "1");
	b = move(6000, 1, "41", "1");
	c = move(6000, 2, "32", "2");
	d = move(6000, 4, "34", "4");
	count(&t);
	CHECK(throttle_rate(&t, a, 3) == 2000, "the smaller share wins: min(6000/2, 6000/3)");
	CHECK(throttle_rate(&t, b, 4) == 3000, "the other copy of leader 1 takes half of its budget");
	CHECK(throttle_rate(&t, c, 3) == 2000 && throttle_rate(&t, d, 3) == 2000,
		  "broker 3's other copies get a third of its budget");
	reset(&t);

	/* different throttles: the smallest among the moves involved */
	a = move(1000, 1, "21", "1");
	b = move(4000, 1, "31", "1");
	count(&t);
	CHECK(throttle_rate(&t, a, 2) == 500 && throttle_rate(&t, b, 3) == 500,
		  "moves of throttles 1000 and 4000 from one leader: 1000 shared, 500 each");
	reset(&t);

	/* a move without a throttle is neither limited nor counted */
	a = move(0, 1, "21", "1");
	b = move(1000, 1, "31", "1");
	count(&t);
	CHECK(throttle_rate(&t, a, 2) == 0, "a copy of an unthrottled move is not limited");
	CHECK(throttle_rate(&t, b, 3) == 1000, "and does not count against the leader's budget");
	reset(&t);

	/* no leader: nothing is copied, nothing counted */
	a = move(1000, -1, "21", "1");
	count(&t);
	CHECK(throttle_rate(&t, a, 2) == 0 && throttles_load(&t, 2) == NULL,
		  "a leaderless move has no throttled copy");
	reset(&t);

	/* a budget smaller than its copies: 1 byte/s each, never 0 (no limit) */
	a = move(2, 1, "21", "1");
	b = move(2, 1, "31", "1");
	c = move(2, 1, "41", "1");
	count(&t);
	CHECK(throttle_rate(&t, c, 4) == 1, "a share below 1 byte/s is 1 byte/s, not unlimited");
	reset(&t);

	/* the sums, over made-up sets of moves among 6 brokers */
	for (int round = 0; round < 2000; round++)
	{
		int			n = 1 + rand_r(&seed) % NMOVES;

		for (int i = 0; i < n; i++)
		{
			char		reps[7] = {0},
						isr[7] = {0};
			int			nr = 1 + rand_r(&seed) % 4,
						ni = 0,
						leader;

			for (int k = 0; k < nr; k++)
			{
				char		r;

				do
					r = '0' + rand_r(&seed) % 6;
				while (strchr(reps, r));
				reps[k] = r;
			}
			leader = rand_r(&seed) % 5 == 0 ? -1 : reps[rand_r(&seed) % nr] - '0';
			for (int k = 0; k < nr; k++)
				if (reps[k] - '0' == leader || rand_r(&seed) % 3 == 0)
					isr[ni++] = reps[k];
			move(rand_r(&seed) % 4 == 0 ? 0 : 1 + rand_r(&seed) % 100000, leader, reps, isr);
		}
		count(&t);
		all_hold &= sums_hold(&t, 6);
		reset(&t);
	}
	CHECK(all_hold, "2000 made-up sets of moves: no broker serves or receives more than its budget, "
		  "no copy exceeds its own throttle");
	return unit_done();
}
