/*-------------------------------------------------------------------------
 *
 * quota_load.c
 *	  Reading the client quotas quota.c enforces: mq.client_quota_lookup()
 *	  (src/sql/93_client_quotas.sql) as the daemon's role, at start, every
 *	  QUOTA_REFRESH_MS, and at once after an AlterClientQuotas served here
 *	  (h_quota.c), which is answered once that read is done, so that its
 *	  client's next request meets the new quotas; one read at a time.
 *	  Each read first asks whether the role may call the lookup: if not,
 *	  the daemon says so once and keeps what it had (none at first), the
 *	  next tick asks again, and the server's log holds no error.  A
 *	  database that is down, or a connection it closes, changes nothing:
 *	  the next tick reads again.  Each refresh also drops the meters
 *	  nobody used for an hour.  Loop thread only: no locking.
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
#define LOOKUP_SQL \
	"SELECT user_name, default_user, client_id, default_client, quota_key, quota_value" \
	"  FROM mq.client_quota_lookup()"
/* whether the lookup may be called: asked first, so that a daemon whose
 * role may not call it puts no error in the server's log */
#define PROBE_SQL \
	"SELECT f.oid IS NOT NULL AND pg_catalog.has_function_privilege(f.oid, 'EXECUTE')" \
	"  FROM (SELECT pg_catalog.to_regprocedure('mq.client_quota_lookup()')::pg_catalog.oid AS oid) f"

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

static void load(void);

/* the daemon's role may not call the lookup: say so once (the next tick asks again) */
static void
unreadable(void)
{
	if (!warned)
		mq_log_warning("client quotas cannot be read: grant EXECUTE on mq.client_quota_lookup() "
					   "to the daemon's role; none are enforced until then");
	warned = true;
}

/* the read is over, whatever it found: answer its waiters, read again if asked */
static void
read_over(void)
{
	loading = false;
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

/* the quotas read (a database that went away changes nothing) */
static void
load_done(KRequest *req)
{
	KStmt	   *st = &load_job.stmts[0];
	int16_t		code;

	if (!kstmt_failed(st, &code))
	{
		int			n = quota_take(st->res);

		if (warned)
			mq_log_info("client quotas are read again: %d enforced", n);
		warned = false;
	}
	else if (strcmp(st->err.sqlstate, "42501") == 0)
		unreadable();			/* revoked between the probe and the read */
	kjob_free(&load_job);
	read_over();
}

/* the probe's answer: read the quotas, or say why not */
static void
probed(KRequest *req)
{
	KStmt	   *st = &load_job.stmts[0];
	int16_t		code;
	bool		failed = kstmt_failed(st, &code);
	bool		may = !failed && strcmp(PQgetvalue(st->res, 0, 0), "t") == 0;

	kjob_free(&load_job);
	if (may)
	{
		(void) kjob_add(&load_job, LOOKUP_SQL, 0);
		pool_run(&load_req, &load_job, load_done);
		return;
	}
	if (!failed)
		unreadable();
	read_over();
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
	(void) kjob_add(&load_job, PROBE_SQL, 0);
	pool_run(&load_req, &load_job, probed);
}

static void
on_refresh(evutil_socket_t fd, short what, void *arg)
{
	quota_expire();
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
