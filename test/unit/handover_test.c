/*
 * handover_test.c: mq-broker's preferred-leader handover (handover.c)
 * without PostgreSQL, the node call and the state machine stubbed: the
 * leader hands over once the preferred replica has been in the ISR for
 * auto.leader.rebalance.delay.ms within its current leadership, not
 * counting time from an earlier leadership of the same broker.
 */
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "calls.h"
#include "fsm.h"
#include "util.h"
#include "unit.h"
#include "broker_stubs.h"

static int	resigned;
static int	handed_over;

bool
broker_is_live(Broker *b, int id)
{
	(void) b;
	(void) id;
	return true;
}

bool
node_become_follower(Broker *b, const Part *p, int epoch, int leader, const char *leader_name,
					 MqError *err)
{
	(void) b;
	(void) p;
	(void) epoch;
	(void) leader;
	(void) leader_name;
	(void) err;
	resigned++;
	return true;
}

bool
fsm_fire(Broker *b, Part *p, FsmEvent event)
{
	(void) b;
	(void) p;
	handed_over += event == EV_HANDED_OVER;
	return true;
}

int
main(void)
{
	BrokerConfig cfg = {0};
	Broker		b = {0};
	Part		p = {0};

	cfg.broker_id = 2;
	cfg.auto_rebalance = true;
	cfg.rebalance_delay_ms = 10000;
	cfg.session_timeout_ms = 3000;
	b.cfg = &cfg;
	p.nreplicas = 3;
	memcpy(p.replicas, (int[]) {1, 2, 3}, sizeof(int) * 3);
	p.nisr = 3;
	memcpy(p.isr, (int[]) {1, 2, 3}, sizeof(int) * 3);

	/* broker 2 led in epoch 5, with broker 1 ready long ago, then lost it */
	p.applied_epoch = 7;
	p.preferred_ready_since_us = 1;
	p.preferred_ready_epoch = 5;
	maybe_hand_over(&b, &p);
	CHECK(resigned == 0 && handed_over == 0,
		  "a new leadership does not hand over on time counted in an earlier one");
	CHECK(p.preferred_ready_epoch == 7 && p.preferred_ready_since_us > 1,
		  "it counts the delay from now, in its own epoch");

	/* the delay passed within this leadership */
	p.preferred_ready_since_us = mq_now_us() - (int64_t) 11000 * 1000;
	maybe_hand_over(&b, &p);
	CHECK(resigned == 1 && handed_over == 1,
		  "after the delay in this leadership it resigns and hands over");

	/* the preferred replica leaves the ISR: the count starts again */
	p.nisr = 2;
	memcpy(p.isr, (int[]) {2, 3}, sizeof(int) * 2);
	p.preferred_ready_since_us = 1;
	maybe_hand_over(&b, &p);
	CHECK(resigned == 1 && p.preferred_ready_since_us == 0,
		  "without the preferred replica in the ISR nothing is handed over");
	return unit_done();
}
