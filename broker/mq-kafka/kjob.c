/*-------------------------------------------------------------------------
 *
 * kjob.c
 *	  Building a job's statements with owned parameter copies (kjob.h).
 *	  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#include "kjob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kerr.h"
#include "pgbinary.h"
#include "util.h"

KStmt *
kjob_add(KJob *job, const char *sql, int result_format)
{
	KStmt	   *s;

	if (job->n == job->cap)
	{
		job->cap = job->cap ? job->cap * 2 : 4;
		job->stmts = mq_realloc(job->stmts, sizeof(KStmt) * job->cap);
	}
	s = &job->stmts[job->n++];
	memset(s, 0, sizeof(*s));
	s->sql = sql;
	s->result_format = result_format;
	return s;
}

void
kjob_copy(KJob *job, const KStmt *st)
{
	KStmt	   *c = kjob_add(job, st->sql, st->result_format);

	c->as_daemon = st->as_daemon;
	for (int i = 0; i < st->nparams; i++)
		if (st->formats[i] == 1)
			kstmt_binary(c, st->types[i], st->values[i], st->lengths[i]);
		else
			kstmt_text(c, st->types[i], st->values[i]);
}

static int
next_param(KStmt *s)
{
	if (s->nparams == KSTMT_MAX_PARAMS)
		mq_fatal(MQ_EXIT_LOCAL, "too many parameters for \"%s\"", s->sql);
	return s->nparams++;
}

void
kstmt_text(KStmt *s, Oid type, const char *value)
{
	int			i = next_param(s);

	s->types[i] = type;
	s->values[i] = value ? mq_strdup(value) : NULL;
}

void
kstmt_int(KStmt *s, Oid type, int64_t value)
{
	char		buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long) value);
	kstmt_text(s, type, buf);
}

void
kstmt_int_array(KStmt *s, const int32_t *v, int32_t n)
{
	MqArray		a;

	mq_array_init(&a, MQ_INT4OID);
	for (int32_t k = 0; k < n; k++)
		mq_array_add_int32(&a, v[k]);
	kstmt_array(s, MQ_INT4ARRAYOID, &a);
	mq_array_free(&a);
}

void
kstmt_binary(KStmt *s, Oid type, const void *data, int len)
{
	int			i = next_param(s);

	s->types[i] = type;
	s->values[i] = mq_malloc(len > 0 ? len : 1);
	if (len > 0)
		memcpy(s->values[i], data, len);
	s->lengths[i] = len;
	s->formats[i] = 1;
}

void
kstmt_array(KStmt *s, Oid type, MqArray *a)
{
	int			len;
	const char *b = mq_array_bytes(a, &len);

	kstmt_binary(s, type, b, len);
}

bool
kstmt_failed(const KStmt *s, int16_t *code)
{
	if (s->res)
	{
		*code = KERR_NONE;
		return false;
	}
	*code = kerr_from_mq(&s->err);
	return true;
}

int16_t
kstmt_cluster_error(const KStmt *s, const char **message)
{
	int16_t		code;

	*message = NULL;
	if (!kstmt_failed(s, &code))
		return KERR_NONE;
	*message = s->err.message;
	return strcmp(s->err.sqlstate, "42501") == 0 ? KERR_CLUSTER_AUTHORIZATION_FAILED : code;
}

void
kjob_free(KJob *job)
{
	for (int i = 0; i < job->n; i++)
	{
		KStmt	   *s = &job->stmts[i];

		for (int p = 0; p < s->nparams; p++)
			free(s->values[p]);
		PQclear(s->res);
		mq_error_free(&s->err);
	}
	free(job->stmts);
	job->stmts = NULL;
	job->n = job->cap = 0;
}

void
kjob_free_state(void *job)
{
	kjob_free(job);
	free(job);
}

void
kjob_reset(KJob *job)
{
	for (int i = 0; i < job->n; i++)
	{
		PQclear(job->stmts[i].res);
		job->stmts[i].res = NULL;
		mq_error_free(&job->stmts[i].err);
	}
}

void
kjob_rollback_each(KJob *job)
{
	KJob		orig = *job;

	memset(job, 0, sizeof(*job));
	for (int i = 0; i < orig.n; i++)
	{
		(void) kjob_add(job, "BEGIN", 0);
		*kjob_add(job, NULL, 0) = orig.stmts[i];
		kjob_add(job, "ROLLBACK", 0)->as_daemon = true;
	}
	free(orig.stmts);
}
