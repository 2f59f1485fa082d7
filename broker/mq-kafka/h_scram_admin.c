/*-------------------------------------------------------------------------
 *
 * h_scram_admin.c
 *	  DescribeUserScramCredentials (API 50, v0) and
 *	  AlterUserScramCredentials (API 51, v0), Kafka's KIP-554, on mq's
 *	  SCRAM credentials (src/sql/91_scram.sql).  Both are flexible
 *	  versions: compact strings and arrays, tagged fields.  Loop thread.
 *
 * Both need what Kafka's need: DESCRIBE on the cluster to describe (else
 * a top-level CLUSTER_AUTHORIZATION_FAILED), ALTER on it to alter (else
 * CLUSTER_AUTHORIZATION_FAILED for each user, nothing altered), where SQL
 * lets a role see and change its own credentials.  Describe reads
 * mq.scram_credentials as the client's role; a user asked for and not
 * there is RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE.
 * Alter runs, per user, one statement (so one
 * transaction: a user's alterations all happen or none) of
 * mq.drop_scram_credential and mq.set_scram_keys with the verifier derived
 * here from the client's SaltedPassword (common/scram_keys.c): neither the
 * password nor SaltedPassword, which logs in as the user, reaches the
 * database or its log.  A SaltedPassword of the wrong length goes as empty
 * keys, which the database refuses (MQ060) after its other checks.
 * Mechanisms are Kafka's numbers: 1
 * SCRAM-SHA-256, 2 SCRAM-SHA-512.  Errors: an unknown mechanism
 * UNSUPPORTED_SASL_MECHANISM, the same user and mechanism twice
 * DUPLICATE_RESOURCE (decided here); MQ060 UNACCEPTABLE_CREDENTIAL, MQ061
 * UNSUPPORTED_SASL_MECHANISM, MQ062 RESOURCE_NOT_FOUND and 42501
 * CLUSTER_AUTHORIZATION_FAILED (from the database).
 *
 * Credentials are each node's, but Kafka's are the cluster's: in a
 * replicated cluster the statements that succeeded here run again on every
 * other live node, as the client's role (kmirror.c, as CreateAcls), so
 * that a client authenticates at whichever daemon leads its partitions.
 * The answer is this node's; a node down keeps what it had.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kacl.h"
#include "kerr.h"
#include "kmirror.h"
#include "scram_keys.h"
#include "util.h"

#define MAX_OPS 1000

static const char *
mech_name(int8_t m)
{
	return m == 1 ? "SCRAM-SHA-256" : m == 2 ? "SCRAM-SHA-512" : NULL;
}

static int8_t
mech_number(const char *name)
{
	return strcmp(name, "SCRAM-SHA-256") == 0 ? 1 : strcmp(name, "SCRAM-SHA-512") == 0 ? 2 : 0;
}

static void
kw_compact_slice(KWriter *w, KSlice s)
{
	kw_uvarint(w, s.len < 0 ? 0 : (uint64_t) s.len + 1);
	if (s.len > 0)
		kw_raw(w, s.p, (size_t) s.len);
}

/* a compact array's element count (its uvarint is n + 1; 0: null, -1) */
static int32_t
kr_compact_count(KReader *r)
{
	uint64_t	n = kr_uvarint(r);

	if (n > MAX_OPS + 1 || n - (n > 0) > kr_left(r))
		r->err = true;
	return r->err ? 0 : (int32_t) n - 1;
}

/* ---- DescribeUserScramCredentials ------------------------------------- */

typedef struct DescState
{
	KJob		job;
	int32_t		n;				/* -1: every user */
	KSlice	   *users;
} DescState;

static void
desc_state_free(void *p)
{
	DescState  *s = p;

	kjob_free(&s->job);
	free(s->users);
	free(s);
}

