/*
 * tick_test.c: mq-broker's tick period (tick.c) without PostgreSQL: a
 * broker whose partitions are all steady ticks every tick.idle.ms (capped
 * at a quarter of session.timeout.ms, never below tick.ms); anything
 * unsteady (an ISR short of a replica, a leader that is not the preferred
 * one, a partition moving or backing off, a role not applied, recovery
 * with work, a lost connection) brings it back to tick.ms.
 */
#include <string.h>

#include "broker.h"
#include "fsm.h"
#include "util.h"
#include "unit.h"

static bool live = true;

bool
broker_is_live(Broker *b, int id)
{
	(void) b;
	(void) id;
	return live;
}

int
preferred_leader(const Part *p)
{
	return p->nreplicas > 0 ? p->replicas[0] : -1;
}

static int
period_ms(Broker *b)
{
	return (int) (broker_next_tick_us(b, 0) / 1000);
}

static void
steady_part(Part *p, int leader, int me, PartState state)
{
	memset(p, 0, sizeof(*p));
	p->nreplicas = p->nisr = 3;
	memcpy(p->replicas, (int[]) {1, 2, 3}, sizeof(int) * 3);
	memcpy(p->isr, (int[]) {1, 2, 3}, sizeof(int) * 3);
	p->leader = leader;
	p->leader_epoch = p->applied_epoch = 4;
	p->state = state;
	p->lock_held = leader == me;
}

int
main(void)
{
	BrokerConfig cfg = {0};
	Broker		b = {0};
	Part		led, followed;
	int			dummy;

	cfg.broker_id = 1;
	cfg.tick_ms = 100;
	cfg.tick_idle_ms = 500;
	cfg.session_timeout_ms = 3000;
	cfg.auto_rebalance = true;
	b.cfg = &cfg;
	b.node = b.coord = (PGconn *) &dummy;	/* only compared with NULL */
	b.live = true;
	steady_part(&led, 1, 1, PART_LEADER);
	steady_part(&followed, 1, 1, PART_FOLLOWER_FETCH);
	followed.replicas[0] = 2;	/* broker 2 leads it, preferred */
	followed.leader = 2;
	led.next = &followed;
	b.parts = &led;

	CHECK(period_ms(&b) == 500, "steady: the idle period (%d ms)", period_ms(&b));
	cfg.session_timeout_ms = 1000;
	CHECK(period_ms(&b) == 250, "at most a quarter of session.timeout.ms (%d ms)", period_ms(&b));
	cfg.session_timeout_ms = 200;
	CHECK(period_ms(&b) == 100, "never below tick.ms (%d ms)", period_ms(&b));
	cfg.session_timeout_ms = 3000;

	led.nisr = 2;
	CHECK(period_ms(&b) == 100, "an ISR short of a replica: tick.ms");
	led.nisr = 3;
	led.leader = 2;
	led.state = PART_FOLLOWER_FETCH;
	CHECK(period_ms(&b) == 100, "a leader that is not the preferred replica: tick.ms");
	cfg.auto_rebalance = false;
	CHECK(period_ms(&b) == 500, "... unless rebalancing is off");
	cfg.auto_rebalance = true;
	steady_part(&led, 1, 1, PART_LEADER);
	led.next = &followed;
	led.ntarget = 3;
	CHECK(period_ms(&b) == 100, "a partition moving: tick.ms");
	led.ntarget = 0;
	led.lock_held = false;
	CHECK(period_ms(&b) == 100, "a leader without its lock: tick.ms");
	led.lock_held = true;
	followed.applied_epoch = 3;
	CHECK(period_ms(&b) == 100, "a follower in an old epoch: tick.ms");
	followed.applied_epoch = 4;
	followed.backoff_until_us = mq_now_us() + 1000000;
	CHECK(period_ms(&b) == 100, "a fetch waiting to retry: tick.ms");
	followed.backoff_until_us = 0;
	live = false;
	CHECK(period_ms(&b) == 100, "a leader whose broker is not live: tick.ms");
	live = true;
	b.recovery_pending = true;
	CHECK(period_ms(&b) == 100, "recovery with work: tick.ms");
	b.recovery_pending = false;
	b.coord = NULL;
	CHECK(period_ms(&b) == 100, "no coordinator: tick.ms");
	b.coord = (PGconn *) &dummy;
	led.nreplicas = led.nisr = 1;
	CHECK(period_ms(&b) == 100, "a leader alone in its replica set: tick.ms");
	b.parts = NULL;
	CHECK(period_ms(&b) == 500, "no partitions at all: the idle period");
	return unit_done();
}
