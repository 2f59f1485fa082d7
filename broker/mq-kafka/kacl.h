/*-------------------------------------------------------------------------
 *
 * kacl.h
 *	  Kafka's ACL model on mq's grants (kacl.c): codes to names, filters,
 *	  and the flexible (v2+) encodings the ACL APIs share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KACL_H
#define MQK_KACL_H

#include "kjob.h"
#include "mqkafka.h"

/* one ACL binding or filter, decoded; names are mq's (NULL: any) */
typedef struct KAcl
{
	int8_t		resource_type;	/* Kafka's codes, as sent */
	int8_t		pattern_type;
	int8_t		operation;
	int8_t		permission;
	KSlice		resource_name;
	KSlice		principal;
	KSlice		host;
	int16_t		error;			/* decided before the database */
	const char *message;		/* with error */
	bool		matches_nothing;	/* a filter only mq cannot hold */
	int			stmt;			/* its statement, or -1 */
} KAcl;

/* reading and writing, compact from v2 on */
extern int32_t kacl_array(KReader *r, bool flex);
extern KSlice kacl_str(KReader *r, bool flex);
extern void kacl_end_struct(KReader *r, bool flex);
extern void kacl_w_array(KWriter *w, bool flex, int32_t n);
extern void kacl_w_str(KWriter *w, bool flex, const char *s);
extern void kacl_w_tags(KWriter *w, bool flex);

/* decode one binding (create) or filter (describe, delete) */
extern void kacl_read(KReader *r, int16_t version, bool filter, KAcl *a);
/* check a creation; false with a->error and a->message set if refused */
extern bool kacl_check_binding(KAcl *a);
/* check a filter; false with a->error set if malformed */
extern bool kacl_check_filter(KAcl *a);

/* mq's names of Kafka's codes (NULL: none) and back */
extern const char *kacl_type_name(int8_t code);
extern const char *kacl_op_name(int8_t code);
extern const char *kacl_perm_name(int8_t code);
extern const char *kacl_pattern_name(int8_t code);
extern int8_t kacl_type_code(const char *name);
extern int8_t kacl_op_code(const char *name);
extern int8_t kacl_perm_code(const char *name);
extern int8_t kacl_pattern_code(const char *name);

/* a filter's six parameters ($1..$6 of KACL_MATCH_SQL) on s */
extern void kacl_filter_params(KStmt *s, const KAcl *a);
/* the grantee mq.grant takes for a binding's principal: a role or PUBLIC */
extern char *kacl_grantee(const KAcl *a);
/* an ACL statement's Kafka error: kstmt_cluster_error's, and an unknown
 * role or a name mq refuses INVALID_REQUEST */
extern int16_t kacl_stmt_error(const KStmt *s, const char **message);

/*
 * The grants a filter matches, from mq.grants as the principal's role
 * sees them: resource_type, pattern_type, resource_name, role (NULL for
 * PUBLIC), operation, permission, grantee (as mq.grant takes it).
 */
#define KACL_MATCH_SQL \
	"SELECT g.resource_type, g.pattern_type, g.resource_name," \
	" CASE WHEN g.grantee = 'PUBLIC' THEN NULL ELSE" \
	"  (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = g.grantee::pg_catalog.regrole) END AS role," \
	" g.operation, g.permission, g.grantee" \
	" FROM mq.grants g" \
	" WHERE ($1::text IS NULL OR g.resource_type = $1)" \
	" AND ($2::text IS NULL OR CASE $3::text" \
	"  WHEN 'match' THEN (g.pattern_type = 'literal' AND g.resource_name IN ($2, '*'))" \
	"   OR (g.pattern_type = 'prefixed' AND pg_catalog.starts_with($2, g.resource_name))" \
	"  ELSE g.resource_name = $2 END)" \
	" AND ($3 IN ('match', 'any') OR g.pattern_type = $3)" \
	" AND ($4::text IS NULL OR CASE WHEN $4 = '*' THEN g.grantee = 'PUBLIC'" \
	"  ELSE g.grantee <> 'PUBLIC' AND g.grantee::pg_catalog.regrole::pg_catalog.oid =" \
	"   (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = $4) END)" \
	" AND ($5::text IS NULL OR g.operation = $5)" \
	" AND ($6::text IS NULL OR g.permission = $6)"

/* Kafka's one cluster resource, and SQL for whether the client's role
 * has operation op (an SQL text expression) on it: a boolean */
#define KACL_CLUSTER "kafka-cluster"
#define KACL_CLUSTER_PRIVILEGE_SQL(op) \
	"mq._has_privilege(current_user::regrole::oid, 'cluster', '" KACL_CLUSTER "', " op ")"

/*
 * A statement at the end of job asking whether the client's role has
 * operation op ("alter", "describe") on the cluster, and its outcome once
 * run: KERR_NONE, CLUSTER_AUTHORIZATION_FAILED, or the statement's error.
 */
extern void kacl_add_cluster_check(KJob *job, const char *op);
extern int16_t kacl_cluster_code(const KStmt *st);

#endif							/* MQK_KACL_H */
