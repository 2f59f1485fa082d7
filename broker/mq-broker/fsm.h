/*-------------------------------------------------------------------------
 *
 * fsm.h
 *	  The per-partition state machine of mq-broker as a table: states,
 *	  events, and the transitions (from, event, to, action) between them.
 *
 * Two kinds of events:
 *	 - tick events say what the coordinator's view of the partition is at
 *	   this tick (it names us leader, names another live broker, or nobody
 *	   live leads).  step.c picks one per partition and tick; its row names
 *	   the action that does this tick's work, and the state stays (those
 *	   rows have to == from).
 *	 - outcome events say what that work achieved (we won an election, the
 *	   node applied a follower epoch, truncation finished, we were deposed,
 *	   the node was lost, ...).  Their rows move the partition to another
 *	   state and may name an action run on entering it.
 *
 * fsm_fire() is the only writer of Part.state.  It finds the row by lookup,
 * logs every outcome transition, and refuses (logs an error, changes
 * nothing) an event the table has no row for in the current state.
 * `mq-broker --print-fsm` prints the table as a Graphviz graph; the copy
 * in docs/replication.md is checked against it by the unit tests.
 *
 * Locking: none; the broker has one thread.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_BROKER_FSM_H
#define MQ_BROKER_FSM_H

#include <stdbool.h>
#include <stdio.h>

struct Broker;
struct Part;

typedef enum PartState
{
	PART_NONE,					/* no role applied on the node */
	PART_LEADER,				/* the node leads the partition */
	PART_FOLLOWER_TRUNCATE,		/* follower: must run leader-epoch truncation */
	PART_FOLLOWER_FETCH,		/* follower: fetching from the leader */
	PART_NSTATES
} PartState;

typedef enum FsmEvent
{
	/* tick events */
	EV_NAMED_ME,				/* the coordinator names this broker leader */
	EV_NAMED_OTHER,				/* it names another broker, which is live */
	EV_LEADERLESS,				/* no leader, or the leader's broker is not live */
	/* outcome events */
	EV_ELECTED,					/* won the election; the node leads */
	EV_FOLLOWING,				/* the node applied the leader's epoch as follower */
	EV_TRUNCATED,				/* leader-epoch truncation done */
	EV_DIVERGED,				/* the leader says our log end is outside its log */
	EV_APPEND_REFUSED,			/* the node refused an append for another reason */
	EV_DEPOSED,					/* another leader, a refused ISR change, or the node disagrees */
	EV_HANDED_OVER,				/* resigned for the preferred leader */
	EV_NODE_LOST,				/* lost the connection to the node */
	EV_COORD_LOST,				/* lost the connection to the coordinator */
	EV_NODE_ATTACHED,			/* (re)connected to the node: it leads nothing now */
	EV_SHUTDOWN,				/* SIGTERM: every leadership resigned */
	FSM_NEVENTS
} FsmEvent;

#define FSM_FIRST_OUTCOME EV_ELECTED
#define FSM_MAX_ROWS 128		/* the unit test checks the table fits */

/*
 * The actions the table names, in the order of their ids.  Their code is
 * the dispatcher's (step.c, above the handlers that fire outcome events):
 * fsm_fire runs a row's action through the Broker's hooks.fsm_actions,
 * the table step.c hands down (broker.h), so that this file stands below
 * every file that fires an event.  Tick actions do a tick's work; outcome
 * actions tidy up on entering a state.
 */
#define FSM_ACTIONS(X) \
	X(act_lead) \
	X(act_claim) \
	X(act_step_down) \
	X(act_replicate) \
	X(act_leaderless) \
	X(act_resign) \
	X(act_forget_epoch) \
	X(act_drop_role) \
	X(act_drop_role_keep_locks) \
	X(act_keep_role_lose_locks) \
	X(act_stop_fetching)

#define FSM_ACTION_ID(fn) FSM_##fn,
typedef enum FsmActionId
{
	FSM_NO_ACTION,
	FSM_ACTIONS(FSM_ACTION_ID)
	FSM_NACTIONS
} FsmActionId;

typedef void (*FsmAction) (struct Broker *b, struct Part *p);

typedef struct FsmTransition
{
	PartState	from;
	FsmEvent	event;
	PartState	to;
	FsmActionId action;			/* FSM_NO_ACTION: none */
} FsmTransition;

extern const FsmTransition fsm_table[];
extern const int fsm_table_size;

/* The row for (state, event), or NULL when the table has none. */
extern const FsmTransition *fsm_lookup(PartState from, FsmEvent event);

/*
 * Handle an event: returns false, having logged an error, when the table
 * has no row for it in the partition's state (nothing changes then).
 */
extern bool fsm_fire(struct Broker *b, struct Part *p, FsmEvent event);

extern const char *fsm_state_name(PartState s);
extern const char *fsm_event_name(FsmEvent e);
extern const char *fsm_action_name(FsmActionId a);	/* "act_claim", NULL */
extern bool fsm_is_tick_event(FsmEvent e);

/* The table as a Graphviz digraph. */
extern void fsm_print_dot(FILE *out);

#endif							/* MQ_BROKER_FSM_H */
