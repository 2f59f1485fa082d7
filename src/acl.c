/*-------------------------------------------------------------------------
 *
 * acl.c
 *	  Kafka's authorization model on PostgreSQL roles: who may READ,
 *	  WRITE, DESCRIBE, CREATE, ALTER or DELETE which topic or group.
 *
 * Grants live in the catalog table mq.acl (resource type, literal or
 * prefixed name, grantee role or PUBLIC, operation, allow or deny), and
 * are made with mq.grant()/mq.revoke() (src/sql/90_acl.sql).  A role's
 * rights on one resource are the union of the rows whose grantee it has
 * the privileges of (role membership with INHERIT, as has_table_privilege
 * counts it), minus the denied ones; READ, WRITE, ALTER and DELETE imply
 * DESCRIBE, as in Kafka.  Superusers, roles with the privileges of the
 * extension owner, and a topic's owner (its creator) have every right.
 *
 * The hot paths (produce, fetch, poll, commits) check in C against a
 * per-backend cache keyed by (role, resource type, name).  The cache is
 * dropped whenever mq.acl or mq.topic changes (a statement trigger on
 * mq.acl and the topic DDL send relcache invalidations) and whenever
 * role memberships or role attributes change (syscache callbacks).  Each
 * check first takes in the invalidations other sessions have committed
 * (AcceptInvalidationMessages: a cheap look at a flag when there are
 * none), and a cache miss reads mq.acl and mq.topic with the latest
 * snapshot, not the transaction's, as PostgreSQL's own privilege checks
 * read the catalogs: so a REVOKE takes effect in every other session at
 * its next check, also inside a transaction that was already open, at
 * REPEATABLE READ or SERIALIZABLE too.  No locks are taken beyond the
 * catalog reads of a cache miss.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_has_privilege_sql);
PG_FUNCTION_INFO_V1(mq_authorize_sql);
PG_FUNCTION_INFO_V1(mq_acl_changed);
PG_FUNCTION_INFO_V1(mq_describable_sql);

typedef struct AclKey
{
	Oid			role;
	char		restype;		/* 't' topic, 'g' group, 'c' cluster, 'x' transactional id */
	char		name[256];
} AclKey;

typedef struct AclEntry
{
	AclKey		key;
	int			rights;			/* MQ_ACL_* bits the role has */
} AclEntry;

static HTAB *acl_cache = NULL;
static Oid	acl_relid = InvalidOid;	/* mq.acl and mq.topic, known once the */
static Oid	topic_relid = InvalidOid;	/* cache has been built */

static void
acl_cache_reset(void)
{
	if (acl_cache != NULL)
	{
		hash_destroy(acl_cache);
		acl_cache = NULL;
	}
}

static void
acl_relcache_callback(Datum arg, Oid relid)
{
	/* mq.acl or mq.topic (ownership) changed, or everything did */
	if (acl_cache != NULL &&
		(!OidIsValid(relid) || relid == acl_relid || relid == topic_relid))
		acl_cache_reset();
}

static void
acl_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	acl_cache_reset();
}

void
mq_acl_init(void)
{
	CacheRegisterRelcacheCallback(acl_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, acl_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, acl_syscache_callback, (Datum) 0);
}

static const char *const op_names[] = {"read", "write", "describe", "create", "alter", "delete"};

/* "read" -> MQ_ACL_READ, "all" -> every bit; 0 for an unknown name */
int
mq_acl_op_from_name(const char *name)
{
	if (pg_strcasecmp(name, "all") == 0)
		return MQ_ACL_ALL;
	for (int i = 0; i < lengthof(op_names); i++)
		if (pg_strcasecmp(name, op_names[i]) == 0)
			return 1 << i;
	return 0;
}

static const char *
op_name(int op)
{
	for (int i = 0; i < lengthof(op_names); i++)
		if (op == (1 << i))
			return op_names[i];
	return "all";
}

static const char *
restype_name(char restype)
{
	return restype == 't' ? "topic" : restype == 'g' ? "group" :
		restype == 'x' ? "transactional_id" : "cluster";
}

static char
restype_from_name(const char *name)
{
	if (strcmp(name, "topic") == 0)
		return 't';
	if (strcmp(name, "group") == 0)
		return 'g';
	if (strcmp(name, "cluster") == 0)
		return 'c';
	if (strcmp(name, "transactional_id") == 0)
		return MQ_RES_TXN_ID;
	ereport(ERROR,
			(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
			 errmsg("unknown resource type \"%s\"", name),
			 errhint("Resource types are topic, group, cluster and transactional_id.")));
	return 0;					/* keep the compiler quiet */
}

