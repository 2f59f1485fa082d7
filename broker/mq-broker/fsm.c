/*-------------------------------------------------------------------------
 *
 * fsm.c
 *	  The partition state machine's transition table, the one function
 *	  that changes a partition's state (fsm_fire), and the table printed as
 *	  a Graphviz graph (see fsm.h); a partition's label and its lookup by
 *	  name, which every layer uses.
 *
 * Layer: below every file that fires an event (step.c, elect.c,
 * follower.c, ...); it calls none of them.  The actions the table names
 * are step.c's and run through the pointers step.c hands down
 * (Broker.hooks.fsm_actions, fsm.h), so firing an outcome event from a
 * handler is a call down, and the dispatcher (step.c, loop.c) stands above
 * the handlers it calls.
 *
 * Adding a state or an event is a change to the table below: the unit
 * test (test/unit/fsm_test.c) holds its own copy of what each state does
 * with each event and fails until both agree, and the graph in
 * docs/replication.md must be regenerated (scripts/fsm-graph.sh).
 *
 * Locking: none; the broker has one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "broker.h"
#include "fsm.h"
#include "util.h"

#define N PART_NONE
#define L PART_LEADER
#define T PART_FOLLOWER_TRUNCATE
#define F PART_FOLLOWER_FETCH
#define ACT(fn) FSM_##fn

const FsmTransition fsm_table[] = {
	/* tick events: this tick's work, the state stays */
	{N, EV_NAMED_ME, N, ACT(act_claim)},
	{T, EV_NAMED_ME, T, ACT(act_claim)},
	{F, EV_NAMED_ME, F, ACT(act_claim)},
	{L, EV_NAMED_ME, L, ACT(act_lead)},
	{N, EV_NAMED_OTHER, N, ACT(act_replicate)},
	{T, EV_NAMED_OTHER, T, ACT(act_replicate)},
	{F, EV_NAMED_OTHER, F, ACT(act_replicate)},
	{L, EV_NAMED_OTHER, L, ACT(act_step_down)},
	{N, EV_LEADERLESS, N, ACT(act_leaderless)},
	{T, EV_LEADERLESS, T, ACT(act_leaderless)},
	{F, EV_LEADERLESS, F, ACT(act_leaderless)},
	{L, EV_LEADERLESS, L, ACT(act_step_down)},

	/* outcome events */
	{N, EV_ELECTED, L, FSM_NO_ACTION},
	{T, EV_ELECTED, L, FSM_NO_ACTION},
	{F, EV_ELECTED, L, FSM_NO_ACTION},
	{L, EV_ELECTED, L, FSM_NO_ACTION},	/* re-elected: a new epoch */
	{N, EV_FOLLOWING, T, FSM_NO_ACTION},
	{T, EV_FOLLOWING, T, FSM_NO_ACTION},	/* a new leader epoch */
	{F, EV_FOLLOWING, T, FSM_NO_ACTION},
	{T, EV_TRUNCATED, F, FSM_NO_ACTION},
	{F, EV_DIVERGED, T, FSM_NO_ACTION},
	{F, EV_APPEND_REFUSED, N, ACT(act_forget_epoch)},
	{L, EV_DEPOSED, N, ACT(act_resign)},
	{L, EV_HANDED_OVER, N, ACT(act_resign)},
	{N, EV_NODE_LOST, N, ACT(act_drop_role)},
	{L, EV_NODE_LOST, N, ACT(act_drop_role)},
	{T, EV_NODE_LOST, N, ACT(act_drop_role)},
	{F, EV_NODE_LOST, N, ACT(act_drop_role)},
	{N, EV_NODE_ATTACHED, N, ACT(act_drop_role)},
	{L, EV_NODE_ATTACHED, N, ACT(act_drop_role)},
	{T, EV_NODE_ATTACHED, N, ACT(act_drop_role)},
	{F, EV_NODE_ATTACHED, N, ACT(act_drop_role)},
	{N, EV_COORD_LOST, N, ACT(act_drop_role_keep_locks)},
	{L, EV_COORD_LOST, L, ACT(act_keep_role_lose_locks)},	/* serve on: epochs fence */
	{T, EV_COORD_LOST, N, ACT(act_drop_role_keep_locks)},
	{F, EV_COORD_LOST, F, ACT(act_keep_role_lose_locks)},
	{N, EV_SHUTDOWN, N, ACT(act_stop_fetching)},
	{L, EV_SHUTDOWN, N, ACT(act_stop_fetching)},
	{T, EV_SHUTDOWN, N, ACT(act_stop_fetching)},
	{F, EV_SHUTDOWN, N, ACT(act_stop_fetching)},
};
const int	fsm_table_size = sizeof(fsm_table) / sizeof(fsm_table[0]);

