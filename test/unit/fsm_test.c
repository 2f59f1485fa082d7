/*
 * fsm_test.c: the partition state machine of mq-broker (broker/mq-broker/
 * fsm.c), without PostgreSQL.  Every event is fired from every state: the
 * ones this file's own specification allows must land where it says and run
 * the action it names, all others must be refused with the state left
 * alone.  The specification is written out here on purpose, apart from the
 * table, so that a change to the table is a change to this test too.
 *
 * The table's actions are stubs here that only record that they ran,
 * handed to fsm_fire as step.c's are (Broker.hooks.fsm_actions).
 */
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "fsm.h"
#include "util.h"
#include "unit.h"

static const char *last_action;

#define STUB(fn) static void fn(Broker *b, Part *p) { last_action = #fn; }
STUB(act_lead)
STUB(act_claim)
STUB(act_step_down)
STUB(act_replicate)
STUB(act_leaderless)
STUB(act_resign)
STUB(act_forget_epoch)
STUB(act_drop_role)
STUB(act_drop_role_keep_locks)
STUB(act_keep_role_lose_locks)
STUB(act_stop_fetching)

/* handed down as step.c's broker_fsm_actions is (Broker.hooks) */
#define STUB_ENTRY(fn) [FSM_##fn] = fn,
static const FsmAction stub_actions[FSM_NACTIONS] = {
	FSM_ACTIONS(STUB_ENTRY)
};

#define N PART_NONE
#define L PART_LEADER
#define T PART_FOLLOWER_TRUNCATE
#define F PART_FOLLOWER_FETCH
#define X (-1)					/* refused */

typedef struct Spec
{
	FsmEvent	event;
	int			to[PART_NSTATES];	/* from NONE, LEADER, F_TRUNCATE, F_FETCH */
	const char *action[PART_NSTATES];
} Spec;

static const Spec spec[] = {
	{EV_NAMED_ME, {N, L, T, F}, {"act_claim", "act_lead", "act_claim", "act_claim"}},
	{EV_NAMED_OTHER, {N, L, T, F}, {"act_replicate", "act_step_down", "act_replicate", "act_replicate"}},
	{EV_LEADERLESS, {N, L, T, F}, {"act_leaderless", "act_step_down", "act_leaderless", "act_leaderless"}},
	{EV_ELECTED, {L, L, L, L}, {NULL, NULL, NULL, NULL}},
	{EV_FOLLOWING, {T, X, T, T}, {NULL, NULL, NULL, NULL}},
	{EV_TRUNCATED, {X, X, F, X}, {NULL, NULL, NULL, NULL}},
	{EV_DIVERGED, {X, X, X, T}, {NULL, NULL, NULL, NULL}},
	{EV_APPEND_REFUSED, {X, X, X, N}, {NULL, NULL, NULL, "act_forget_epoch"}},
	{EV_DEPOSED, {X, N, X, X}, {NULL, "act_resign", NULL, NULL}},
	{EV_HANDED_OVER, {X, N, X, X}, {NULL, "act_resign", NULL, NULL}},
	{EV_NODE_LOST, {N, N, N, N}, {"act_drop_role", "act_drop_role", "act_drop_role", "act_drop_role"}},
	{EV_NODE_ATTACHED, {N, N, N, N}, {"act_drop_role", "act_drop_role", "act_drop_role", "act_drop_role"}},
	{EV_COORD_LOST, {N, L, N, F}, {"act_drop_role_keep_locks", "act_keep_role_lose_locks",
	"act_drop_role_keep_locks", "act_keep_role_lose_locks"}},
	{EV_SHUTDOWN, {N, N, N, N}, {"act_stop_fetching", "act_stop_fetching", "act_stop_fetching",
	"act_stop_fetching"}},
};

static void
check_event_from_state(const Spec *sp, PartState from)
{
	Broker		b;
	Part		p;
	bool		ok;
	int			want = sp->to[from];
	const char *ev = fsm_event_name(sp->event);
	const char *st = fsm_state_name(from);

	memset(&b, 0, sizeof(b));
	b.hooks.fsm_actions = stub_actions;
	memset(&p, 0, sizeof(p));
	p.topic = "t";
	p.state = from;
	last_action = NULL;
	ok = fsm_fire(&b, &p, sp->event);
	if (want == X)
	{
		CHECK(!ok && p.state == from && last_action == NULL,
			  "%s on %s is refused and changes nothing", st, ev);
		return;
	}
	CHECK(ok && p.state == (PartState) want, "%s on %s goes to %s (got %s)", st, ev,
		  fsm_state_name(want), fsm_state_name(p.state));
	CHECK((sp->action[from] == NULL && last_action == NULL) ||
		  (sp->action[from] && last_action && strcmp(sp->action[from], last_action) == 0),
		  "%s on %s runs %s (ran %s)", st, ev, sp->action[from] ? sp->action[from] : "nothing",
		  last_action ? last_action : "nothing");
}

/* The table itself: no duplicate rows, tick rows keep the state, it fits. */
static void
check_table_shape(void)
{
	bool		dup = false,
				tick_moves = false;

	for (int i = 0; i < fsm_table_size; i++)
	{
		const FsmTransition *t = &fsm_table[i];

		if (fsm_is_tick_event(t->event) && t->to != t->from)
			tick_moves = true;
		for (int j = i + 1; j < fsm_table_size; j++)
			if (fsm_table[j].from == t->from && fsm_table[j].event == t->event)
				dup = true;
	}
	CHECK(!dup, "no (state, event) pair has two rows");
	CHECK(!tick_moves, "tick events never change the state");
	CHECK(fsm_table_size <= FSM_MAX_ROWS, "the table fits FSM_MAX_ROWS");
	CHECK(sizeof(spec) / sizeof(spec[0]) == FSM_NEVENTS, "this test specifies every event");
}

int
main(void)
{
	int			rows = 0;

	mq_progname = "fsm_test";
	check_table_shape();
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++)
		for (int s = 0; s < PART_NSTATES; s++)
		{
			check_event_from_state(&spec[i], (PartState) s);
			rows += spec[i].to[s] != X;
		}
	CHECK(rows == fsm_table_size, "the table has exactly the %d allowed transitions (it has %d)",
		  rows, fsm_table_size);
	return unit_done();
}
