/*-------------------------------------------------------------------------
 *
 * placement.c
 *	  What this broker's node holds of the replicated topics, and the copy
 *	  throttle of new replicas (docs/replication.md, "Placement and
 *	  reassignment").
 *
 * A topic is placed on the node when one of its replicas first shows up
 * here, and again when the coordinator's partition count grows, in chunks
 * of partitions: each chunk one node transaction (mq.replica_place_topic)
 * that creates or grows the topic and turns every partition replication
 * has not touched into a follower, hosted when this broker replicates it
 * and not hosted otherwise, so that the node never serves a partition it
 * does not replicate, not even for an instant.  Chunks keep every
 * statement well inside node.timeout.ms, whose miss counts as a lost node
 * (session.c), and every tick short enough to renew our lease and
 * heartbeat: a chunk that took over a quarter of node.timeout.ms halves
 * the next, one under a sixteenth doubles it (4 first, at most 64), and a
 * tick places for at most a quarter of the shorter of node.timeout.ms and
 * session.timeout.ms (placement_tick); its partitions beyond the chunks
 * placed so far wait for the next tick (issue 25: 64 partitions in one
 * statement took over 5 s on a loaded machine).  A
 * broker with a rack in its config registers it once per liveness.  A
 * replica the coordinator no longer assigns us (it moved away, or the
 * topic went) is marked not hosted on the node (mq.replica_unhost),
 * retried every tick until the node has it; a deleted topic's copy is
 * then dropped (topic_drop.c).  Each tick also reads which of
 * our partitions are moving (mq_coord.moving): their target replica set
 * and throttle, and the throttled moves that share a leader with ours.  A
 * follower that is a throttled copy (a replica of a moving partition, not
 * yet in the ISR) copies at most its rate: its share of the leader's
 * budget or of this broker's, whichever is smaller (throttle.c); after
 * each fetch it waits as long as the fetched bytes take at that rate.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "placement.h"
#include "util.h"

/* partitions per placing statement: the first, and at most */
#define PLACE_CHUNK_FIRST 4
#define PLACE_CHUNK_MAX 64

typedef struct PlacedTopic
{
	char	   *topic;
	int			partitions;		/* the count the node was placed with so far */
	char	   *config;			/* the coordinator's config it was placed with */
	char	   *incarnation;	/* the coordinator's incarnation it was placed in */
	struct PlacedTopic *next;
} PlacedTopic;

typedef struct Unhost
{
	char	   *topic;
	int			partition;
	struct Unhost *next;
} Unhost;

static PlacedTopic *
find_placed(Broker *b, const char *topic)
{
	for (PlacedTopic *t = b->placed; t; t = t->next)
		if (strcmp(t->topic, topic) == 0)
			return t;
	return NULL;
}

/* The partitions of topic that we replicate, as int4[] text (malloc'd). */
static char *
hosted_text(Broker *b, const char *topic)
{
	size_t		size = 16,
				len = 0;
	char	   *s;

	for (Part *p = b->parts; p; p = p->next)
		size += 12;
	s = mq_malloc0(size);
	len += snprintf(s, size, "{");
	for (Part *p = b->parts; p; p = p->next)
		if (strcmp(p->topic, topic) == 0)
			len += snprintf(s + len, size - len, "%s%d", len > 1 ? "," : "", p->partition);
	snprintf(s + len, size - len, "}");
	return s;
}

/*
 * A new tick: placing may take at most a quarter of the shorter of
 * node.timeout.ms and session.timeout.ms from now (at least one statement),
 * so that the tick still renews our lease and heartbeat in time.
 */
void
placement_tick(Broker *b)
{
	int			ms = b->cfg->node_timeout_ms < b->cfg->session_timeout_ms ?
		b->cfg->node_timeout_ms : b->cfg->session_timeout_ms;

	b->place_done = 0;
	b->place_until_us = mq_now_us() + (int64_t) ms * 250;
}

/*
 * The next chunk's size after one of n partitions took took_us: halved
 * when it took more than a quarter of node.timeout.ms (or failed: ok
 * false), doubled when it took less than a sixteenth.
 */