#undef N
#undef L
#undef T
#undef F

static const char *const state_names[PART_NSTATES] = {
	"NONE", "LEADER", "FOLLOWER_TRUNCATE", "FOLLOWER_FETCH"
};

static const char *const event_names[FSM_NEVENTS] = {
	"named_me", "named_other", "leaderless",
	"elected", "following", "truncated", "diverged", "append_refused",
	"deposed", "handed_over", "node_lost", "coord_lost", "node_attached",
	"shutdown"
};

#define FSM_ACTION_NAME(fn) #fn,
static const char *const action_names[FSM_NACTIONS] = {
	NULL, FSM_ACTIONS(FSM_ACTION_NAME)
};

const char *
fsm_state_name(PartState s)
{
	return s >= 0 && s < PART_NSTATES ? state_names[s] : "?";
}

const char *
fsm_event_name(FsmEvent e)
{
	return e >= 0 && e < FSM_NEVENTS ? event_names[e] : "?";
}

const char *
fsm_action_name(FsmActionId a)
{
	return a > FSM_NO_ACTION && a < FSM_NACTIONS ? action_names[a] : NULL;
}

bool
fsm_is_tick_event(FsmEvent e)
{
	return e < FSM_FIRST_OUTCOME;
}

const char *
part_label(const Part *p)
{
	static char buf[300];

	snprintf(buf, sizeof(buf), "\"%s\" partition %d", p->topic, p->partition);
	return buf;
}

/* The partition of that name, or NULL. */
Part *
broker_find_part(Broker *b, const char *topic, int partition)
{
	for (Part *p = b->parts; p; p = p->next)
		if (p->partition == partition && strcmp(p->topic, topic) == 0)
			return p;
	return NULL;
}

const FsmTransition *
fsm_lookup(PartState from, FsmEvent event)
{
	for (int i = 0; i < fsm_table_size; i++)
		if (fsm_table[i].from == from && fsm_table[i].event == event)
			return &fsm_table[i];
	return NULL;
}

bool
fsm_fire(Broker *b, Part *p, FsmEvent event)
{
	const FsmTransition *t = fsm_lookup(p->state, event);

	if (t == NULL)
	{
		mq_log_error("%s: refused transition: state %s has no transition on event %s",
					 part_label(p), fsm_state_name(p->state), fsm_event_name(event));
		return false;
	}
	if (!fsm_is_tick_event(event))
	{
		mq_log_info("%s: state %s -> %s on %s", part_label(p),
					fsm_state_name(t->from), fsm_state_name(t->to), fsm_event_name(event));
		p->state = t->to;
	}
	if (t->action != FSM_NO_ACTION)
		b->hooks.fsm_actions[t->action](b, p);
	return true;
}

/* ---------------------------------------------------------------------
 * The graph
 * --------------------------------------------------------------------- */

/* One edge per (from, to, kind), labelled with every event that takes it. */
static void
print_edges(FILE *out, bool ticks)
{
	bool		done[FSM_MAX_ROWS] = {false};

	for (int i = 0; i < fsm_table_size; i++)
	{
		const FsmTransition *t = &fsm_table[i];
		const char *sep = "";

		if (done[i] || fsm_is_tick_event(t->event) != ticks)
			continue;
		fprintf(out, "  %s -> %s [label=\"", state_names[t->from], state_names[t->to]);
		for (int j = i; j < fsm_table_size; j++)
		{
			const FsmTransition *u = &fsm_table[j];

			if (done[j] || u->from != t->from || u->to != t->to ||
				fsm_is_tick_event(u->event) != ticks)
				continue;
			done[j] = true;
			fprintf(out, "%s%s", sep, event_names[u->event]);
			if (u->action != FSM_NO_ACTION)
				fprintf(out, " / %s", fsm_action_name(u->action));
			sep = "\\n";
		}
		fprintf(out, "\"%s];\n", ticks ? ", style=dashed, color=gray40, fontcolor=gray40" : "");
	}
}

void
fsm_print_dot(FILE *out)
{
	fprintf(out, "// mq-broker's partition state machine: mq-broker --print-fsm\n");
	fprintf(out, "digraph mq_broker_partition {\n");
	fprintf(out, "  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
	fprintf(out, "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	for (int s = 0; s < PART_NSTATES; s++)
		fprintf(out, "  %s;\n", state_names[s]);
	fprintf(out, "  // outcome events: the state changes\n");
	print_edges(out, false);
	fprintf(out, "  // tick events (dashed): this tick's work, the state stays\n");
	print_edges(out, true);
	fprintf(out, "}\n");
}
