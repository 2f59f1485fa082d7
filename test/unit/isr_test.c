/*
 * isr_test.c: a leader's ISR decisions (isr.c) without PostgreSQL, the node
 * and coordinator calls stubbed: a follower joins in two steps (the node's
 * ISR once it caught up, the coordinator's once a later read shows it
 * there holding the high watermark), and a member whose broker is not live
 * is removed, but not in the session.timeout.ms after this broker took its
 * liveness lock back (the others may be returning from the same
 * coordinator outage).  The tick's one read of every led partition
 * (leaders_read_states) answers a quiet partition once, in its epoch.
 */
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "fsm.h"
#include "util.h"
#include "unit.h"
#include "broker_stubs.h"

static ReplicaProgress progress[2];
static int	node_isr[MAX_REPLICAS],
			nnode_isr = -1;
static int	coord_isr[MAX_REPLICAS],
			ncoord_isr = -1;
static int	live[MAX_REPLICAS],
			nlive;

bool
broker_is_live(Broker *b, int id)
{
	(void) b;
	return int_in(id, live, nlive);
}

const char *
int_array_text(const int *a, int n, char *buf, size_t size)
{
	(void) a;
	(void) n;
	snprintf(buf, size, "{...}");
	return buf;
}

static int	single_reads;
static bool batch_quiet;		/* what the next batch says of the partition */

int
node_leader_state(Broker *b, const Part *p, ReplicaProgress *out, int max, MqError *err)
{
	(void) b;
	(void) p;
	(void) max;
	(void) err;
	single_reads++;
	memcpy(out, progress, sizeof(progress));
	return 2;
}

bool
node_leader_states(Broker *b, Part *const *parts, int n, bool *quiet, MqError *err)
{
	(void) b;
	(void) err;
	for (int k = 0; k < n; k++)
	{
		quiet[k] = batch_quiet;
		parts[k]->nstates = 0;
		if (batch_quiet)
		{
			memcpy(parts[k]->states, progress, sizeof(progress));
			parts[k]->nstates = 2;
		}
	}
	return true;
}

bool
node_set_isr(Broker *b, const Part *p, const int *isr, int n, MqError *err)
{
	(void) b;
	(void) p;
	(void) err;
	memcpy(node_isr, isr, sizeof(int) * n);
	nnode_isr = n;
	return true;
}

bool
coord_alter_isr(Broker *b, const Part *p, const int *isr, int n, bool *accepted, MqError *err)
{
	(void) b;
	(void) p;
	(void) err;
	memcpy(coord_isr, isr, sizeof(int) * n);
	ncoord_isr = n;
	*accepted = true;
	return true;
}

bool
fsm_fire(Broker *b, Part *p, FsmEvent event)
{
	(void) b;
	(void) p;
	(void) event;
	return true;
}

static void
follower(int i, int id, bool in_isr, int64_t log_end, int64_t hwm)
{
	progress[i] = (ReplicaProgress) {
		.id = id, .in_isr = in_isr, .log_end = log_end, .lag_ms = 10,
		.leader_log_end = 100, .high_watermark = hwm, .epoch_start = 0, .caught_up = true
	};
}

static bool
is(const int *a, int n, int x, int y, int z)
{
	return n == 3 && a[0] == x && a[1] == y && a[2] == z;
}

int
main(void)
{
	BrokerConfig cfg = {0};
	Broker		b = {0};
	Part		p = {0};

	cfg.broker_id = 1;
	cfg.session_timeout_ms = 3000;
	cfg.lag_time_max_ms = 10000;
	b.cfg = &cfg;
	b.live_since_us = mq_now_us() - (int64_t) 60 * 1000 * 1000;
	nlive = 3;
	memcpy(live, (int[]) {1, 2, 3}, sizeof(int) * 3);
	p.nisr = 2;
	memcpy(p.isr, (int[]) {1, 2}, sizeof(int) * 2);

	/* replica 3 caught up but is a batch below the high watermark */
	follower(0, 2, true, 100, 100);
	follower(1, 3, false, 95, 100);
	leader_duties(&b, &p);
	CHECK(is(node_isr, nnode_isr, 1, 2, 3), "a caught-up follower below the high watermark joins the node's ISR");
	CHECK(ncoord_isr == -1 && p.nisr == 2, "but not the coordinator's");

	/* next tick: in the node's ISR, still below the high watermark */
	follower(1, 3, true, 98, 100);
	leader_duties(&b, &p);
	CHECK(ncoord_isr == -1, "the coordinator's ISR waits while it is below the high watermark");

	/* then it holds the high watermark */
	follower(1, 3, true, 100, 100);
	leader_duties(&b, &p);
	CHECK(is(coord_isr, ncoord_isr, 1, 2, 3) && p.nisr == 3,
		  "holding the high watermark in the node's ISR, it joins the coordinator's");

	/* broker 3 stops being live right after we took our liveness lock back */
	nlive = 2;
	nnode_isr = ncoord_isr = -1;
	b.live_since_us = mq_now_us();
	leader_duties(&b, &p);
	CHECK(nnode_isr == -1 && ncoord_isr == -1, "no shrink for a broker not live in the settling time");

	/* once the settling time is over it is removed */
	b.live_since_us = mq_now_us() - (int64_t) 4000 * 1000;
	leader_duties(&b, &p);
	CHECK(nnode_isr == 2 && ncoord_isr == 2 && p.nisr == 2 && p.isr[1] == 2,
		  "after session.timeout.ms a member whose broker is not live leaves both ISRs");
	CHECK(p.nfollowers == 2 && p.followers[1].id == 3 && !p.followers[1].in_isr && p.followers[0].in_isr,
		  "the metrics see it out of sync in the same tick");

	/* the tick's one read: a quiet partition's answer is taken once */
	b.node = (PGconn *) &b;		/* any non-NULL: the stubs never use it */
	p.state = PART_LEADER;
	b.parts = &p;
	batch_quiet = true;
	single_reads = 0;
	leaders_read_states(&b);
	leader_duties(&b, &p);
	CHECK(single_reads == 0 && p.nfollowers == 2, "a quiet partition takes the tick's batched answer");
	leader_duties(&b, &p);
	CHECK(single_reads == 1, "once: a second read in the same tick goes to the node");
	leaders_read_states(&b);
	p.applied_epoch++;
	leader_duties(&b, &p);
	CHECK(single_reads == 2, "nor is an answer for another epoch taken");
	batch_quiet = false;
	leaders_read_states(&b);
	leader_duties(&b, &p);
	CHECK(single_reads == 3, "a partition the batch flags is read alone");
	b.node = NULL;
	return unit_done();
}