/*
 * Run a read-only catalog query with the latest snapshot: grants are read
 * as committed now, not as the caller's (repeatable read) snapshot saw them.
 */
static void
acl_read_latest(const char *sql, int nargs, Oid *argtypes, Datum *args, long tcount)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);
	Snapshot	snap;
	int			rc;

	if (plan == NULL)
		elog(ERROR, "mq: preparing an acl query failed");
	snap = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(plan, args, NULL, snap, InvalidSnapshot, true, false, tcount);
	UnregisterSnapshot(snap);
	SPI_freeplan(plan);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "mq: reading the acl catalogs failed");
}

/* Does role have the privileges of the topic's owner?  Catalog read. */
static bool
owns_topic(Oid role, const char *name)
{
	Datum		arg[1] = {CStringGetTextDatum(name)};
	Oid			argtype[1] = {TEXTOID};
	Oid			owner = InvalidOid;
	bool		isnull = true;
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	acl_read_latest("SELECT t.owner::oid FROM mq.topic t "
					"WHERE t.topic_name OPERATOR(pg_catalog.=) $1",
					1, argtype, arg, 1);
	if (SPI_processed == 1)
		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1, &isnull));
	mq_spi_end(&spi);
	return !isnull && OidIsValid(owner) && has_privs_of_role(role, owner);
}

/* The union of mq.acl rows matching the resource whose grantee role has. */
static int
granted_rights(Oid role, char restype, const char *name)
{
	static const char *sql =
		"SELECT a.operation, a.permission OPERATOR(pg_catalog.=) 'deny', a.grantee::oid "
		"FROM mq.acl a WHERE a.resource_type = $1 AND "
		"((a.pattern_type = 'literal' AND a.resource_name IN ($2, '*')) OR "
		" (a.pattern_type = 'prefixed' AND pg_catalog.starts_with($2, a.resource_name)))";
	Datum		args[2] = {CStringGetTextDatum(restype_name(restype)),
					 CStringGetTextDatum(name)};
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	int			allow = 0,
				deny = 0;
	MqSpiSave	spi;

	mq_spi_begin(&spi);
	acl_read_latest(sql, 2, argtypes, args, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			op = mq_acl_op_from_name(SPI_getvalue(tup, desc, 1));
		bool		is_deny = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		Datum		grantee = SPI_getbinval(tup, desc, 3, &isnull);

		/* NULL grantee: PUBLIC */
		if (!isnull && !has_privs_of_role(role, DatumGetObjectId(grantee)))
			continue;
		if (is_deny)
			deny |= op;
		else
			allow |= op;
	}
	mq_spi_end(&spi);
	/* READ, WRITE, ALTER and DELETE imply DESCRIBE (Kafka's rule) */
	if (allow & (MQ_ACL_READ | MQ_ACL_WRITE | MQ_ACL_ALTER | MQ_ACL_DELETE))
		allow |= MQ_ACL_DESCRIBE;
	return allow & ~deny;
}

static int
compute_rights(Oid role, char restype, const char *name)
{
	int			rights;

	if (superuser_arg(role) || has_privs_of_role(role, mq_owner()))
		return MQ_ACL_ALL;
	if (restype == 't' && owns_topic(role, name))
		return MQ_ACL_ALL;
	rights = granted_rights(role, restype, name);
	/* monitoring (postgres_exporter's role) sees every topic and group */
	if (has_privs_of_role(role, ROLE_PG_MONITOR))
		rights |= MQ_ACL_DESCRIBE;
	return rights;
}

