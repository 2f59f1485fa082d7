/*-------------------------------------------------------------------------
 *
 * connpolicy.c
 *	  Connection policies: connecting with a timeout and keepalives, retry
 *	  back-off with jitter, connecting on a thread (see connpolicy.h).
 *
 * Layer: above mqconn.c (it connects with mq_connect_with) and cancel.c
 * (the bounded cancel request, which mqconn.c needs too and so lives
 * below both); route.c and the tools call it.
 *
 * Locking: a connect thread (mq_connect_start) shares only its job with
 * the caller, under the job's mutex, and the last of the two frees it.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connpolicy.h"
#include "util.h"

void
mq_conn_policy_default(MqConnPolicy *policy)
{
	policy->connect_timeout_s = 2;
	policy->keepalives_idle_s = 2;
	policy->keepalives_interval_s = 1;
	policy->keepalives_count = 2;
	policy->tcp_user_timeout_ms = 10000;
	policy->retry_initial_ms = 500;
	policy->retry_max_ms = 5000;
	policy->cancel_wait_ms = 1000;
}

PGconn *
mq_connect_policy(const char *conninfo, const char *appname,
				  const MqConnPolicy *policy, MqError *err)
{
	return mq_connect_policy_with(conninfo, appname, policy, NULL, NULL, err);
}

/* the policy's libpq keywords and values (see connpolicy.h) */
void
mq_conn_policy_params(const MqConnPolicy *policy, MqConnParams *out)
{
	int			n = 0;

	/* libpq treats connect_timeout below 2 as 2; say so here too */
	out->keys[n] = "connect_timeout";
	snprintf(out->buf[0], sizeof(out->buf[0]), "%d",
			 policy->connect_timeout_s < 2 ? 2 : policy->connect_timeout_s);
	out->vals[n++] = out->buf[0];
	if (policy->keepalives_idle_s > 0)
	{
		static const char *const kk[] = {"keepalives_idle", "keepalives_interval", "keepalives_count"};
		int			kv[] = {policy->keepalives_idle_s, policy->keepalives_interval_s,
					policy->keepalives_count};

		out->keys[n] = "keepalives";
		out->vals[n++] = "1";
		for (int i = 0; i < 3; i++, n++)
		{
			snprintf(out->buf[1 + i], sizeof(out->buf[1 + i]), "%d", kv[i]);
			out->keys[n] = kk[i];
			out->vals[n] = out->buf[1 + i];
		}
	}
	if (policy->tcp_user_timeout_ms > 0)
	{
		snprintf(out->buf[4], sizeof(out->buf[4]), "%d", policy->tcp_user_timeout_ms);
		out->keys[n] = "tcp_user_timeout";
		out->vals[n++] = out->buf[4];
	}
	out->keys[n] = NULL;
	out->vals[n] = NULL;
	out->n = n;
}

PGconn *
mq_connect_policy_with(const char *conninfo, const char *appname,
					   const MqConnPolicy *policy,
					   const char *const *extra_keys, const char *const *extra_vals,
					   MqError *err)
{
	MqConnParams pp;
	const char *keys[16];
	const char *vp[16];
	int			n = 0;

	for (int i = 0; extra_keys != NULL && extra_keys[i] != NULL && n < 8; i++, n++)
	{
		keys[n] = extra_keys[i];
		vp[n] = extra_vals[i];
	}
	mq_conn_policy_params(policy, &pp);
	for (int i = 0; i <= pp.n; i++, n++)
	{
		keys[n] = pp.keys[i];
		vp[n] = pp.vals[i];
	}
	return mq_connect_with(conninfo, appname, keys, vp, err);
}

/* ---------------------------------------------------------------------
 * Retries
 * --------------------------------------------------------------------- */

bool
mq_retry_due(const MqRetry *r)
{
	return r->next_us == 0 || mq_now_us() >= r->next_us;
}

