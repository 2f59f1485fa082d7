/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  Running the extension's own catalog queries as the extension owner.
 *
 * Producers and consumers are granted EXECUTE on mq's functions, not
 * privileges on mq's catalog tables: a role that may commit a group's
 * offsets through mq.commit_offset must not be able to rewrite them with
 * UPDATE.  So the C code switches to the owner of schema mq around its
 * SPI calls, the way PostgreSQL itself runs maintenance as the table
 * owner, with SECURITY_RESTRICTED_OPERATION set.  An error restores the
 * caller's identity when the (sub)transaction aborts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mq.h"

Oid
mq_owner(void)
{
	static Oid	owner = InvalidOid;

	if (!OidIsValid(owner))
	{
		HeapTuple	tup = SearchSysCache1(NAMESPACEOID,
										  ObjectIdGetDatum(get_namespace_oid("mq", false)));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "mq: schema mq not found");
		owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
		ReleaseSysCache(tup);
	}
	return owner;
}

static void
spi_begin(MqSpiSave *save, int sec_flags)
{
	Oid			owner = mq_owner();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "mq: SPI_connect failed");
	GetUserIdAndSecContext(&save->user, &save->sec_context);
	SetUserIdAndSecContext(owner, save->sec_context | sec_flags);
	save->guc_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

/* SPI_connect and become the extension owner; save says whom to restore. */
void
mq_spi_begin(MqSpiSave *save)
{
	spi_begin(save, SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
}

/*
 * The same as the owner would run a SECURITY DEFINER function: for the
 * SQL implementations that owner.c calls after its checks.
 */
void
mq_spi_begin_definer(MqSpiSave *save)
{
	spi_begin(save, SECURITY_LOCAL_USERID_CHANGE);
}

void
mq_spi_end(MqSpiSave *save)
{
	SPI_finish();
	AtEOXact_GUC(true, save->guc_nestlevel);
	SetUserIdAndSecContext(save->user, save->sec_context);
}

SPIPlanPtr
mq_spi_prepare(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "mq: SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/*
 * Run a one-row, one-column int8 query with a cached plan, as the extension
 * owner and with the latest snapshot; false if there is no row or it is null.
 */
bool
mq_spi_get_int64(SPIPlanPtr *plan, const char *sql, int nargs, Oid *argtypes,
				 Datum *args, int64 *result)
{
	bool		isnull = true;
	MqSpiSave	spi;

	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (*plan == NULL)
		*plan = mq_spi_prepare(sql, nargs, argtypes);
	if (SPI_execute_plan(*plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: query failed: %s", sql);
	if (SPI_processed == 1)
		*result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	mq_spi_end(&spi);
	PopActiveSnapshot();
	return !isnull;
}
