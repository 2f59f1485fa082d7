/*-------------------------------------------------------------------------
 *
 * fetch_session.c
 *	  Fetch sessions (KIP-227, Fetch v7+): a consumer's set of partitions
 *	  kept by the daemon, so that its next Fetch names only the partitions
 *	  whose fetch offset or limits changed, and the response only the
 *	  partitions with something new.  Loop thread only: no locking.
 *
 * A request's (session id, epoch) says what it is, as in Kafka:
 *   (0, -1)  a full fetch without a session (also every Fetch before v7);
 *   (0, 0)   a full fetch that opens a session: the response carries its
 *            id (0 if the cache has no room), and the next request of the
 *            session has epoch 1;
 *   (id, 0)  closes session id, then opens a new one; (id, -1) closes it;
 *   (id, n)  an incremental fetch: its partitions are added to the
 *            session or update their fetch offset, limits and current
 *            leader epoch there; forgotten_topics_data leaves the session;
 *            then the session's partitions are fetched, and the response
 *            holds only those with records, an error, or a high
 *            watermark or log start offset that differs from the last
 *            response's.  An unknown id is FETCH_SESSION_ID_NOT_FOUND
 *            (70), an epoch other than the session's next
 *            INVALID_FETCH_SESSION_EPOCH (71), a version on the other
 *            side of v13 (topic ids) from the session's
 *            FETCH_SESSION_TOPIC_ID_ERROR (106); the response then holds
 *            only the error.  A session left with no partition is closed.
 * Sessions belong to no connection (a client may reconnect and go on).
 *
 * The cache holds SESSION_SLOTS sessions (Kafka's
 * max.incremental.fetch.session.cache.slots default).  When it is full, a
 * new session takes the slot of the least recently used one if that has
 * been idle for SESSION_EVICT_US (Kafka's
 * min.incremental.fetch.session.eviction.ms), else of the smallest
 * session if it has fewer partitions than the new one; else the full
 * fetch is answered without a session (id 0) and the client goes on with
 * full fetches, as with Kafka.
 *
 * What the last response told the client (each partition's high
 * watermark and log start) is updated only when a response is sent
 * (fsess_sent): a long poll encodes a response at every attempt.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fetch.h"
#include "kerr.h"
#include "util.h"

#define SESSION_SLOTS 1000
#define SESSION_EVICT_US INT64_C(120000000)

typedef struct SPart
{
	char	   *key;			/* topic name, or id (16 bytes) */
	int32_t		keylen;
	int32_t		partition;
	int64_t		offset;
	int32_t		max_bytes;
	int32_t		current_epoch;
	int32_t		last_fetched_epoch;
	int64_t		hw;				/* as last sent; -1: send it again */
	int64_t		log_start;
	int64_t		new_hw;			/* as the response being encoded says */
	int64_t		new_log_start;
} SPart;

typedef struct Session
{
	int32_t		id;
	int32_t		epoch;			/* of the session's next request */
	bool		ids;			/* v13+: topics by id */
	int64_t		used_us;
	uint32_t	gen;			/* bumped by every request */
	int32_t		nparts;
	int32_t		cap;
	SPart	   *parts;			/* grouped by topic */
} Session;

static Session *slots[SESSION_SLOTS];
static int	nsessions;
static uint32_t gen_counter;

static Session *
find_session(int32_t id)
{
	for (int i = 0; i < nsessions; i++)
		if (slots[i]->id == id)
			return slots[i];
	return NULL;
}

static void
drop_session(Session *x)
{
	for (int i = 0; i < nsessions; i++)
		if (slots[i] == x)
		{
			slots[i] = slots[--nsessions];
			break;
		}
	for (int32_t k = 0; k < x->nparts; k++)
		free(x->parts[k].key);
	free(x->parts);
	free(x);
}

/* a slot for a session of n partitions, evicting one if need be */
static bool
make_room(int32_t n)
{
	Session    *lru = NULL,
			   *small = NULL;
	int64_t		now = mq_now_us();

	if (nsessions < SESSION_SLOTS)
		return true;
	for (int i = 0; i < nsessions; i++)
	{
		Session    *x = slots[i];

		if (lru == NULL || x->used_us < lru->used_us)
			lru = x;
		if (small == NULL || x->nparts < small->nparts ||
			(x->nparts == small->nparts && x->used_us < small->used_us))
			small = x;
	}
	if (now - lru->used_us > SESSION_EVICT_US)
		drop_session(lru);
	else if (small->nparts < n)
		drop_session(small);
	else
		return false;
	return true;
}

