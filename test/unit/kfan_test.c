/*
 * kfan_test.c: mq-kafka's fan of one request's statements over pools
 * (kfan.c) without PostgreSQL or a loop: one job per pool whatever the
 * cluster's size (a fixed 16 refused CreatePartitions, AlterConfigs and
 * DescribeConfigs naming topics on more nodes), the same job for the same
 * pool, every job started once, and done once all are back, also when a
 * pool answers at once.
 */
#include <stdlib.h>

#include "kfan.h"
#include "unit.h"

#define POOLS 40

static char pools[POOLS];		/* their addresses are the pools */
static int	started[POOLS];
static KRequest *held[POOLS];	/* started, not answered yet */
static KDoneFn held_done[POOLS];
static int	dones = 0;
static bool answer_at_once = false;

void
pool_run_on(KPool *p, KRequest *req, struct KJob *job, KDoneFn done_fn)
{
	int			i = (int) ((char *) p - pools);

	(void) job;
	started[i]++;
	held[i] = req;
	held_done[i] = done_fn;
	if (answer_at_once)
		done_fn(req);
}

static void
done(KRequest *req)
{
	(void) req;
	dones++;
}

static KPool *
pool(int i)
{
	return (KPool *) &pools[i];
}

int
main(void)
{
	KFan		f = {0};
	KRequest	req = {0};
	KJob	   *jobs[POOLS];
	bool		distinct = true;
	bool		again = true;
	bool		once = true;

	for (int i = 0; i < POOLS; i++)
		jobs[i] = kfan_job(&f, pool(i));
	for (int i = 0; i < POOLS; i++)
		for (int j = 0; j < i; j++)
			distinct &= jobs[i] != NULL && jobs[i] != jobs[j];
	CHECK(f.n == POOLS && distinct, "a job of its own for each of %d pools", POOLS);
	for (int i = 0; i < POOLS; i++)
		again &= kfan_job(&f, pool(i)) == jobs[i];
	CHECK(again && f.n == POOLS, "asked again, a pool's job is the same one");

	kfan_run(&f, &req, done);
	for (int i = 0; i < POOLS; i++)
		once &= started[i] == 1;
	CHECK(once, "each job is started once");
	for (int i = 0; i < POOLS - 1; i++)
		held_done[i](held[i]);
	CHECK(dones == 0, "not done while one job is out");
	held_done[POOLS - 1](held[POOLS - 1]);
	CHECK(dones == 1, "done once all are back");
	kfan_free(&f);
	CHECK(f.n == 0 && f.routes == NULL, "freed");

	answer_at_once = true;
	dones = 0;
	for (int i = 0; i < POOLS; i++)
		(void) kfan_job(&f, pool(i));
	kfan_run(&f, &req, done);
	CHECK(dones == 1, "pools that answer at once: done once, after all started");
	kfan_free(&f);
	return unit_done();
}
