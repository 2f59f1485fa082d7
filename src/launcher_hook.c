/*-------------------------------------------------------------------------
 *
 * launcher_hook.c
 *	  What every backend does for the maintenance launcher (launcher.c)
 *	  around utility statements (called by utility.c's hook), when the
 *	  library is preloaded.
 *
 * CREATE EXTENSION mq: at commit (when the extension is visible to a new
 * worker) the launcher is woken to probe every database, so maintenance
 * starts within moments instead of at the next probe.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME TO / SET TABLESPACE and CREATE
 * DATABASE ... TEMPLATE fail while another session is connected to the
 * database they name (DROP DATABASE WITH (FORCE) terminates sessions, the
 * plain form gives up after 5 s).  Before such a statement runs, the
 * database's maintenance is paused (no worker starts for MQ_PAUSE_MS) and
 * its worker is sent SIGTERM; at the end of the transaction the pause is
 * lifted, so a renamed database or a failed drop is maintained again at
 * the launcher's next pass, and a dropped one is gone from pg_database.
 * Only the database's owner (or a superuser) pauses it: others cannot run
 * those statements, and must not stop its maintenance by trying.
 *
 * Locking: the launcher's spinlock, through mq_launcher_pause.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "mq.h"

/* longest pause of a database's maintenance for one statement */
#define MQ_PAUSE_MS 60000

/* the library was preloaded: the launcher and its shared memory exist */
static bool launcher_hooked = false;

/* this transaction created the extension: wake the launcher at commit */
static bool wake_at_commit = false;
/* databases this transaction paused, to resume at its end */
static Oid	paused[4];
static int	npaused = 0;

/* The database a statement needs alone, or NULL. */
static const char *
exclusive_database(Node *stmt)
{
	ListCell   *lc;

	if (IsA(stmt, DropdbStmt))
		return ((DropdbStmt *) stmt)->dbname;
	if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		return ((RenameStmt *) stmt)->subname;
	if (IsA(stmt, AlterDatabaseStmt))
	{
		foreach(lc, ((AlterDatabaseStmt *) stmt)->options)
			if (strcmp(lfirst_node(DefElem, lc)->defname, "tablespace") == 0)
				return ((AlterDatabaseStmt *) stmt)->dbname;
	}
	if (IsA(stmt, CreatedbStmt))
	{
		foreach(lc, ((CreatedbStmt *) stmt)->options)
			if (strcmp(lfirst_node(DefElem, lc)->defname, "template") == 0)
				return defGetString(lfirst_node(DefElem, lc));
	}
	return NULL;
}

/* Pause a database's maintenance and stop its worker. */
static void
pause_database(const char *name)
{
	Oid			dboid = get_database_oid(name, true);
	pid_t		pid;

	/*
	 * only for its owner (or a superuser), who may run these statements:
	 * anyone else would fail them anyway, after stopping the worker
	 */
	if (!OidIsValid(dboid) || npaused == lengthof(paused) ||
		!pg_database_ownercheck(dboid, GetUserId()))
		return;
	paused[npaused++] = dboid;
	pid = mq_launcher_pause(dboid, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), MQ_PAUSE_MS));
	if (pid != 0)
		(void) kill(pid, SIGTERM);
}

static void
launcher_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	for (int i = 0; i < npaused; i++)
		(void) mq_launcher_pause(paused[i], 0);
	if ((wake_at_commit && event == XACT_EVENT_COMMIT) || npaused > 0)
		mq_launcher_wake(wake_at_commit && event == XACT_EVENT_COMMIT);
	npaused = 0;
	wake_at_commit = false;
}

/* Before a utility statement: a database it needs alone is paused. */
void
mq_launcher_before_utility(Node *stmt)
{
	const char *exclusive;

	if (!launcher_hooked)
		return;
	exclusive = exclusive_database(stmt);
	if (exclusive != NULL)
		pause_database(exclusive);
}

/* After it: CREATE EXTENSION mq wakes the launcher at commit. */
void
mq_launcher_after_utility(Node *stmt)
{
	if (launcher_hooked && IsA(stmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) stmt)->extname, "mq") == 0)
		wake_at_commit = true;
}

void
mq_launcher_hook_init(void)
{
	RegisterXactCallback(launcher_xact_callback, NULL);
	launcher_hooked = true;
}