int
mq_retry_next_pause(const MqConnPolicy *policy, int last_ms, uint32_t rnd)
{
	int64_t		lo = policy->retry_initial_ms;
	int64_t		hi = last_ms > 0 ? (int64_t) last_ms * 3 : lo;
	int64_t		pause;

	if (hi > policy->retry_max_ms)
		hi = policy->retry_max_ms;
	if (hi < lo)
		hi = lo;
	pause = lo + (int64_t) (rnd % (uint32_t) (hi - lo + 1));
	return (int) pause;
}

int
mq_retry_failed(MqRetry *r, const MqConnPolicy *policy)
{
	static unsigned int seed;
	int			pause;

	if (seed == 0)
		seed = (unsigned int) (mq_now_us() ^ (int64_t) getpid());
	/* the first pause after a success is exactly retry_initial_ms */
	pause = r->failures == 0 ? policy->retry_initial_ms
		: mq_retry_next_pause(policy, r->last_ms, (uint32_t) rand_r(&seed));
	r->failures++;
	r->last_ms = pause;
	r->next_us = mq_now_us() + (int64_t) pause * 1000;
	return pause;
}

void
mq_retry_succeeded(MqRetry *r)
{
	r->next_us = 0;
	r->last_ms = 0;
	r->failures = 0;
}

/* ---------------------------------------------------------------------
 * Connecting on a thread
 * --------------------------------------------------------------------- */

struct MqConnectJob
{
	char	   *conninfo;		/* NULL: libpq's environment */
	char	   *appname;
	MqConnPolicy policy;
	pthread_mutex_t lock;
	bool		done;			/* the attempt is over: conn, err */
	PGconn	   *conn;
	MqError		err;
	int			refs;			/* the thread and the caller */
};

static void
connect_job_release(MqConnectJob *job)
{
	bool		last;

	pthread_mutex_lock(&job->lock);
	last = --job->refs == 0;
	pthread_mutex_unlock(&job->lock);
	if (!last)
		return;
	if (job->conn)
		PQfinish(job->conn);
	mq_error_free(&job->err);
	pthread_mutex_destroy(&job->lock);
	free(job->conninfo);
	free(job->appname);
	free(job);
}

static void *
connect_thread(void *arg)
{
	MqConnectJob *job = arg;
	MqError		err = MQ_ERROR_INIT;
	PGconn	   *conn = mq_connect_policy(job->conninfo, job->appname, &job->policy, &err);

	pthread_mutex_lock(&job->lock);
	job->conn = conn;			/* the last release closes it if nobody took it */
	job->err = err;
	job->done = true;
	pthread_mutex_unlock(&job->lock);
	connect_job_release(job);
	return NULL;
}

MqConnectJob *
mq_connect_start(const char *conninfo, const char *appname, const MqConnPolicy *policy,
				 MqError *err)
{
	MqConnectJob *job = mq_malloc0(sizeof(MqConnectJob));
	pthread_t	tid;
	pthread_attr_t attr;
	int			rc;

	job->conninfo = conninfo ? mq_strdup(conninfo) : NULL;
	job->appname = mq_strdup(appname);
	job->policy = *policy;
	job->refs = 2;
	pthread_mutex_init(&job->lock, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, connect_thread, job);
	pthread_attr_destroy(&attr);
	if (rc != 0)
	{
		mq_error_free(err);
		err->message = mq_strdup("cannot connect: no thread to connect on");
		err->connection_lost = true;
		job->refs = 1;
		connect_job_release(job);
		return NULL;
	}
	return job;
}

bool
mq_connect_finish(MqConnectJob *job, PGconn **conn, MqError *err)
{
	bool		done;

	pthread_mutex_lock(&job->lock);
	done = job->done;
	if (done)
	{
		*conn = job->conn;
		job->conn = NULL;
		mq_error_free(err);
		*err = job->err;
		memset(&job->err, 0, sizeof(job->err));
	}
	pthread_mutex_unlock(&job->lock);
	if (done)
		connect_job_release(job);
	return done;
}

/* Whichever of us releases last closes a connection nobody took. */
void
mq_connect_abandon(MqConnectJob *job)
{
	connect_job_release(job);
}