static int32_t
new_id(void)
{
	uint32_t	id = 0;

	while (id == 0 || id > INT32_MAX || find_session((int32_t) id) != NULL)
	{
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = (uint32_t) mq_now_us();
		id &= INT32_MAX;
	}
	return (int32_t) id;
}

/* the topic key of s's topic t */
static KSlice
req_key(const FetchState *s, int32_t t)
{
	if (s->ids)
		return (KSlice){s->ids + 16 * t, 16};
	return s->topics[t];
}

static int32_t
find_part(const Session *x, KSlice key, int32_t partition, int32_t hint)
{
	for (int32_t i = 0; i < x->nparts; i++)
	{
		int32_t		k = (hint + i) % x->nparts;
		const SPart *p = &x->parts[k];

		if (p->partition == partition && p->keylen == key.len &&
			memcmp(p->key, key.p, key.len) == 0)
			return k;
	}
	return -1;
}

/* add or update fp (of topic key) in x, keeping x's parts grouped by topic */
static void
upsert(Session *x, KSlice key, const FPart *fp)
{
	int32_t		k = find_part(x, key, fp->partition, 0);
	int32_t		at = x->nparts;
	SPart	   *p;

	if (k < 0)
	{
		for (int32_t i = x->nparts - 1; i >= 0; i--)
			if (x->parts[i].keylen == key.len && memcmp(x->parts[i].key, key.p, key.len) == 0)
			{
				at = i + 1;
				break;
			}
		if (x->nparts == x->cap)
		{
			x->cap = x->cap ? 2 * x->cap : 8;
			x->parts = mq_realloc(x->parts, sizeof(SPart) * x->cap);
		}
		memmove(&x->parts[at + 1], &x->parts[at], sizeof(SPart) * (x->nparts - at));
		x->nparts++;
		p = &x->parts[at];
		memset(p, 0, sizeof(SPart));
		p->key = mq_malloc0(key.len + 1);
		memcpy(p->key, key.p, key.len);
		p->keylen = key.len;
		p->partition = fp->partition;
		p->hw = p->new_hw = -1;
		p->log_start = p->new_log_start = -1;
	}
	else
		p = &x->parts[k];
	p->offset = fp->offset;
	p->max_bytes = fp->max_bytes;
	p->current_epoch = fp->current_epoch;
	p->last_fetched_epoch = fp->last_fetched_epoch;
}

static void
forget(Session *x, const FetchState *s)
{
	for (int32_t f = 0; f < s->nforgotten; f++)
	{
		int32_t		k = find_part(x, s->forgotten[f].key, s->forgotten[f].partition, 0);

		if (k < 0)
			continue;
		free(x->parts[k].key);
		memmove(&x->parts[k], &x->parts[k + 1], sizeof(SPart) * (x->nparts - k - 1));
		x->nparts--;
	}
}

/* s's topics and partitions become all of x's */
static void
take_session(FetchState *s, const Session *x)
{
	size_t		len = 0,
				pos = 0;
	int32_t		t = -1;

	for (int32_t k = 0; k < x->nparts; k++)
		len += x->parts[k].keylen;
	free(s->topics);
	free(s->parts);
	free(s->ids);
	s->ids = NULL;
	s->sess_keys = mq_malloc0(len + 1);
	s->topics = mq_malloc0(sizeof(KSlice) * (x->nparts + 1));
	s->parts = mq_malloc0(sizeof(FPart) * (x->nparts + 1));
	if (x->ids)
		s->ids = mq_malloc0(16 * (x->nparts + 1));
	for (int32_t k = 0; k < x->nparts; k++)
	{
		const SPart *p = &x->parts[k];
		FPart	   *fp = &s->parts[k];

		if (t < 0 || p->keylen != x->parts[k - 1].keylen ||
			memcmp(p->key, x->parts[k - 1].key, p->keylen) != 0)
		{
			t++;
			memcpy(s->sess_keys + pos, p->key, p->keylen);
			if (x->ids)
			{
				memcpy(s->ids + 16 * t, p->key, 16);
				s->topics[t] = (KSlice){(const uint8_t *) "", 0};	/* until resolved */
			}
			else
				s->topics[t] = (KSlice){(const uint8_t *) s->sess_keys + pos, p->keylen};
			pos += p->keylen;
		}
		fp->topic = t;
		fp->partition = p->partition;
		fp->offset = p->offset;
		fp->max_bytes = p->max_bytes;
		fp->current_epoch = p->current_epoch;
		fp->last_fetched_epoch = p->last_fetched_epoch;
	}
	s->ntopics = t + 1;
	s->nparts = x->nparts;
}

