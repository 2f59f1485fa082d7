/*-------------------------------------------------------------------------
 *
 * quota_load.c
 *	  Reading the client quotas quota.c enforces: mq.client_quota_lookup()
 *	  (src/sql/93_client_quotas.sql) as the daemon's role, at start, every
 *	  QUOTA_REFRESH_MS, and at once after an AlterClientQuotas served here
 *	  (h_quota.c), which is answered once that read is done, so that its
 *	  client's next request meets the new quotas; one read at a time.  If the daemon's role may not read
 *	  them, the daemon says so once, keeps what it had (none at first) and
 *	  tries again every QUOTA_RETRY_MS: each failed read is an error in the
 *	  server's log.  A database that is down, or a connection it closes,
 *	  changes nothing: the next tick reads again.  Each
 *	  refresh also drops the meters nobody used for an hour.  Loop thread
 *	  only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "quota.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "kjob.h"
#include "util.h"

#define QUOTA_REFRESH_MS 10000
#define QUOTA_RETRY_MS 60000
#define LOOKUP_SQL \
	"SELECT user_name, default_user, client_id, default_client, quota_key, quota_value" \
	"  FROM mq.client_quota_lookup()"

/* a request answered once a read has taken the quotas in */
typedef struct Waiter
{
	struct Waiter *next;
	KRequest   *req;
	KDoneFn		done;
} Waiter;

static struct event *refresh_ev;
static KRequest load_req;
static KJob load_job;
static bool loading;
static bool again;				/* a reload was asked for during a load */
static Waiter *waiting;			/* for the read running */
static Waiter *waiting_next;	/* for the read after it */
static bool warned;
static int64_t retry_at_ms;		/* no periodic read before this */

static void load(void);

/*
 * The errors that say the daemon's role cannot read the quotas (no
 * EXECUTE, an mq without the function): anything else is the database or
 * the connection going away, and the next tick reads again.
 */
static bool
unreadable(const char *sqlstate)
{
	return strcmp(sqlstate, "42501") == 0 || strcmp(sqlstate, "42883") == 0 ||
		strcmp(sqlstate, "3F000") == 0;
}

static void
load_done(KRequest *req)
{
	KStmt	   *st = &load_job.stmts[0];
	int16_t		code;

	loading = false;
	if (!kstmt_failed(st, &code))
	{
		int			n = quota_take(st->res);

		if (warned)
			mq_log_info("client quotas are read again: %d enforced", n);
		warned = false;
	}
	else if (unreadable(st->err.sqlstate))
	{
		if (!warned)
			mq_log_warning("client quotas cannot be read (%s), grant EXECUTE on mq.client_quota_lookup() "
						   "to the daemon's role: %s", st->err.sqlstate, st->err.message);
		warned = true;
		retry_at_ms = mq_now_us() / 1000 + QUOTA_RETRY_MS;
	}
	kjob_free(&load_job);
	while (waiting)
	{
		Waiter	   *w = waiting;

		waiting = w->next;
		w->done(w->req);
		free(w);
	}
	if (again)
		load();
}

static void
load(void)
{
	if (loading)
	{
		again = true;
		return;
	}
	loading = true;
	again = false;
	waiting = waiting_next;
	waiting_next = NULL;
	memset(&load_req, 0, sizeof(load_req));
	(void) kjob_add(&load_job, LOOKUP_SQL, 0);
	pool_run(&load_req, &load_job, load_done);
}

static void
on_refresh(evutil_socket_t fd, short what, void *arg)
{
	quota_expire();
	if (mq_now_us() / 1000 >= retry_at_ms)
		load();
}

void
quota_start(void)
{
	struct timeval tv = {QUOTA_REFRESH_MS / 1000, (QUOTA_REFRESH_MS % 1000) * 1000};

	refresh_ev = event_new(kbase, -1, EV_PERSIST, on_refresh, NULL);
	event_add(refresh_ev, &tv);
	load();
}

void
quota_reload(KRequest *req, KDoneFn done)
{
	Waiter	   *w = mq_malloc0(sizeof(Waiter));

	w->req = req;
	w->done = done;
	w->next = waiting_next;
	waiting_next = w;
	load();
}
