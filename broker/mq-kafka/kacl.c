/*-------------------------------------------------------------------------
 *
 * kacl.c
 *	  Kafka's ACL model on mq's grants (mq.grant, mq.revoke, mq.grants;
 *	  docs/kafka.md "ACLs"), shared by DescribeAcls, CreateAcls and
 *	  DeleteAcls (h_acl.c).
 *
 * One to one where mq has the thing: resource types TOPIC, GROUP,
 * CLUSTER (named kafka-cluster) and TRANSACTIONAL_ID; pattern types LITERAL and PREFIXED
 * (filters also ANY and MATCH); operations ALL, READ, WRITE, CREATE,
 * DELETE, ALTER and DESCRIBE; ALLOW and DENY; principal User:NAME is the
 * PostgreSQL role NAME (the name after --principal-rules: an ACL names
 * the principal as Kafka's authorizer sees it), User:* is PUBLIC; host
 * '*' only.  A binding mq cannot hold (DELEGATION_TOKEN and USER
 * resources; CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
 * IDEMPOTENT_WRITE and the token operations; another principal type; a
 * host) is refused with INVALID_REQUEST and a message before the
 * database is asked; a filter for one matches nothing.
 *
 * Loop thread only; no state.
 *
 *-------------------------------------------------------------------------
 */
#include "kacl.h"

#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "mq_sqlstates.h"
#include "util.h"

/* Kafka's codes (AclOperation, ResourceType, PatternType, AclPermissionType) */
#define K_ANY 1
#define K_PATTERN_MATCH 2

static const char *const types[] = {NULL, NULL, "topic", "group", "cluster", "transactional_id"};
static const char *const patterns[] = {NULL, NULL, NULL, "literal", "prefixed"};
static const char *const ops[] = {NULL, NULL, "all", "read", "write", "create", "delete",
								  "alter", "describe"};
static const char *const perms[] = {NULL, NULL, "deny", "allow"};

#define NAMES(a) ((int) (sizeof(a) / sizeof(a[0])))

static const char *
name_of(const char *const *names, int n, int8_t code)
{
	return code >= 0 && code < n ? names[code] : NULL;
}

static int8_t
code_of(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (names[i] && name && strcmp(names[i], name) == 0)
			return (int8_t) i;
	return 0;
}

const char *
kacl_type_name(int8_t c)
{
	return name_of(types, NAMES(types), c);
}
const char *
kacl_op_name(int8_t c)
{
	return name_of(ops, NAMES(ops), c);
}
const char *
kacl_perm_name(int8_t c)
{
	return name_of(perms, NAMES(perms), c);
}
const char *
kacl_pattern_name(int8_t c)
{
	return c == K_ANY ? "any" : c == K_PATTERN_MATCH ? "match" : name_of(patterns, NAMES(patterns), c);
}
int8_t
kacl_type_code(const char *n)
{
	return code_of(types, NAMES(types), n);
}
int8_t
kacl_op_code(const char *n)
{
	return code_of(ops, NAMES(ops), n);
}
int8_t
kacl_perm_code(const char *n)
{
	return code_of(perms, NAMES(perms), n);
}
int8_t
kacl_pattern_code(const char *n)
{
	return code_of(patterns, NAMES(patterns), n);
}

int32_t
kacl_array(KReader *r, bool flex)
{
	if (flex)
	{
		uint64_t	n = kr_uvarint(r);

		if (n > kr_left(r) / 7 + 1)
			r->err = true;
		return r->err ? 0 : (int32_t) n - 1;
	}
	return kr_array(r, 7);
}

KSlice
kacl_str(KReader *r, bool flex)
{
	return flex ? kr_compact_str(r) : kr_str(r);
}

void
kacl_end_struct(KReader *r, bool flex)
{
	if (flex)
		kr_skip_tags(r);
}

void
kacl_w_array(KWriter *w, bool flex, int32_t n)
{
	if (flex)
		kw_uvarint(w, (uint64_t) n + 1);
	else
		kw_i32(w, n);
}

void
kacl_w_str(KWriter *w, bool flex, const char *s)
{
	if (flex)
		kw_compact_str(w, s);
	else
		kw_str(w, s);
}

void
kacl_w_tags(KWriter *w, bool flex)
{
	if (flex)
		kw_uvarint(w, 0);
}

void
kacl_read(KReader *r, int16_t version, bool filter, KAcl *a)
{
	bool		flex = version >= 2;

	memset(a, 0, sizeof(*a));
	a->stmt = -1;
	a->resource_type = kr_i8(r);
	a->resource_name = kacl_str(r, flex);
	a->pattern_type = version >= 1 ? kr_i8(r) : 3;	/* v0: LITERAL */
	a->principal = kacl_str(r, flex);
	a->host = kacl_str(r, flex);
	a->operation = kr_i8(r);
	a->permission = kr_i8(r);
	kacl_end_struct(r, flex);
	(void) filter;
}

