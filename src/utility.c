/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  mq's one ProcessUtility hook, installed in every backend that loads
 *	  the library: what mq does around utility statements, each part
 *	  owned by the file of its concept.
 *
 *	  - before: a database that DROP / RENAME / SET TABLESPACE / CREATE
 *		DATABASE ... TEMPLATE needs alone has its maintenance paused
 *		(launcher_hook.c, when preloaded);
 *	  - after: CREATE EXTENSION mq wakes the launcher at commit
 *		(launcher_hook.c); DISCARD ALL forgets the session's pending
 *		auto_commit batches (positions.c).
 *
 * No locks of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "tcop/utility.h"

#include "mq.h"

static ProcessUtility_hook_type prev_utility = NULL;

static void
mq_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		   ProcessUtilityContext context, ParamListInfo params,
		   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	mq_launcher_before_utility(stmt);
	if (prev_utility)
		prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	mq_launcher_after_utility(stmt);
	mq_positions_after_utility(stmt);
}

void
mq_utility_init(void)
{
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = mq_utility;
}