static void
adapt_chunk(Broker *b, int n, int64_t took_us, bool ok)
{
	int64_t		limit_us = (int64_t) b->cfg->node_timeout_ms * 1000;

	if (!ok || took_us > limit_us / 4)
		b->place_chunk = n > 1 ? n / 2 : 1;
	else if (took_us < limit_us / 16 && n >= b->place_chunk && b->place_chunk < PLACE_CHUNK_MAX)
		b->place_chunk = n * 2 < PLACE_CHUNK_MAX ? n * 2 : PLACE_CHUNK_MAX;
}

/* One placing statement: the topic on the node with have + a chunk partitions. */
static bool
place_chunk(Broker *b, Part *p, PlacedTopic *t)
{
	MqError		err = MQ_ERROR_INIT;
	char	   *hosted = hosted_text(b, p->topic);
	int			want,
				absent;
	int64_t		start = mq_now_us();
	bool		ok;

	if (b->place_chunk <= 0)
		b->place_chunk = PLACE_CHUNK_FIRST;
	want = t->partitions + b->place_chunk < p->partitions ?
		t->partitions + b->place_chunk : p->partitions;
	ok = node_place_topic(b, p, want, hosted, &absent, &err);
	b->place_done++;
	adapt_chunk(b, want - t->partitions, mq_now_us() - start, ok);
	if (!ok)
		log_mq_error("cannot place the topic on the node", &err);
	else
	{
		mq_log_info("placed topic \"%s\" on the node: %d of %d partitions, replicas here %s "
					"(%d newly marked not hosted)", p->topic, want, p->partitions,
					want == p->partitions ? hosted : "(listed with the last chunk)", absent);
		t->partitions = want;
		free(t->config);
		t->config = p->config ? mq_strdup(p->config) : NULL;
		free(t->incarnation);
		t->incarnation = mq_strdup(p->incarnation);
	}
	mq_error_free(&err);
	free(hosted);
	return ok;
}

/*
 * Place p's topic on the node unless it is placed with this many
 * partitions and the coordinator's config: a chunk of partitions per
 * statement, each its own transaction (created or grown, its config
 * brought to the coordinator's, and adopted), as many as this tick's
 * time allows; the next tick goes on from what the node has.  A chunk
 * counts on the node only once committed, and placing it again changes
 * nothing, so a chunk that failed (a lost node) is simply placed again.
 * A new config (AlterConfigs in the cluster) places the topic again, as
 * it is.  So does a new incarnation (the topic was created again under its
 * name), from its first chunk: the node drops the copy it holds of the
 * old one in that chunk's transaction (mq.replica_place_topic).  False
 * while p's partition is not on the node.
 */
bool
placement_ensure_topic(Broker *b, Part *p)
{
	PlacedTopic *t = find_placed(b, p->topic);

	if (t && (t->incarnation == NULL || strcmp(t->incarnation, p->incarnation) != 0))
		t->partitions = 0;		/* placed afresh */
	if (t && t->partitions >= p->partitions && t->config && p->config && strcmp(t->config, p->config) != 0 &&
		b->node != NULL && (b->place_done == 0 || mq_now_us() < b->place_until_us))
		(void) place_chunk(b, p, t);
	if (t && t->partitions >= p->partitions)
		return true;
	if (t == NULL)
	{
		t = mq_malloc0(sizeof(PlacedTopic));
		t->topic = mq_strdup(p->topic);
		t->next = b->placed;
		b->placed = t;
	}
	while (t->partitions < p->partitions && b->node != NULL &&
		   (b->place_done == 0 || mq_now_us() < b->place_until_us))
		if (!place_chunk(b, p, t))
			break;
	return p->partition < t->partitions;
}

/* The node dropped topic (topic_drop.c): placed again if assigned again. */
void
placement_unplace(Broker *b, const char *topic)
{
	PlacedTopic **pp = &b->placed;

	while (*pp && strcmp((*pp)->topic, topic) != 0)
		pp = &(*pp)->next;
	if (*pp)
	{
		PlacedTopic *t = *pp;

		*pp = t->next;
		free(t->topic);
		free(t->config);
		free(t->incarnation);
		free(t);
	}
}

/* The coordinator no longer assigns p to us: mark it not hosted (retried). */
void
placement_forget(Broker *b, const Part *p)
{
	Unhost	   *u = mq_malloc0(sizeof(Unhost));

	u->topic = mq_strdup(p->topic);
	u->partition = p->partition;
	u->next = b->unhosts;
	b->unhosts = u;
}

static void
free_unhost(Unhost *u)
{
	free(u->topic);
	free(u);
}