/* a session for s's full fetch, if there is room: its id, or 0 */
static int32_t
open_session(FetchState *s)
{
	Session    *x;

	if (!make_room(s->nparts))
		return 0;
	x = mq_malloc0(sizeof(Session));
	x->id = new_id();
	x->epoch = 1;
	x->ids = s->ids != NULL;
	x->used_us = mq_now_us();
	x->gen = ++gen_counter;
	for (int32_t k = 0; k < s->nparts; k++)
		upsert(x, req_key(s, s->parts[k].topic), &s->parts[k]);
	slots[nsessions++] = x;
	s->sess_gen = x->gen;
	return x->id;
}

/* an error answer to the whole request */
static void
session_error(FetchState *s, int16_t code)
{
	KWriter    *w = &s->req->resp;

	kw_i32(w, 0);				/* throttle */
	kw_i16(w, code);
	kw_i32(w, 0);				/* session id */
	kw_array(w, 0);
}

bool
fsess_begin(FetchState *s)
{
	Session    *x;

	s->sess_id = 0;
	s->sess_incremental = false;
	if (s->req->api_version < 7)
		return true;
	if (s->session_epoch == 0 || s->session_epoch == -1)
	{
		if (s->session_id != 0 && (x = find_session(s->session_id)) != NULL)
			drop_session(x);
		if (s->session_epoch == 0)
			s->sess_id = open_session(s);
		return true;
	}
	x = find_session(s->session_id);
	if (x == NULL || x->epoch != s->session_epoch || x->ids != (s->ids != NULL))
	{
		session_error(s, x == NULL ? KERR_FETCH_SESSION_ID_NOT_FOUND :
					  x->epoch != s->session_epoch ? KERR_INVALID_FETCH_SESSION_EPOCH :
					  KERR_FETCH_SESSION_TOPIC_ID_ERROR);
		return false;
	}
	for (int32_t k = 0; k < s->nparts; k++)
		upsert(x, req_key(s, s->parts[k].topic), &s->parts[k]);
	forget(x, s);
	if (x->nparts == 0)
	{
		drop_session(x);		/* sessionless from here on */
		return true;
	}
	x->epoch = x->epoch == INT32_MAX ? 1 : x->epoch + 1;
	x->used_us = mq_now_us();
	x->gen = ++gen_counter;
	s->sess_gen = x->gen;
	s->sess_id = x->id;
	s->sess_incremental = true;
	take_session(s, x);
	return true;
}

bool
fsess_keep(FetchState *s, int32_t k, int16_t code, int64_t hw, int64_t log_start, size_t bytes)
{
	Session    *x = s->sess_id ? find_session(s->sess_id) : NULL;
	const FPart *fp = &s->parts[k];
	int32_t		i;
	SPart	   *p;

	if (x == NULL || x->gen != s->sess_gen)
		return true;
	i = find_part(x, req_key(s, fp->topic), fp->partition, k);
	if (i < 0)
		return true;
	p = &x->parts[i];
	p->new_hw = code != KERR_NONE ? -1 : hw;
	p->new_log_start = log_start;
	return !s->sess_incremental || bytes > 0 || code != KERR_NONE || hw != p->hw ||
		log_start != p->log_start;
}

void
fsess_sent(const FetchState *s)
{
	Session    *x = s->sess_id ? find_session(s->sess_id) : NULL;

	if (x == NULL || x->gen != s->sess_gen)
		return;
	for (int32_t k = 0; k < x->nparts; k++)
	{
		x->parts[k].hw = x->parts[k].new_hw;
		x->parts[k].log_start = x->parts[k].new_log_start;
	}
}

int
fsess_count(void)
{
	return nsessions;
}
