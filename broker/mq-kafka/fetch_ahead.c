/*-------------------------------------------------------------------------
 *
 * fetch_ahead.c
 *	  Read-ahead for consumers catching up: when a Fetch response leaves
 *	  records behind (a partition's next offset is below its high
 *	  watermark), the statement of the consumer's next Fetch (the same
 *	  partitions and limits, from the offsets after the records returned)
 *	  runs at once, while the response travels and the client decodes it.
 *	  A Fetch that asks for exactly that (the same partitions, offsets,
 *	  limits and leader epochs, in any order: clients rotate the order of
 *	  partitions) takes the result, or waits for it if it is still
 *	  running, instead of reading again; its response lists the topics
 *	  (with their ids, v13+) and partitions in the read-ahead's order.  A
 *	  topic id no topic has (an empty name) matches nothing.  This overlaps the database's reading with the client's,
 *	  which otherwise take turns (docs/design.md, "The Kafka front end").
 *
 * What a taken read-ahead returns is what a Fetch run at that moment
 * returns: records below the high watermark of then, within the request's
 * byte limits; mq records do not change once written, so the answer is
 * only as old as the read-ahead (AHEAD_TTL_US at most; older ones are
 * dropped).  A read-ahead runs only on a pool connection that would
 * otherwise be idle, leaving one idle for other requests, at most
 * AHEAD_MAX at a time, for requests of at most AHEAD_MAX_PARTS
 * partitions.  One that nobody takes is wasted work: after
 * several of those (consumers slower than the TTL, or changing their
 * requests), read-ahead pauses and only probes now and then.
 *
 * A read-ahead runs as the role of the Fetch it follows (sasl.c), and
 * only a Fetch of the same role takes it: one principal never gets what
 * another one's rights read.
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "fetch.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define AHEAD_MAX 4
#define AHEAD_TTL_US INT64_C(500000)
/* requests of more partitions are not read ahead */
#define AHEAD_MAX_PARTS 256
/* the hit score: +1 a taken read-ahead, -2 a wasted one, within bounds */
#define SCORE_MIN (-16)
#define SCORE_MAX 8
#define SCORE_PAUSE (-4)		/* below: read ahead one time in PROBE_EVERY */
#define PROBE_EVERY 8

typedef struct Ahead
{
	FetchState	fs;				/* the request read ahead, and its job */
	char	   *names;			/* fs.topics point here */
	KRequest	req;			/* the pool's handle: no client behind it */
	bool		running;
	int64_t		done_us;
	FetchState *waiter;			/* the Fetch that took it while running */
	const FetchOps *ops;		/* the handler's statement and completion */
	struct Ahead *next;
} Ahead;

static Ahead *aheads;
static int	naheads;
static int	score;
static unsigned probes;

static void
ahead_free(Ahead *a)
{
	kjob_free(&a->fs.job);
	free(a->fs.topics);
	free(a->fs.parts);
	free(a->names);
	free(a->req.role);
	free(a);
}

static void
unlink_ahead(Ahead *a)
{
	for (Ahead **p = &aheads; *p; p = &(*p)->next)
		if (*p == a)
		{
			*p = a->next;
			naheads--;
			return;
		}
}

/* drop finished read-ahead nobody took in time */
static void
expire(void)
{
	int64_t		now = mq_now_us();
	Ahead	   *a = aheads;

	while (a)
	{
		Ahead	   *next = a->next;

		if (!a->running && a->waiter == NULL && now - a->done_us > AHEAD_TTL_US)
		{
			unlink_ahead(a);
			ahead_free(a);
			score = score - 2 < SCORE_MIN ? SCORE_MIN : score - 2;
		}
		a = next;
	}
}

/*
 * true if s asks what x asked, in any order (clients rotate the order of
 * partitions from one Fetch to the next); tmap[t] is then the topic of s
 * that is x's topic t
 */
static bool
same_request(const FetchState *x, const FetchState *s, int32_t *tmap)
{
	bool		used[AHEAD_MAX_PARTS];

	if (x->ntopics != s->ntopics || x->nparts != s->nparts || x->max_bytes != s->max_bytes ||
		x->magic != s->magic)
		return false;
	memset(used, 0, sizeof(used));
	for (int32_t t = 0; t < x->ntopics; t++)
	{
		tmap[t] = -1;
		for (int32_t u = 0; u < s->ntopics && tmap[t] < 0; u++)
			if (!used[u] && x->topics[t].len > 0 && x->topics[t].len == s->topics[u].len &&
				memcmp(x->topics[t].p, s->topics[u].p, x->topics[t].len) == 0)
				tmap[t] = u;
		if (tmap[t] < 0)
			return false;
		used[tmap[t]] = true;
	}
	memset(used, 0, sizeof(used));
	for (int32_t k = 0; k < x->nparts; k++)
	{
		const FPart *a = &x->parts[k];
		bool		found = false;

		for (int32_t j = 0; j < s->nparts && !found; j++)
		{
			const FPart *b = &s->parts[j];

			if (!used[j] && tmap[a->topic] == b->topic && a->partition == b->partition &&
				a->offset == b->offset && a->max_bytes == b->max_bytes &&
				a->current_epoch == b->current_epoch &&
				a->last_fetched_epoch == b->last_fetched_epoch)
				found = used[j] = true;
		}
		if (!found)
			return false;
	}
	return true;
}