/* one result: user's rows of res (their mechanisms and iterations) */
static void
describe_user(KWriter *w, PGresult *res, KSlice user, int16_t code)
{
	int			count = 0;

	for (int i = 0; res && i < PQntuples(res); i++)
		count += kslice_eq(user, PQgetvalue(res, i, 0));
	if (code == KERR_NONE && count == 0)
		code = KERR_RESOURCE_NOT_FOUND;
	kw_compact_slice(w, user);
	kw_i16(w, code);
	kw_compact_str(w, code == KERR_RESOURCE_NOT_FOUND ? "attempt to describe a user credential that does not exist" : code == KERR_DUPLICATE_RESOURCE ? "user name given more than once" :
				   NULL);
	kw_uvarint(w, code == KERR_NONE ? (uint64_t) count + 1 : 1);
	for (int i = 0; code == KERR_NONE && i < PQntuples(res); i++)
		if (kslice_eq(user, PQgetvalue(res, i, 0)))
		{
			kw_i8(w, mech_number(PQgetvalue(res, i, 1)));
			kw_i32(w, atoi(PQgetvalue(res, i, 2)));
			kw_uvarint(w, 0);
		}
	kw_uvarint(w, 0);
}

static int16_t
desc_code(DescState *s, int32_t i)
{
	for (int32_t j = 0; j < s->n; j++)
		if (j != i && kslice_same(s->users[i], s->users[j]))
			return KERR_DUPLICATE_RESOURCE;
	return KERR_NONE;
}

static void
describe_done(KRequest *req)
{
	DescState  *s = req->state;
	KStmt	   *st = &s->job.stmts[0];
	KWriter    *w = &req->resp;
	const char *msg = NULL;
	int16_t		code = kacl_cluster_code(&s->job.stmts[1]);
	PGresult   *res;

	if (code == KERR_NONE)
		code = kstmt_cluster_error(st, &msg);
	res = code == KERR_NONE ? st->res : NULL;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_i16(w, code);
	kw_compact_str(w, msg);
	if (code != KERR_NONE)
		kw_uvarint(w, 1);
	else if (s->n < 0)
	{
		int			users = 0;

		for (int i = 0; i < PQntuples(res); i++)
			users += i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0;
		kw_uvarint(w, (uint64_t) users + 1);
		for (int i = 0; i < PQntuples(res); i++)
			if (i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0)
				describe_user(w, res, (KSlice){(const uint8_t *) PQgetvalue(res, i, 0),
							  PQgetlength(res, i, 0)}, KERR_NONE);
	}
	else
	{
		kw_uvarint(w, (uint64_t) s->n + 1);
		for (int32_t i = 0; i < s->n; i++)
			describe_user(w, res, s->users[i], desc_code(s, i));
	}
	kw_uvarint(w, 0);
	req_finish(req);
}

