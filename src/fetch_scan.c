/*-------------------------------------------------------------------------
 *
 * fetch_scan.c
 *	  The executor's side of the streaming scan of mq.fetch and mq.poll
 *	  (planned by fetch_path.c): each log row read becomes the scan tuple
 *	  as it is read, pointing into the heap page, with no tuplestore.
 *
 * The first call to the node evaluates the call's arguments and starts a
 * feed (feed.c) with the same checks the SQL function makes (fetch.c,
 * poll.c), after the EXECUTE privilege check the function call would have
 * made.  Rescans: when a parameter of the arguments changed, the call is
 * made again, as a function scan would; otherwise the feed is rewound and
 * replays its reads with their snapshots, so the rows are the same and a
 * poll claims and moves nothing twice.  A poll the executor leaves early
 * (LIMIT) is read to its end when the node ends: its group positions move
 * as far as the SQL function's would have.  Backward scans are not
 * supported: for a SCROLL cursor the planner puts a Material node above.
 *
 * Memory: the feed lives in a context of the node's own; a row's derived
 * values (the header list) in the per-tuple context.
 *
 * Layer: below the planner's side (fetch_path.c, which registers these
 * methods through mq_fetch_scan_init and names them in its plans), above
 * the feed and the SQL functions' checks.
 *
 * Locking: as the log reader (log_reader.c) and mq.poll's claims (poll.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "mq.h"

typedef struct MqScanState
{
	CustomScanState css;
	bool		poll;
	uint32		columns;		/* the columns used (MQ_RECORD_COLUMN) */
	Oid			header_elem;	/* mq.header */
	List	   *args;			/* ExprStates of the call's arguments */
	Bitmapset  *params;			/* PARAM_EXEC ids the arguments use */
	MemoryContext cxt;			/* the feed's */
	bool		started;
	MqFeed		feed;
} MqScanState;

static Node *create_scan_state(CustomScan *cscan);
static void begin_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_scan(CustomScanState *node);
static void end_scan(CustomScanState *node);
static void rescan_scan(CustomScanState *node);
static void explain_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomScanMethods plan_methods[2] = {
	{"MqFetch", create_scan_state},
	{"MqPoll", create_scan_state},
};
static const CustomExecMethods exec_methods[2] = {
	{"MqFetch", begin_scan, exec_scan, end_scan, rescan_scan,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, explain_scan},
	{"MqPoll", begin_scan, exec_scan, end_scan, rescan_scan,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, explain_scan},
};

const CustomScanMethods *
mq_scan_plan_methods(bool poll)
{
	return &plan_methods[poll ? 1 : 0];
}

void
mq_fetch_scan_init(void)
{
	RegisterCustomScanMethods(&plan_methods[0]);
	RegisterCustomScanMethods(&plan_methods[1]);
}

static Node *
create_scan_state(CustomScan *cscan)
{
	MqScanState *s = palloc0(sizeof(MqScanState));

	NodeSetTag(s, T_CustomScanState);
	s->poll = cscan->methods == &plan_methods[1];
	s->css.methods = &exec_methods[s->poll ? 1 : 0];
	return (Node *) s;
}

static bool
exec_params_walker(Node *node, Bitmapset **params)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		*params = bms_add_member(*params, ((Param *) node)->paramid);
	return expression_tree_walker(node, exec_params_walker, params);
}

static void
begin_scan(CustomScanState *node, EState *estate, int eflags)
{
	MqScanState *s = (MqScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	FuncExpr   *call = linitial(cscan->custom_exprs);
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	AclResult	aclresult;

	/* what the function call would have checked */
	aclresult = pg_proc_aclcheck(call->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(call->funcid));
	InvokeFunctionExecuteHook(call->funcid);

	s->columns = intVal(linitial(cscan->custom_private));
	s->header_elem = get_element_type(TupleDescAttr(desc, Natts_record - 1)->atttypid);
	s->args = ExecInitExprList(call->args, &node->ss.ps);
	(void) exec_params_walker((Node *) call->args, &s->params);
	s->cxt = AllocSetContextCreate(estate->es_query_cxt, "mq scan", ALLOCSET_DEFAULT_SIZES);
}

/* Evaluate the arguments (copied into the feed's memory) and start it. */
static void
start_feed(MqScanState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	FuncExpr   *call = linitial(cscan->custom_exprs);
	NullableDatum args[FUNC_MAX_ARGS];
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	ListCell   *lc;
	int			n = 0;

	foreach(lc, s->args)
	{
		int16		typlen;
		bool		typbyval;
		Datum		value = ExecEvalExpr(lfirst(lc), econtext, &args[n].isnull);

		get_typlenbyval(exprType(list_nth(call->args, n)), &typlen, &typbyval);
		args[n].value = args[n].isnull ? (Datum) 0 : datumCopy(value, typbyval, typlen);
		n++;
	}
	if (s->poll)
		mq_poll_feed_begin(&s->feed, args, n);
	else
		mq_fetch_feed_begin(&s->feed, args, n);
	s->started = true;
	MemoryContextSwitchTo(old);
}

/* The next row of the call as the scan tuple; an empty slot at the end. */
static TupleTableSlot *
next_row(ScanState *ss)
{
	MqScanState *s = (MqScanState *) ss;
	TupleTableSlot *out = ss->ss_ScanTupleSlot;
	TupleTableSlot *log;
	MemoryContext old;

	if (!s->started)
		start_feed(s);
	old = MemoryContextSwitchTo(s->cxt);
	log = mq_feed_next(&s->feed);
	MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
	ExecClearTuple(out);
	if (log != NULL)
	{
		mq_feed_record(&s->feed, log, s->header_elem, s->columns,
					   out->tts_values, out->tts_isnull);
		ExecStoreVirtualTuple(out);
	}
	MemoryContextSwitchTo(old);
	return out;
}

static bool
recheck_row(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_row, recheck_row);
}

/* Finish the feed (a poll reads to its end) and free its memory. */
static void
stop_feed(MqScanState *s)
{
	MemoryContext old;

	if (!s->started)
		return;
	old = MemoryContextSwitchTo(s->cxt);
	mq_feed_end(&s->feed);
	MemoryContextSwitchTo(old);
	MemoryContextReset(s->cxt);
	s->started = false;
}

static void
end_scan(CustomScanState *node)
{
	stop_feed((MqScanState *) node);
}

static void
rescan_scan(CustomScanState *node)
{
	MqScanState *s = (MqScanState *) node;

	ExecScanReScan(&node->ss);
	if (!s->started)
		return;
	if (bms_overlap(node->ss.ps.chgParam, s->params))
		stop_feed(s);			/* new arguments: a new call */
	else
	{
		MemoryContext old = MemoryContextSwitchTo(s->cxt);

		mq_feed_rewind(&s->feed);
		MemoryContextSwitchTo(old);
	}
}

/* EXPLAIN: the call, as a function scan shows it with VERBOSE */
static void
explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan, ancestors);

	ExplainPropertyText("Function Call",
						deparse_expression(linitial(cscan->custom_exprs), context,
										   es->verbose, false),
						es);
}