/*
 * s's topics (and their ids, v13+) and partitions in x's order, which the
 * result follows
 */
static void
take_order(FetchState *s, const FetchState *x, const int32_t *tmap)
{
	KSlice	   *topics = mq_malloc0(sizeof(KSlice) * (x->ntopics > 0 ? x->ntopics : 1));
	FPart	   *parts = mq_malloc0(sizeof(FPart) * (x->nparts > 0 ? x->nparts : 1));

	for (int32_t t = 0; t < x->ntopics; t++)
		topics[t] = s->topics[tmap[t]];
	if (s->ids)
	{
		uint8_t    *ids = mq_malloc0(16 * (x->ntopics > 0 ? x->ntopics : 1));

		for (int32_t t = 0; t < x->ntopics; t++)
			memcpy(ids + 16 * t, s->ids + 16 * tmap[t], 16);
		free(s->ids);
		s->ids = ids;
	}
	memcpy(parts, x->parts, sizeof(FPart) * x->nparts);
	free(s->topics);
	free(s->parts);
	s->topics = topics;
	s->parts = parts;
}

static bool
same_role(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* s takes a's finished statement and goes on as if it had run it */
static void
hand_over(Ahead *a, FetchState *s)
{
	KJob		job = s->job;
	int16_t		code;
	bool		ok = !kstmt_failed(&a->fs.job.stmts[0], &code);
	const FetchOps *ops = a->ops;

	s->job = a->fs.job;
	a->fs.job = job;
	ahead_free(a);
	if (ok)
	{
		score = score + 1 > SCORE_MAX ? SCORE_MAX : score + 1;
		ops->done(s->req);
		return;
	}
	/* a failed read-ahead says nothing: read as usual */
	ops->job(s);
	pool_run(s->req, &s->job, ops->done);
}

static void
ahead_done(KRequest *req)
{
	Ahead	   *a = req->state;

	a->running = false;
	a->done_us = mq_now_us();
	if (a->waiter)
		hand_over(a, a->waiter);
	else
		expire();
}

bool
ahead_take(FetchState *s, const FetchOps *ops)
{
	int32_t		tmap[AHEAD_MAX_PARTS];

	expire();
	if (s->nparts > AHEAD_MAX_PARTS || s->ntopics > AHEAD_MAX_PARTS)
		return false;
	for (Ahead *a = aheads; a; a = a->next)
		if (same_role(a->req.role, s->req->role) && same_request(&a->fs, s, tmap))
		{
			unlink_ahead(a);
			a->ops = ops;
			take_order(s, &a->fs, tmap);
			if (a->running)
				a->waiter = s;	/* ahead_done hands it over */
			else
				hand_over(a, s);
			return true;
		}
	return false;
}

/* a copy of s's request from the offsets after its response */
static Ahead *
next_request(const FetchState *s)
{
	Ahead	   *a = mq_malloc0(sizeof(Ahead));
	size_t		len = 0,
				pos = 0;

	for (int32_t t = 0; t < s->ntopics; t++)
		len += s->topics[t].len;
	a->names = mq_malloc0(len + 1);
	a->fs.ntopics = s->ntopics;
	a->fs.topics = mq_malloc0(sizeof(KSlice) * (s->ntopics > 0 ? s->ntopics : 1));
	for (int32_t t = 0; t < s->ntopics; t++)
	{
		memcpy(a->names + pos, s->topics[t].p, s->topics[t].len);
		a->fs.topics[t] = (KSlice){(const uint8_t *) a->names + pos, s->topics[t].len};
		pos += s->topics[t].len;
	}
	a->fs.nparts = s->nparts;
	a->fs.parts = mq_malloc0(sizeof(FPart) * (s->nparts > 0 ? s->nparts : 1));
	for (int32_t k = 0; k < s->nparts; k++)
	{
		const FPart *p = &s->parts[k];

		a->fs.parts[k] = *p;
		a->fs.parts[k].offset = p->next_offset;
		a->fs.parts[k].max_records = 0;
		if (p->returned > 0 && p->returned_bytes > 0)
		{
			/* as many as fill max_bytes at the size of the last ones, and a little more */
			int64_t		n = (int64_t) p->max_bytes * p->returned / (int64_t) p->returned_bytes;

			n += n / 16 + 2;
			a->fs.parts[k].max_records = n > INT32_MAX ? INT32_MAX : (int32_t) n;
		}
	}
	a->fs.max_bytes = s->max_bytes;
	a->fs.magic = s->magic;
	a->req.state = a;
	a->req.role = s->req->role ? mq_strdup(s->req->role) : NULL;
	return a;
}

void
ahead_after(const FetchState *s, const FetchOps *ops)
{
	bool		behind = false;
	Ahead	   *a;

	expire();
	for (int32_t k = 0; k < s->nparts; k++)
		if (s->parts[k].high_watermark > s->parts[k].next_offset)
			behind = true;
	if (!behind || naheads >= AHEAD_MAX || s->nparts > AHEAD_MAX_PARTS || pool_idle() < 2)
		return;
	if (score < SCORE_PAUSE && ++probes % PROBE_EVERY != 0)
		return;
	a = next_request(s);
	a->ops = ops;
	ops->job(&a->fs);
	a->running = true;
	a->next = aheads;
	aheads = a;
	naheads++;
	pool_run(&a->req, &a->fs.job, ahead_done);
}
