/*-------------------------------------------------------------------------
 *
 * cancel.c
 *	  Cancel requests that cannot block for long: mq_cancel_bounded()
 *	  (cancel.h says why libpq's own PQcancel() can).
 *
 * Layer: the bottom of broker/common beside util.c.  mqconn.c (a statement
 * past its deadline) and connpolicy.c's users call it; it calls only
 * util.c and libpq, so neither of them is called back.
 *
 * Locking: the only shared state is the count of cancel threads still
 * running, an atomic.  A cancel thread owns its PGcancel and the small
 * block it reports through; whoever of it and the waiting caller finishes
 * last frees that block (a reference count of two).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "cancel.h"
#include "util.h"

static atomic_int pending_cancels;

typedef struct CancelJob
{
	PGcancel   *cancel;
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	bool		done;
	bool		sent;
	int			refs;			/* the thread and the waiter */
} CancelJob;

static void
job_release(CancelJob *job)
{
	bool		last;

	pthread_mutex_lock(&job->lock);
	last = --job->refs == 0;
	pthread_mutex_unlock(&job->lock);
	if (last)
	{
		pthread_mutex_destroy(&job->lock);
		pthread_cond_destroy(&job->done_cv);
		free(job);
	}
}

static void *
cancel_thread(void *arg)
{
	CancelJob  *job = arg;
	char		errbuf[256];
	bool		sent = PQcancel(job->cancel, errbuf, sizeof(errbuf)) == 1;

	PQfreeCancel(job->cancel);
	pthread_mutex_lock(&job->lock);
	job->done = true;
	job->sent = sent;
	pthread_cond_signal(&job->done_cv);
	pthread_mutex_unlock(&job->lock);
	job_release(job);
	atomic_fetch_sub(&pending_cancels, 1);
	return NULL;
}

bool
mq_cancel_bounded(PGconn *conn, int wait_ms)
{
	CancelJob  *job;
	pthread_t	tid;
	pthread_attr_t attr;
	struct timespec until;
	bool		sent;

	if (atomic_fetch_add(&pending_cancels, 1) >= MQ_CANCEL_MAX_PENDING)
	{
		atomic_fetch_sub(&pending_cancels, 1);
		return false;
	}
	job = mq_malloc0(sizeof(CancelJob));
	job->cancel = PQgetCancel(conn);
	if (job->cancel == NULL)
	{
		free(job);
		atomic_fetch_sub(&pending_cancels, 1);
		return false;
	}
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->done_cv, NULL);
	job->refs = 2;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, cancel_thread, job) != 0)
	{
		pthread_attr_destroy(&attr);
		PQfreeCancel(job->cancel);
		job->refs = 1;
		job_release(job);
		atomic_fetch_sub(&pending_cancels, 1);
		return false;
	}
	pthread_attr_destroy(&attr);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long) (wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000)
	{
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&job->lock);
	while (!job->done)
		if (pthread_cond_timedwait(&job->done_cv, &job->lock, &until) == ETIMEDOUT)
			break;
	sent = job->done && job->sent;
	pthread_mutex_unlock(&job->lock);
	job_release(job);
	return sent;
}