void
h_describe_user_scram_credentials(KRequest *req)
{
	KReader    *r = &req->body;
	DescState  *s = mq_malloc0(sizeof(DescState));

	req->state = s;
	req->free_state = desc_state_free;
	s->n = kr_compact_count(r);
	s->users = mq_malloc0(sizeof(KSlice) * (s->n > 0 ? s->n : 1));
	for (int32_t i = 0; i < s->n && !r->err; i++)
	{
		s->users[i] = kr_compact_str(r);
		kr_skip_tags(r);
	}
	kr_skip_tags(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	if (s->n == 0)
		s->n = -1;				/* an empty list asks for every user, as null does */
	kjob_add(&s->job, "SELECT user_name, mechanism, iterations FROM mq.scram_credentials ORDER BY 1, 2", 0);
	kacl_add_cluster_check(&s->job, "describe");
	pool_run(req, &s->job, describe_done);
}

/* ---- AlterUserScramCredentials ---------------------------------------- */

typedef struct AlterOp
{
	KSlice		user;
	int8_t		mech;
	bool		upsert;
	int32_t		iterations;
	KSlice		salt;
	KSlice		salted;
} AlterOp;

typedef struct AlterUser
{
	KSlice		user;
	int16_t		code;			/* decided here */
	int			stmt;			/* its statement, or -1 */
} AlterUser;

typedef struct AlterState
{
	KJob		job;
	KMirror		mirror;			/* in a cluster: the other nodes' */
	int			nops;
	AlterOp    *ops;
	int			nusers;
	AlterUser  *users;
} AlterState;

static void
alter_state_free(void *p)
{
	AlterState *s = p;

	kjob_free(&s->job);
	kmirror_free(&s->mirror);
	free(s->ops);
	free(s->users);
	free(s);
}

static void
alter_done(KRequest *req)
{
	AlterState *s = req->state;
	KWriter    *w = &req->resp;

	kw_i32(w, 0);				/* throttle_time_ms */
	kw_uvarint(w, (uint64_t) s->nusers + 1);
	for (int i = 0; i < s->nusers; i++)
	{
		AlterUser  *u = &s->users[i];
		KStmt	   *st = u->stmt >= 0 ? &s->job.stmts[u->stmt] : NULL;
		const char *msg = NULL;
		int16_t		code = st ? kstmt_cluster_error(st, &msg) : u->code;

		if (code == KERR_NONE && st && PQgetisnull(st->res, 0, 0))
		{
			code = KERR_CLUSTER_AUTHORIZATION_FAILED;	/* no ALTER on the cluster */
			msg = "altering SCRAM credentials needs ALTER on the cluster";
		}

		kw_compact_slice(w, u->user);
		kw_i16(w, code);
		kw_compact_str(w, msg);
		kw_uvarint(w, 0);
	}
	kw_uvarint(w, 0);
	req_finish(req);
}

/* append s to w as a quoted array element ("..." with \ and " escaped) */
static void
array_elem(KWriter *w, const char *prefix, const uint8_t *p, size_t len, bool hex)
{
	static const char digits[] = "0123456789abcdef";

	kw_raw(w, w->len > 1 ? ",\"" : "\"", w->len > 1 ? 2 : 1);
	kw_raw(w, prefix, strlen(prefix));
	for (size_t i = 0; i < len; i++)
	{
		if (hex)
		{
			kw_raw(w, &digits[p[i] >> 4], 1);
			kw_raw(w, &digits[p[i] & 15], 1);
		}
		else
		{
			if (p[i] == '"' || p[i] == '\\')
				kw_raw(w, "\\", 1);
			kw_raw(w, &p[i], 1);
		}
	}
	kw_raw(w, "\"", 1);
}

/* the user's statement: its deletions, then its upsertions, as arrays */
static void
plan_user(AlterState *s, AlterUser *u)
{
	KWriter		a[6];
	KStmt	   *st;
	char	   *name = kslice_dup(u->user);
	ScramKeys	keys;

	for (int k = 0; k < 6; k++)
	{
		kw_init(&a[k]);
		kw_raw(&a[k], "{", 1);
	}
	for (int i = 0; i < s->nops; i++)
	{
		AlterOp    *op = &s->ops[i];
		const char *m = mech_name(op->mech);
		char		it[16];

		if (!kslice_same(op->user, u->user))
			continue;
		array_elem(&a[op->upsert ? 1 : 0], "", (const uint8_t *) m, strlen(m), false);
		if (!op->upsert)
			continue;
		snprintf(it, sizeof(it), "%d", op->iterations);
		array_elem(&a[2], "", (const uint8_t *) it, strlen(it), false);
		array_elem(&a[3], "\\\\x", op->salt.p, op->salt.len > 0 ? (size_t) op->salt.len : 0, true);
		if (op->salted.len <= 0 ||
			!scram_keys_from_salted(m, op->salted.p, (size_t) op->salted.len, &keys))
			keys.len = 0;
		array_elem(&a[4], "\\\\x", keys.stored, (size_t) keys.len, true);
		array_elem(&a[5], "\\\\x", keys.server, (size_t) keys.len, true);
		explicit_bzero(&keys, sizeof(keys));
	}
	/* NULL, nothing run, without ALTER on the cluster */
	st = kjob_add(&s->job,
				  "SELECT CASE WHEN " KACL_CLUSTER_PRIVILEGE_SQL("'alter'") " THEN"
				  " (SELECT count(*) FROM (SELECT mq.drop_scram_credential($1, d) FROM pg_catalog.unnest($2::text[]) d) a)"
				  " + (SELECT count(*) FROM (SELECT mq.set_scram_keys($1, u.m, u.i, u.s, u.st, u.sv)"
				  " FROM ROWS FROM (pg_catalog.unnest($3::text[]), pg_catalog.unnest($4::int[]),"
				  " pg_catalog.unnest($5::bytea[]), pg_catalog.unnest($6::bytea[]),"
				  " pg_catalog.unnest($7::bytea[])) AS u(m, i, s, st, sv)) b) END", 0);
	kstmt_text(st, MQ_TEXTOID, name ? name : "");
	for (int k = 0; k < 6; k++)
	{
		kw_raw(&a[k], "}", 2);	/* and the NUL */
		kstmt_text(st, 0, (const char *) a[k].buf);
	}
	for (int k = 0; k < 6; k++)
		kw_free(&a[k]);
	free(name);
	u->stmt = s->job.n - 1;
}

/* the users in order of first appearance, with what is decided here */
static void
plan_alter(AlterState *s)
{
	s->users = mq_malloc0(sizeof(AlterUser) * (s->nops > 0 ? s->nops : 1));
	for (int i = 0; i < s->nops; i++)
	{
		AlterOp    *op = &s->ops[i];
		AlterUser  *u = NULL;

		for (int j = 0; j < s->nusers && u == NULL; j++)
			if (kslice_same(s->users[j].user, op->user))
				u = &s->users[j];
		if (u == NULL)
		{
			u = &s->users[s->nusers++];
			u->user = op->user;
		}
		if (u->code == KERR_NONE && mech_name(op->mech) == NULL)
			u->code = KERR_UNSUPPORTED_SASL_MECHANISM;
		for (int j = 0; j < i && u->code == KERR_NONE; j++)
			if (kslice_same(s->ops[j].user, op->user) && s->ops[j].mech == op->mech)
				u->code = KERR_DUPLICATE_RESOURCE;
	}
	for (int j = 0; j < s->nusers; j++)
	{
		s->users[j].stmt = -1;
		if (s->users[j].code == KERR_NONE)
			plan_user(s, &s->users[j]);
	}
}

/* done here: the same on every other node (credentials are each node's) */
static void
altered(KRequest *req)
{
	AlterState *s = req->state;

	kmirror_run(&s->mirror, req, &s->job, alter_done);
}

void
h_alter_user_scram_credentials(KRequest *req)
{
	KReader    *r = &req->body;
	AlterState *s = mq_malloc0(sizeof(AlterState));
	int32_t		ndel,
				nup;

	req->state = s;
	req->free_state = alter_state_free;
	ndel = kr_compact_count(r);
	s->ops = mq_malloc0(sizeof(AlterOp) * (2 * MAX_OPS + 1));
	for (int32_t i = 0; i < ndel && !r->err; i++, s->nops++)
	{
		s->ops[s->nops].user = kr_compact_str(r);
		s->ops[s->nops].mech = kr_i8(r);
		kr_skip_tags(r);
	}
	nup = kr_compact_count(r);
	for (int32_t i = 0; i < nup && !r->err; i++, s->nops++)
	{
		AlterOp    *op = &s->ops[s->nops];

		op->upsert = true;
		op->user = kr_compact_str(r);
		op->mech = kr_i8(r);
		op->iterations = kr_i32(r);
		op->salt = kr_compact_str(r);
		op->salted = kr_compact_str(r);
		kr_skip_tags(r);
	}
	kr_skip_tags(r);
	if (r->err)
	{
		req_abort(req);
		return;
	}
	plan_alter(s);
	pool_run(req, &s->job, altered);
}
