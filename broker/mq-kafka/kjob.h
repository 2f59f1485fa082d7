/*-------------------------------------------------------------------------
 *
 * kjob.h
 *	  The statements a request needs from the database, as one job for the
 *	  connection pool (pool.c): each statement owns copies of its parameter
 *	  values, and gets its result or error back.
 *
 * A job's statements are sent together (libpq pipeline mode) and run in
 * order, each in its own transaction, so one failing does not stop the
 * others.  A job belongs to its request's handler state; the pool only
 * borrows it while it runs.  Loop thread only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_KJOB_H
#define MQK_KJOB_H

#include "mqconn.h"
#include "pgbinary.h"

#define KSTMT_MAX_PARAMS 12

typedef struct KStmt
{
	const char *sql;			/* a string constant */
	int			result_format;	/* 0 text, 1 binary */
	int			nparams;
	Oid			types[KSTMT_MAX_PARAMS];
	char	   *values[KSTMT_MAX_PARAMS];	/* owned copies; NULL is SQL NULL */
	int			lengths[KSTMT_MAX_PARAMS];
	int			formats[KSTMT_MAX_PARAMS];
	bool		as_daemon; /* without the request's role: a ROLLBACK
								 * must run in an aborted transaction */
	PGresult   *res;			/* on success */
	MqError		err;			/* on failure (err.message set) */
} KStmt;

typedef struct KJob
{
	int			n;
	int			cap;
	KStmt	   *stmts;
} KJob;

/* a new statement at the end of the job; its index is job->n - 1 */
extern KStmt *kjob_add(KJob *job, const char *sql, int result_format);
/* a copy of st's statement and parameters at the end of job */
extern void kjob_copy(KJob *job, const KStmt *st);
extern void kstmt_text(KStmt *s, Oid type, const char *value);
extern void kstmt_int(KStmt *s, Oid type, int64_t value);
extern void kstmt_binary(KStmt *s, Oid type, const void *data, int len);
/* an array parameter (binary) of type: a's bytes, copied (a stays a's) */
extern void kstmt_array(KStmt *s, Oid type, MqArray *a);
/* an integer[] parameter (binary) of v's n elements */
extern void kstmt_int_array(KStmt *s, const int32_t *v, int32_t n);
/* true if the statement failed; its Kafka error code in *code */
extern bool kstmt_failed(const KStmt *s, int16_t *code);
/*
 * The Kafka error of a statement an administrator's request runs (ACLs,
 * SCRAM credentials, client quotas), with its message (NULL if none):
 * there 42501 is the cluster's refusal, CLUSTER_AUTHORIZATION_FAILED.
 */
extern int16_t kstmt_cluster_error(const KStmt *s, const char **message);
extern void kjob_free(KJob *job);
/* a malloc'd job that is a request's whole state (KRequest.free_state) */
extern void kjob_free_state(void *job);
/* forget the results, to run the job again */
extern void kjob_reset(KJob *job);

/*
 * validate_only: each statement of the job between BEGIN and ROLLBACK, so
 * that it is checked and undone; statement i becomes statement 3 i + 1.
 */
extern void kjob_rollback_each(KJob *job);

#endif							/* MQK_KJOB_H */
