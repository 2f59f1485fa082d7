/*-------------------------------------------------------------------------
 *
 * kdb.c
 *	  The handlers' way to run a statement on a worker's connection,
 *	  through broker/common's libpq layer.  A NULL connection (the
 *	  database is down) fails like a lost connection, so handlers answer
 *	  with a retriable Kafka error.  Worker threads only.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <string.h>

#include "util.h"

PGresult *
kdb_exec(PGconn *db, const char *sql, const MqParams *params, int result_format,
		 MqError *err)
{
	if (db == NULL)
	{
		memset(err, 0, sizeof(*err));
		err->connection_lost = true;
		err->message = mq_strdup("no database connection");
		return NULL;
	}
	return mq_exec(db, sql, params, result_format, err);
}