/* Mark not hosted what moved away; keep what the node did not take yet. */
void
placement_retry_unhost(Broker *b)
{
	Unhost	  **pp = &b->unhosts;

	while (*pp && b->node)
	{
		Unhost	   *u = *pp;
		MqError		err = MQ_ERROR_INIT;
		bool		done = broker_find_part(b, u->topic, u->partition) != NULL;	/* assigned again */

		if (!done && node_unhost(b, u->topic, u->partition, &err))
		{
			mq_log_info("%s[%d]: no longer a replica here; the node stops serving it",
						u->topic, u->partition);
			done = true;
		}
		else if (!done && (mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_TOPIC) ||
						   mq_error_is(&err, MQ_SQLSTATE_UNKNOWN_PARTITION)))
			done = true;		/* never placed here */
		else if (!done)
			log_mq_error("cannot mark a replica that moved away not hosted; retrying", &err);
		mq_error_free(&err);
		if (!done)
		{
			pp = &u->next;
			continue;
		}
		*pp = u->next;
		free_unhost(u);
	}
}

/* One of our moves: its target, and our replica's copy rate (0: no limit). */
static void
apply_moving(Broker *b, const Moving *m, const Throttles *t)
{
	Part	   *p = broker_find_part(b, m->topic, m->partition);
	int64_t		rate;
	const ThrottleLoad *l;

	if (p == NULL)
		return;
	memcpy(p->target, m->target, sizeof(int) * m->ntarget);
	p->ntarget = m->ntarget;
	rate = throttle_rate(t, m, b->cfg->broker_id);
	if (rate > 0 && rate != p->copy_rate && (l = throttles_load(t, m->leader)) != NULL)
		mq_log_info("%s: copying at most %lld bytes/s (throttle %lld; leader %d serves %d "
					"throttled copies, this broker receives %d)", part_label(p), (long long) rate,
					(long long) m->throttle_bytes, m->leader, l->served,
					throttles_load(t, b->cfg->broker_id)->received);
	p->copy_rate = rate;
}

/* Our configured rack, once per liveness (an administrator's stays otherwise). */
void
placement_register_rack(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (b->cfg->rack == NULL || b->rack_live_since_us == b->live_since_us)
		return;
	if (!coord_register_rack(b, &err))
	{
		log_mq_error("cannot register our rack on the coordinator; retrying", &err);
		mq_error_free(&err);
		return;
	}
	b->rack_live_since_us = b->live_since_us;
	mq_log_info("registered rack \"%s\" on the coordinator", b->cfg->rack);
}

/*
 * Which of our partitions are moving, each tick after the assignments,
 * and the rate of each throttled copy we receive: the moves are counted
 * first (throttle.c), then applied.  A failed read changes nothing.
 */
bool
placement_read_moving(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;
	Moving	   *rows;
	int			nrows;
	Throttles	t = {0};

	if (!coord_moving(b, &rows, &nrows, &err))
	{
		mq_error_free(&err);
		return false;
	}
	for (int i = 0; i < nrows; i++)
		throttles_add(&t, &rows[i]);
	for (Part *p = b->parts; p; p = p->next)
		p->ntarget = 0;
	for (int i = 0; i < nrows; i++)
		if (int_in(b->cfg->broker_id, rows[i].replicas, rows[i].nreplicas))
			apply_moving(b, &rows[i], &t);
	for (Part *p = b->parts; p; p = p->next)
		if (p->ntarget == 0)
			p->copy_rate = 0;	/* not moving: no limit */
	throttles_free(&t);
	moving_free(rows, nrows);
	return true;
}

/* After a fetch of bytes: no next fetch before our copy rate allows it. */
void
placement_throttle(Broker *b, Part *p, int64_t bytes)
{
	int64_t		until;

	if (p->copy_rate <= 0)
		return;
	until = mq_now_us() + bytes * 1000000 / p->copy_rate;
	if (until > p->backoff_until_us)
		p->backoff_until_us = until;
}

void
placement_free(Broker *b)
{
	PQclear(b->drops_gone);
	b->drops_gone = NULL;
	while (b->placed)
	{
		PlacedTopic *t = b->placed;

		b->placed = t->next;
		free(t->topic);
		free(t->config);
		free(t->incarnation);
		free(t);
	}
	while (b->unhosts)
	{
		Unhost	   *u = b->unhosts;

		b->unhosts = u->next;
		free_unhost(u);
	}
}