/* The rights role has on a resource, from the cache. */
static int
rights_of(Oid role, char restype, const char *name)
{
	AclKey		key;
	AclEntry   *e;
	bool		found;

	/* revokes and role changes committed since the last check */
	AcceptInvalidationMessages();
	if (strlen(name) >= sizeof(key.name))
		return compute_rights(role, restype, name);	/* never a real name */
	if (acl_cache == NULL)
	{
		HASHCTL		ctl;

		acl_relid = get_relname_relid("acl", get_namespace_oid("mq", false));
		topic_relid = get_relname_relid("topic", get_namespace_oid("mq", false));
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(AclKey);
		ctl.entrysize = sizeof(AclEntry);
		ctl.hcxt = CacheMemoryContext;
		acl_cache = hash_create("mq acl cache", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.role = role;
	key.restype = restype;
	strlcpy(key.name, name, sizeof(key.name));
	e = hash_search(acl_cache, &key, HASH_FIND, NULL);
	if (e != NULL)
		return e->rights;
	{
		int			rights = compute_rights(role, restype, name);

		/* the computation may have reset the cache (invalidations) */
		if (acl_cache == NULL)
			return rights;
		e = hash_search(acl_cache, &key, HASH_ENTER, &found);
		e->rights = rights;
		return rights;
	}
}

bool
mq_acl_allowed(Oid role, char restype, const char *name, int op)
{
	int			rights = rights_of(role, restype, name);

	/* creating a topic: CREATE on the topic, or on the cluster */
	if (!(rights & op) && restype == 't' && op == MQ_ACL_CREATE)
		rights = rights_of(role, MQ_RES_CLUSTER, MQ_CLUSTER_NAME);
	return (rights & op) == op;
}

/* Raise 42501 unless role may do op on the resource. */
void
mq_acl_check_role(Oid role, char restype, const char *name, int op)
{
	char	   *rolename;

	if (mq_acl_allowed(role, restype, name, op))
		return;
	rolename = GetUserNameFromId(role, true);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied: %s on %s \"%s\" for role \"%s\"", op_name(op),
					restype_name(restype), name, rolename ? rolename : "?"),
			 /* the kind of resource, for clients that map it (mq-kafka) */
			 err_generic_string(PG_DIAG_SCHEMA_NAME, "mq"),
			 err_generic_string(PG_DIAG_TABLE_NAME, restype_name(restype)),
			 errhint("An administrator or the topic's owner can run mq.grant('%s', '%s', '%s', '%s').",
					 op_name(op), restype_name(restype), name, rolename ? rolename : "?")));
}

void
mq_acl_check(char restype, const char *name, int op)
{
	mq_acl_check_role(GetUserId(), restype, name, op);
}

/* The topic, once the current user may do op on it (checked first). */
MqTopic *
mq_topic_authorized(text *name, int op)
{
	char	   *s = text_to_cstring(name);

	mq_acl_check(MQ_RES_TOPIC, s, op);
	return mq_topic_lookup(s, false);
}

void
mq_group_authorize(text *group, int op)
{
	mq_acl_check(MQ_RES_GROUP, text_to_cstring(group), op);
}

static int
op_arg(text *t)
{
	char	   *s = text_to_cstring(t);
	int			op = mq_acl_op_from_name(s);

	if (op == 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_INVALID_ARGUMENT),
				 errmsg("unknown operation \"%s\"", s),
				 errhint("Operations are read, write, describe, create, alter, delete and all.")));
	return op;
}

/*
 * Asking what another role may do needs that role's privileges or DESCRIBE
 * on the cluster (what mq.grants needs to list every grant): the answer
 * would otherwise tell who may use a topic the caller cannot even see.
 */
static void
check_may_ask_about(Oid role)
{
	Oid			me = GetUserId();

	if (role == me || has_privs_of_role(me, role) ||
		mq_acl_allowed(me, MQ_RES_CLUSTER, MQ_CLUSTER_NAME, MQ_ACL_DESCRIBE))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to ask about the rights of role \"%s\"",
					GetUserNameFromId(role, true) ? GetUserNameFromId(role, true) : "?"),
			 err_generic_string(PG_DIAG_SCHEMA_NAME, "mq"),
			 err_generic_string(PG_DIAG_TABLE_NAME, "cluster"),
			 errhint("Ask about a role whose privileges you have, or get describe on the cluster.")));
}

/* mq._has_privilege(role oid, resource_type, name, operation) */
Datum
mq_has_privilege_sql(PG_FUNCTION_ARGS)
{
	char		restype = restype_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));

	check_may_ask_about(PG_GETARG_OID(0));
	PG_RETURN_BOOL(mq_acl_allowed(PG_GETARG_OID(0), restype,
								  text_to_cstring(PG_GETARG_TEXT_PP(2)),
								  op_arg(PG_GETARG_TEXT_PP(3))));
}

/* mq._authorize(role oid, resource_type, name, operation): raise unless */
Datum
mq_authorize_sql(PG_FUNCTION_ARGS)
{
	char		restype = restype_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));

	mq_acl_check_role(PG_GETARG_OID(0), restype,
					  text_to_cstring(PG_GETARG_TEXT_PP(2)),
					  op_arg(PG_GETARG_TEXT_PP(3)));
	PG_RETURN_VOID();
}

/* Statement trigger on mq.acl and mq.topic: every backend drops its cache. */
Datum
mq_acl_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "mq._acl_changed() must be called as a trigger");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

/* mq._describable(resource_type, name): may the current user DESCRIBE it? */
Datum
mq_describable_sql(PG_FUNCTION_ARGS)
{
	char		restype = restype_from_name(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	PG_RETURN_BOOL(mq_acl_allowed(GetUserId(), restype,
								  text_to_cstring(PG_GETARG_TEXT_PP(1)),
								  MQ_ACL_DESCRIBE));
}
