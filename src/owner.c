/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  SQL functions that check the caller's rights and then run their SQL
 *	  implementation as the extension owner.
 *
 * Administration (create_topic, ...) and the group protocol (join_group,
 * ...) are written in PL/pgSQL and must write mq's catalog, which callers
 * may not touch.  A SECURITY DEFINER function would do that, but inside it
 * the caller's identity is gone, and the authorization of acl.c needs it.
 * So the public function is this C wrapper: it runs mq_internal.NAME(args...,
 * caller) through SPI as the owner (as SECURITY DEFINER would: user id
 * switched, search_path pinned), passing the caller's role as a last
 * argument; the implementation checks that role's rights with
 * mq._authorize() before it changes anything.  The implementations live in
 * schema mq_internal, which only the owner may use, so the check cannot be
 * skipped by calling them directly.  Errors restore the caller's identity when the
 * (sub)transaction aborts.  No locks of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_call_as_owner);

#define MAX_WRAPPED_ARGS 16

typedef struct Wrapped
{
	Oid			fn;				/* hash key: the public function */
	SPIPlanPtr	plan;			/* SELECT ... mq_internal.NAME($1, ..., $n+1) */
	int			nargs;
	Oid			argtypes[MAX_WRAPPED_ARGS + 1];
	bool		retset;
	bool		retvoid;
	bool		typbyval;
	int16		typlen;
} Wrapped;

static HTAB *wrapped = NULL;

static Wrapped *
wrapped_lookup(Oid fn)
{
	HASHCTL		ctl;

	if (wrapped == NULL)
	{
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(Wrapped);
		ctl.hcxt = TopMemoryContext;
		wrapped = hash_create("mq wrapped functions", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return hash_search(wrapped, &fn, HASH_FIND, NULL);
}

/* Build the call of mq_internal.NAME; runs inside the owner's SPI connection. */
static Wrapped *
wrapped_prepare(FunctionCallInfo fcinfo)
{
	Oid			fn = fcinfo->flinfo->fn_oid;
	Oid		   *argtypes;
	int			nargs;
	Oid			rettype = get_func_signature(fn, &argtypes, &nargs);
	StringInfoData sql;
	Wrapped    *w;
	bool		found;

	if (nargs > MAX_WRAPPED_ARGS)
		elog(ERROR, "mq: too many arguments to wrap %s", get_func_name(fn));
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %smq_internal.%s(", fcinfo->flinfo->fn_retset ? "* FROM " : "",
					 quote_identifier(get_func_name(fn)));
	for (int i = 0; i <= nargs; i++)
		appendStringInfo(&sql, "%s$%d", i ? ", " : "", i + 1);
	appendStringInfoChar(&sql, ')');

	w = hash_search(wrapped, &fn, HASH_ENTER, &found);
	w->nargs = nargs;
	memcpy(w->argtypes, argtypes, nargs * sizeof(Oid));
	w->argtypes[nargs] = OIDOID;
	w->retset = fcinfo->flinfo->fn_retset;
	w->retvoid = (rettype == VOIDOID);
	get_typlenbyval(rettype, &w->typlen, &w->typbyval);
	w->plan = NULL;
	w->plan = mq_spi_prepare(sql.data, nargs + 1, w->argtypes);
	return w;
}

/* Copy the implementation's rows into the caller's tuplestore. */
static void
return_rows(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
}

Datum
mq_call_as_owner(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	Datum		args[MAX_WRAPPED_ARGS + 1];
	char		nulls[MAX_WRAPPED_ARGS + 1];
	Datum		result = (Datum) 0;
	bool		isnull = true;
	MqSpiSave	spi;
	Wrapped    *w;

	if (fcinfo->flinfo->fn_retset)
		InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	mq_spi_begin_definer(&spi);
	w = wrapped_lookup(fcinfo->flinfo->fn_oid);
	if (w == NULL || w->plan == NULL)
		w = wrapped_prepare(fcinfo);
	for (int i = 0; i < w->nargs; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	args[w->nargs] = ObjectIdGetDatum(caller);
	nulls[w->nargs] = ' ';
	if (SPI_execute_plan(w->plan, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "mq: calling the implementation of %s failed",
			 get_func_name(fcinfo->flinfo->fn_oid));
	if (w->retset)
		return_rows(fcinfo);
	else if (SPI_processed == 1)
	{
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull && !w->retvoid)
			result = SPI_datumTransfer(result, w->typbyval, w->typlen);
	}
	mq_spi_end(&spi);
	if (w->retset)
		return (Datum) 0;
	if (w->retvoid)
		PG_RETURN_VOID();
	if (isnull)
		PG_RETURN_NULL();
	return result;
}
