/*-------------------------------------------------------------------------
 *
 * fetch_watch.c
 *	  Waking parked fetches when the database says the high watermark of
 *	  a partition they wait on moved: records committed by any producer
 *	  (SQL, another daemon) or, on a replicated partition, acknowledged by
 *	  the followers.
 *
 * One statement at a time, on a connection of its own (a pool of one, so
 * that cancelling it can hit nothing else): mq._await_partitions with the
 * partitions that fetches parked on lately and the high watermarks last
 * seen, which returns the current ones as soon as one moved, or after
 * WATCH_WAIT_MS.  Each partition whose high watermark moved wakes the
 * parked fetches that read it (the handler's wake callback, handed down
 * at fwatch_init) and gets a new generation.  A fetch attempt notes the
 * generation when it starts; one that would park after a partition of its
 * moved since then reads again at once, since its snapshot may predate
 * the move (fwatch_missed).  A partition seen for the first time has no
 * high watermark yet: the watch returns at once and its fetches read
 * again.  A fetch parking on a partition the running statement does not
 * cover cancels it, and the next statement covers it.
 *
 * A statement_timeout the server sets (for the database or the daemon's
 * role) shortens each statement's wait below it, so the watch keeps
 * working under it.  While no watch works (mq before 0.2.0, mq not in
 * shared_preload_libraries, the connection down), parked fetches re-read
 * every WATCH_FALLBACK_MS, as they always did; otherwise only every
 * --recheck-ms, a slow safety net (fwatch_recheck_ms).
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "pgbinary.h"
#include "util.h"

#define WATCH_WAIT_MS 5000		/* under the pool's statement deadline */
#define WATCH_RETRY_US 10000000 /* after a watch failed */
#define WATCH_KEEP_US 10000000	/* a partition goes this long after its last
								 * parked fetch's deadline */
#define WATCH_FALLBACK_MS 100	/* the recheck while no watch works */

/*
 * At most $4 ms, and under the server's statement_timeout (a database or
 * role setting a DBA chose; current_setting shows it with a unit, as an
 * interval reads it): four fifths of it, so the statement returns before
 * the server would cancel it.  current_setting, not pg_settings: the watch
 * runs again after every wake, and pg_settings lists every setting (0.58
 * ms a statement against 0.08 with pgbench).
 */
#define AWAIT_SQL \
	"SELECT mq._await_partitions($1::text[], $2::int4[], $3::int8[]," \
	"                            CASE WHEN t.ms > 0 THEN least($4, greatest(t.ms * 4 / 5, 1)) ELSE $4 END)" \
	"  FROM (SELECT (extract(epoch FROM pg_catalog.current_setting('statement_timeout')::interval)" \
	"                * 1000)::int4 AS ms) t"

typedef struct WPart
{
	char	   *name;
	int32_t		partition;
	int64_t		seen;			/* high watermark, valid if known */
	bool		known;
	bool		covered;		/* in the running statement */
	uint64_t	gen;			/* generation of its last change */
	int64_t		until_us;		/* the latest deadline of a fetch parked on it */
} WPart;

static WPart *wt;
static int	nwt,
			capwt;
static uint64_t generation = 1;
static KPool *wpool;
static KRequest wreq;
static KJob wjob;
static bool running,
			cancelling,
			taking,				/* in watch_done: it issues the next one */
			working;
static int64_t retry_at_us;
static void (*wake_fn) (const char *topic, int32_t partition);

static void watch_issue(void);

void
fwatch_init(void (*wake) (const char *topic, int32_t partition))
{
	wake_fn = wake;
}

uint64_t
fwatch_gen(void)
{
	return generation;
}

int
fwatch_recheck_ms(void)
{
	if (working || kconfig.recheck_ms < WATCH_FALLBACK_MS)
		return kconfig.recheck_ms;
	return WATCH_FALLBACK_MS;
}

static WPart *
topic_find(const char *p, int len, int32_t partition)
{
	for (int i = 0; i < nwt; i++)
		if (wt[i].partition == partition && (int) strlen(wt[i].name) == len &&
			memcmp(wt[i].name, p, len) == 0)
			return &wt[i];
	return NULL;
}

bool
fwatch_missed(const FetchState *s, uint64_t since)
{
	for (int32_t k = 0; k < s->nparts; k++)
	{
		const KSlice *t = &s->topics[s->parts[k].topic];
		WPart	   *w = topic_find((const char *) t->p, t->len, s->parts[k].partition);

		if (w && w->gen > since)
			return true;
	}
	return false;
}

static WPart *
topic_add(const char *p, int len, int32_t partition)
{
	WPart	   *w;

	if (nwt == capwt)
	{
		capwt = capwt ? capwt * 2 : 16;
		wt = mq_realloc(wt, sizeof(WPart) * capwt);
	}
	w = &wt[nwt++];
	memset(w, 0, sizeof(*w));
	w->name = mq_malloc0(len + 1);
	memcpy(w->name, p, len);
	w->partition = partition;
	return w;
}

