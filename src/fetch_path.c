/*-------------------------------------------------------------------------
 *
 * fetch_path.c
 *	  The planner's side of the streaming scan: mq.fetch(...) and
 *	  mq.poll(...) in FROM are planned as a custom scan (fetch_scan.c)
 *	  instead of a function scan, which would materialize every record in
 *	  a tuplestore before the executor reads it back.
 *
 * A set_rel_pathlist_hook replaces the function scan's path when the
 * range table entry is one call of mq's C function fetch or poll (found
 * by its library and symbol, not by name), without ORDINALITY, whose
 * arguments refer to no other relation (constants, parameters of prepared
 * statements and PL/pgSQL variables, initplan results), and no whole-row
 * reference to its result is needed.  Anything else keeps the function
 * scan, whose results are the same; so does everything while the setting
 * mq.enable_fetch_scan is off.
 *
 * The custom scan has no scan relation (scanrelid 0): its scan tuple is
 * the mq.record columns, described by custom_scan_tlist.  custom_exprs
 * holds the call itself, so that setrefs fixes its parameters, plan
 * invalidation sees the function, and EXPLAIN can print it.
 *
 * Layer: above the executor's side (fetch_scan.c), whose plan methods
 * its plans name; mq.c's _PG_init starts both through mq_fetch_path_init.
 *
 * Locking: none; it runs in the planner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "funcapi.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "mq.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

static Plan *plan_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					   List *tlist, List *clauses, List *custom_plans);

/* the planner's methods of the paths; the plan's are fetch_scan.c's */
static const CustomPathMethods path_methods[2] = {
	{"MqFetch", plan_scan},
	{"MqPoll", plan_scan},
};

/* mq.enable_fetch_scan: off plans every call as a function scan again */
static bool enable_fetch_scan = true;

/* Is this function mq's fetch or poll?  *poll says which. */
static bool
is_mq_reader(Oid funcid, bool *poll)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Form_pg_proc proc;
	bool		ok = false;

	if (!HeapTupleIsValid(tup))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	/* SECURITY DEFINER, SET or STRICT would change how a call runs */
	if (proc->prolang == ClanguageId && proc->proretset && !proc->prosecdef &&
		!proc->proisstrict && heap_attisnull(tup, Anum_pg_proc_proconfig, NULL))
	{
		bool		isnull;
		Datum		bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
		char	   *src;

		if (!isnull && strcmp(TextDatumGetCString(bin), "$libdir/mq") == 0)
		{
			src = TextDatumGetCString(SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull));
			*poll = strcmp(src, "mq_poll") == 0;
			ok = (*poll && proc->pronargs >= 8) ||
				(strcmp(src, "mq_fetch") == 0 && proc->pronargs == 7);
		}
	}
	ReleaseSysCache(tup);
	return ok;
}

/* The columns of mq.record referred to above the scan or by its quals. */
static Bitmapset *
used_columns(RelOptInfo *rel, Index rti)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	pull_varattnos((Node *) rel->reltarget->exprs, rti, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause, rti, &attrs);
	return attrs;
}

#define COLUMN_USED(attrs, attno) \
	bms_is_member((attno) - FirstLowInvalidHeapAttributeNumber, (attrs))

/* The call in this range table entry, if it can be streamed. */
static FuncExpr *
streamable_call(RelOptInfo *rel, Index rti, RangeTblEntry *rte, bool *poll)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *call;

	if (rte->rtekind != RTE_FUNCTION || rte->funcordinality ||
		list_length(rte->functions) != 1 || IS_DUMMY_REL(rel) ||
		!bms_is_empty(rel->lateral_relids) || rel->pathlist == NIL ||
		((Path *) linitial(rel->pathlist))->pathtype != T_FunctionScan)
		return NULL;
	rtfunc = linitial(rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return NULL;
	call = (FuncExpr *) rtfunc->funcexpr;
	if (!call->funcretset || !is_mq_reader(call->funcid, poll) ||
		contain_var_clause((Node *) call->args) ||
		contain_subplans((Node *) call->args) ||
		COLUMN_USED(used_columns(rel, rti), 0))
		return NULL;
	return call;
}

static void
mq_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	FuncExpr   *call;
	CustomPath *cpath;
	Path	   *fscan;
	bool		poll = false;
	uint32		columns = 0;
	Bitmapset  *used;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (!enable_fetch_scan)
		return;
	call = streamable_call(rel, rti, rte, &poll);
	if (call == NULL)
		return;
	used = used_columns(rel, rti);
	for (int a = 1; a <= Natts_record; a++)
		if (COLUMN_USED(used, a))
			columns |= MQ_RECORD_COLUMN(a);
	fscan = linitial(rel->pathlist);

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.rows = fscan->rows;
	/* the same work as the function scan, but rows come as they are read */
	cpath->path.startup_cost = rel->baserestrictcost.startup;
	cpath->path.total_cost = fscan->total_cost;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;	/* ExecScan projects */
	cpath->custom_private = list_make3(copyObject(call), makeInteger(columns), makeBoolean(poll));
	cpath->methods = &path_methods[poll ? 1 : 0];
	rel->pathlist = NIL;
	add_path(rel, &cpath->path);
}

/* The scan tuple: Vars for the columns of mq.record. */
static List *
record_tlist(Index rti, FuncExpr *call)
{
	TupleDesc	desc = get_expr_result_tupdesc((Node *) call, false);
	List	   *tlist = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Var		   *var = makeVar(rti, i + 1, att->atttypid, att->atttypmod, att->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry((Expr *) var, i + 1,
											   pstrdup(NameStr(att->attname)), false));
	}
	return tlist;
}

static Plan *
plan_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
		  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	FuncExpr   *call = linitial(best_path->custom_private);
	bool		poll = boolVal(lthird(best_path->custom_private));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_exprs = list_make1(call);
	cscan->custom_private = list_make1(lsecond(best_path->custom_private));
	cscan->custom_scan_tlist = record_tlist(rel->relid, call);
	cscan->methods = mq_scan_plan_methods(poll);
	return &cscan->scan.plan;
}

void
mq_fetch_path_init(void)
{
	mq_fetch_scan_init();
	DefineCustomBoolVariable("mq.enable_fetch_scan",
							 "Plans mq.fetch and mq.poll in FROM as a scan that streams records.",
							 "Off: a function scan, which materializes the records first; the rows are the same.",
							 &enable_fetch_scan, true, PGC_USERSET, 0, NULL, NULL, NULL);
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = mq_set_rel_pathlist;
}
