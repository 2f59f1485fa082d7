/*-------------------------------------------------------------------------
 *
 * twophase.c
 *	  Finishing mq's prepared transactions: mq.txn_finish(gid, commit),
 *	  the one way mq-broker's recovery and mqctl pipeline commit or roll
 *	  back the parts of an exactly-once step across nodes
 *	  (docs/delivery.md, "Exactly-once in a cluster"; the decision lives
 *	  on the coordinator, src/sql/64_twophase.sql).
 *
 * COMMIT PREPARED wants the role that prepared the transaction or a
 * superuser, and the broker is neither; so the function is SECURITY
 * DEFINER (owned by the extension owner) and calls PostgreSQL's
 * FinishPreparedTransaction itself, for gids starting with "mq:" only
 * (MQ050 otherwise), and only as a statement of its own (MQ052 inside a
 * transaction block: like COMMIT PREPARED, its effect cannot be undone
 * by the surrounding transaction).  A gid that is not prepared (any more)
 * returns false, so that recovery and the client may both try.
 *
 * A committed prepared transaction wakes nothing by itself: the commit
 * callbacks that announce new records and offsets (notify.c) ran at
 * PREPARE, and COMMIT PREPARED runs none.  So a commit here wakes every
 * waiter of the server (long polls, followers' fetches, acks=all waits).
 * The session's pending acknowledgements become the finished
 * transaction's own notes (commit_wait.c kept them at PREPARE, by
 * transaction id): a commit's, for mq.await_commit to wait for; none
 * after a rollback, or when another session prepared it.
 *
 * Locking: FinishPreparedTransaction's own (the gid is locked while it is
 * finished; a concurrent finish of the same gid fails with PostgreSQL's
 * error).  The prepared transaction's locks (produce locks, claims, rows)
 * are released by the finish.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_txn_finish);

/* The transaction id of gid, prepared in this database; invalid if none. */
static TransactionId
prepared_xid(const char *gid)
{
	static SPIPlanPtr plan = NULL;
	Datum		arg = CStringGetTextDatum(gid);
	Oid			argtype = TEXTOID;
	int64		xid = InvalidTransactionId;

	(void) mq_spi_get_int64(&plan,
							"SELECT pg_catalog.min(transaction::text::bigint) FROM pg_catalog.pg_prepared_xacts "
							"WHERE gid OPERATOR(pg_catalog.=) $1 "
							"AND database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
							1, &argtype, &arg, &xid);
	return (TransactionId) xid;
}

/* mq.txn_finish(gid, commit): COMMIT PREPARED or ROLLBACK PREPARED of an mq gid */
Datum
mq_txn_finish(PG_FUNCTION_ARGS)
{
	char	   *gid;
	bool		commit;
	TransactionId xid;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("gid and commit must not be null")));
	gid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	commit = PG_GETARG_BOOL(1);
	if (strncmp(gid, "mq:", 3) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_NOT_MQ_TRANSACTION),
				 errmsg("prepared transaction \"%s\" is not an mq transaction", gid),
				 errhint("mq.txn_finish finishes gids starting with \"mq:\" only; "
						 "use COMMIT PREPARED or ROLLBACK PREPARED as the transaction's owner.")));
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_MQ_IN_TRANSACTION_BLOCK),
				 errmsg("mq.txn_finish cannot run inside a transaction block"),
				 errhint("Call it as a statement of its own.")));
	xid = prepared_xid(gid);
	if (!TransactionIdIsValid(xid))
		PG_RETURN_BOOL(false);
	FinishPreparedTransaction(gid, commit);
	if (commit)
		mq_notify_all();
	mq_commit_wait_finished(xid, commit);
	PG_RETURN_BOOL(true);
}
