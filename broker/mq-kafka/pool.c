/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  The bounded pool of database connections: kconfig.pool_size worker
 *	  threads, each owning one libpq connection, take requests from a FIFO
 *	  queue, run the request's statements, and hand it back to the event
 *	  loop through a done queue and a libevent event made active.
 *
 * Locking: both queues are guarded by one mutex; a worker sleeps on the
 * condition variable while the queue is empty.  The loop thread never
 * waits on the database, and a parked fetch or join holds no connection.
 * A worker that lost its connection reconnects before its next request;
 * while the database is down, handlers get db == NULL and answer with a
 * retriable error (KAFKA_STORAGE_ERROR).
 *
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <pthread.h>

#include "mqconn.h"
#include "util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static KRequest *work_head,
		   *work_tail;
static KRequest *done_head,
		   *done_tail;
static struct event *done_ev;

static void
push(KRequest **head, KRequest **tail, KRequest *req)
{
	req->next = NULL;
	if (*tail)
		(*tail)->next = req;
	else
		*head = req;
	*tail = req;
}

static KRequest *
pop(KRequest **head, KRequest **tail)
{
	KRequest   *req = *head;

	if (req)
	{
		*head = req->next;
		if (*head == NULL)
			*tail = NULL;
		req->next = NULL;
	}
	return req;
}

/* a usable connection, reconnecting if needed; NULL while the database is down */
static PGconn *
worker_conn(PGconn *db)
{
	MqError		err = MQ_ERROR_INIT;

	if (db && PQstatus(db) == CONNECTION_OK)
		return db;
	if (db)
		PQfinish(db);
	db = mq_connect(kconfig.conninfo, "mq-kafka", &err);
	if (db == NULL)
	{
		mq_log_warning("cannot connect to the database: %s", err.message);
		mq_error_free(&err);
	}
	return db;
}

static void *
worker_main(void *arg)
{
	PGconn	   *db = NULL;

	for (;;)
	{
		KRequest   *req;

		pthread_mutex_lock(&lock);
		while (work_head == NULL)
			pthread_cond_wait(&work_cv, &lock);
		req = pop(&work_head, &work_tail);
		pthread_mutex_unlock(&lock);

		db = worker_conn(db);
		req->db_fn(req, db);

		pthread_mutex_lock(&lock);
		push(&done_head, &done_tail, req);
		pthread_mutex_unlock(&lock);
		event_active(done_ev, EV_READ, 0);
	}
	return NULL;
}

/* loop thread: requests back from the workers */
static void
on_done(evutil_socket_t fd, short what, void *arg)
{
	for (;;)
	{
		KRequest   *req;

		pthread_mutex_lock(&lock);
		req = pop(&done_head, &done_tail);
		pthread_mutex_unlock(&lock);
		if (req == NULL)
			break;
		if (req->done_fn)
			req->done_fn(req);
		else
			req_finish(req);
	}
}

void
pool_start(void)
{
	done_ev = event_new(kbase, -1, EV_PERSIST, on_done, NULL);
	for (int i = 0; i < kconfig.pool_size; i++)
	{
		pthread_t	t;

		if (pthread_create(&t, NULL, worker_main, NULL) != 0)
			mq_fatal(MQ_EXIT_LOCAL, "cannot start a database worker thread");
		pthread_detach(t);
	}
}

void
pool_submit(KRequest *req, KDbFn db_fn, KDoneFn done_fn)
{
	req->db_fn = db_fn;
	req->done_fn = done_fn;
	pthread_mutex_lock(&lock);
	push(&work_head, &work_tail, req);
	pthread_cond_signal(&work_cv);
	pthread_mutex_unlock(&lock);
}