void
fwatch_park(const FetchState *s)
{
	bool		uncovered = false;

	for (int32_t k = 0; k < s->nparts; k++)
	{
		const KSlice *t = &s->topics[s->parts[k].topic];
		WPart	   *w;

		if (t->len <= 0)
			continue;
		w = topic_find((const char *) t->p, t->len, s->parts[k].partition);
		if (w == NULL)
			w = topic_add((const char *) t->p, t->len, s->parts[k].partition);
		if (w->until_us < s->deadline_us)
			w->until_us = s->deadline_us;
		if (!w->covered)
			uncovered = true;
	}
	if (!uncovered || taking)
		return;
	if (!running)
		watch_issue();
	else if (!cancelling)
	{
		cancelling = true;
		pool_cancel(wpool, &wreq);
	}
}

/* drop the partitions no fetch parked on lately; true if some remain */
static bool
topics_prune(void)
{
	int64_t		now = mq_now_us();
	int			k = 0;

	for (int i = 0; i < nwt; i++)
	{
		if (now - wt[i].until_us > WATCH_KEEP_US)
		{
			free(wt[i].name);
			continue;
		}
		wt[k++] = wt[i];
	}
	nwt = k;
	return nwt > 0;
}

/* one element of an int8[] in text form at *p: false for NULL */
static bool
next_counter(const char **p, int64_t *v)
{
	char	   *end;
	bool		isnull;

	while (**p == '{' || **p == ',')
		(*p)++;
	isnull = strncmp(*p, "NULL", 4) == 0;
	*v = isnull ? 0 : strtoll(*p, &end, 10);
	*p = isnull ? *p + 4 : end;
	return !isnull;
}

/* the high watermarks the statement returned: wake the partitions that moved */
static void
watch_take(const PGresult *res)
{
	const char *p = PQgetvalue(res, 0, 0);
	bool		moved = false;

	/* by index: a woken fetch that parks again may add entries (realloc) */
	for (int i = 0; i < nwt; i++)
	{
		int64_t		v;

		if (!wt[i].covered)
			continue;
		wt[i].covered = false;
		if (!next_counter(&p, &v) || (wt[i].known && v == wt[i].seen))
			continue;
		if (!moved)
			generation++;
		moved = true;
		wt[i].known = true;
		wt[i].seen = v;
		wt[i].gen = generation;
		wake_fn(wt[i].name, wt[i].partition);
	}
}

static void
watch_done(KRequest *req)
{
	KStmt	   *st = &wjob.stmts[0];
	bool		was_cancelled = cancelling;

	taking = true;
	for (int i = 0; i < nwt; i++)
		if (!st->res)
			wt[i].covered = false;
	if (st->res && !PQgetisnull(st->res, 0, 0))
	{
		working = true;
		watch_take(st->res);
	}
	else if (!(was_cancelled && strcmp(st->err.sqlstate, "57014") == 0))
	{
		if (working || retry_at_us == 0)
			mq_log_info("parked fetches re-read every %d ms: %s", WATCH_FALLBACK_MS,
						st->res ? "the database cannot wake them (mq is not in shared_preload_libraries)" :
						st->err.message);
		working = false;
		retry_at_us = mq_now_us() + WATCH_RETRY_US;
		for (int i = 0; i < nwt; i++)
			wt[i].known = false;
	}
	kjob_free(&wjob);
	taking = false;
	running = false;
	cancelling = false;
	if (mq_now_us() >= retry_at_us && topics_prune())
		watch_issue();
}

/* the statement over every partition parked on lately */
static void
watch_issue(void)
{
	MqArray		names,
				parts,
				seen;
	KStmt	   *st;

	if (mq_now_us() < retry_at_us)
		return;
	if (wpool == NULL)
		wpool = pool_new(kconfig.conninfo, 1, "the fetch watch", false);
	mq_array_init(&names, MQ_TEXTOID);
	mq_array_init(&parts, MQ_INT4OID);
	mq_array_init(&seen, MQ_INT8OID);
	for (int i = 0; i < nwt; i++)
	{
		mq_array_add(&names, wt[i].name, strlen(wt[i].name));
		mq_array_add_int32(&parts, wt[i].partition);
		if (wt[i].known)
			mq_array_add_int64(&seen, wt[i].seen);
		else
			mq_array_add(&seen, NULL, 0);
		wt[i].covered = true;
	}
	st = kjob_add(&wjob, AWAIT_SQL, 0);
	kstmt_array(st, MQ_TEXTARRAYOID, &names);
	kstmt_array(st, MQ_INT4ARRAYOID, &parts);
	kstmt_array(st, MQ_INT8ARRAYOID, &seen);
	kstmt_int(st, MQ_INT4OID, WATCH_WAIT_MS);
	mq_array_free(&names);
	mq_array_free(&parts);
	mq_array_free(&seen);
	running = true;
	memset(&wreq, 0, sizeof(wreq));
	pool_run_on(wpool, &wreq, &wjob, watch_done);
}