static bool
refuse(KAcl *a, const char *message)
{
	a->error = KERR_INVALID_REQUEST;
	a->message = message;
	return false;
}

/* User:NAME, NAME not empty; false otherwise */
static bool
user_principal(KSlice p)
{
	return p.len > 5 && memcmp(p.p, "User:", 5) == 0;
}

bool
kacl_check_binding(KAcl *a)
{
	if (a->resource_type >= 6 && a->resource_type <= 7)
		return refuse(a, "mq has no grants on this resource type: topic, group, cluster and transactional id only");
	if (kacl_type_name(a->resource_type) == NULL)
		return refuse(a, "unknown or filter-only resource type");
	if (kacl_pattern_name(a->pattern_type) == NULL || a->pattern_type <= K_PATTERN_MATCH)
		return refuse(a, "a binding's pattern type is literal or prefixed");
	if (a->operation >= 9 && a->operation <= 14)
		return refuse(a, "mq has no such operation: all, read, write, create, delete, alter and describe only");
	if (kacl_op_name(a->operation) == NULL)
		return refuse(a, "unknown or filter-only operation");
	if (kacl_perm_name(a->permission) == NULL)
		return refuse(a, "a binding's permission type is allow or deny");
	if (a->resource_name.len <= 0)
		return refuse(a, "a resource name is required");
	if (a->resource_type == 4 && !kslice_eq(a->resource_name, KACL_CLUSTER))
		return refuse(a, "the cluster resource is named " KACL_CLUSTER);
	if (!user_principal(a->principal))
		return refuse(a, "principals are User:ROLE (or User:* for every role)");
	if (!kslice_eq(a->host, "*"))
		return refuse(a, "mq's grants hold no host: only host * is supported");
	return true;
}

bool
kacl_check_filter(KAcl *a)
{
	if (a->resource_type >= 6 && a->resource_type <= 7)
		a->matches_nothing = true;
	else if (a->resource_type != K_ANY && kacl_type_name(a->resource_type) == NULL)
		return refuse(a, "unknown resource type");
	if (kacl_pattern_name(a->pattern_type) == NULL)
		return refuse(a, "unknown pattern type");
	if (a->operation >= 9 && a->operation <= 14)
		a->matches_nothing = true;
	else if (a->operation != K_ANY && kacl_op_name(a->operation) == NULL)
		return refuse(a, "unknown operation");
	if (a->permission != K_ANY && kacl_perm_name(a->permission) == NULL)
		return refuse(a, "unknown permission type");
	/* mq holds host * and User: principals only: other filters match nothing */
	if ((a->host.len >= 0 && !kslice_eq(a->host, "*")) ||
		(a->principal.len >= 0 && !user_principal(a->principal)))
		a->matches_nothing = true;
	return true;
}

void
kacl_filter_params(KStmt *s, const KAcl *a)
{
	char	   *name = kslice_dup(a->resource_name);
	char	   *principal = NULL;

	if (a->principal.len > 5)
		principal = kacl_grantee(a);
	kstmt_text(s, MQ_TEXTOID, a->resource_type == K_ANY ? NULL : kacl_type_name(a->resource_type));
	kstmt_text(s, MQ_TEXTOID, name);
	kstmt_text(s, MQ_TEXTOID, kacl_pattern_name(a->pattern_type));
	kstmt_text(s, MQ_TEXTOID, principal);
	kstmt_text(s, MQ_TEXTOID, a->operation == K_ANY ? NULL : kacl_op_name(a->operation));
	kstmt_text(s, MQ_TEXTOID, a->permission == K_ANY ? NULL : kacl_perm_name(a->permission));
	free(name);
	free(principal);
}

char *
kacl_grantee(const KAcl *a)
{
	KSlice		name = a->principal;

	name.p += 5;
	name.len -= 5;
	return kslice_dup(name);
}

int16_t
kacl_stmt_error(const KStmt *s, const char **message)
{
	int16_t		code = kstmt_cluster_error(s, message);

	/* an unknown role (42704), a name mq refuses: the request's fault */
	if (code != KERR_NONE && code != KERR_CLUSTER_AUTHORIZATION_FAILED &&
		(strcmp(s->err.sqlstate, "42704") == 0 || mq_error_is(&s->err, MQ_SQLSTATE_INVALID_ARGUMENT) ||
		 strcmp(s->err.sqlstate, "22023") == 0))
		return KERR_INVALID_REQUEST;
	return code;
}

void
kacl_add_cluster_check(KJob *job, const char *op)
{
	kstmt_text(kjob_add(job, "SELECT " KACL_CLUSTER_PRIVILEGE_SQL("$1"), 0), MQ_TEXTOID, op);
}

int16_t
kacl_cluster_code(const KStmt *st)
{
	int16_t		code;

	if (kstmt_failed(st, &code))
		return code;
	return strcmp(PQgetvalue(st->res, 0, 0), "t") == 0 ? KERR_NONE : KERR_CLUSTER_AUTHORIZATION_FAILED;
}
