/*-------------------------------------------------------------------------
 *
 * group_cleanup.c
 *	  Kafka's cleanup of Empty groups: a group held here that has no
 *	  members and of which the database holds nothing (no committed offset,
 *	  no SQL group, no saved membership: mq.kafka_groups_unused) is dropped,
 *	  as Kafka's group coordinator makes such a group Dead when a topic is
 *	  deleted (h_topic_delete.c calls group_cleanup) and at every offsets
 *	  retention check (offsets.retention.check.interval.ms, 10 minutes).
 *	  Before, a consumer group whose members left without committing stayed
 *	  in ListGroups, Empty, for as long as the daemon ran.  Loop thread; one
 *	  statement at a time, as the daemon's role (a group it may not read is
 *	  kept).  Not in a replicated cluster, where a group's offsets live on
 *	  its partitions' leaders, not in this node's database alone.
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "group.h"
#include "pgbinary.h"
#include "util.h"

/* Kafka's offsets.retention.check.interval.ms default */
#define CLEANUP_INTERVAL_MS 600000

#define UNUSED_SQL "SELECT mq.kafka_groups_unused($1)"

static struct event *cleanup_timer;
static KJob job;
static KRequest sub;
static bool running;
static bool again;				/* asked while running: once more after */

/* Empty, and no member id given out that may still come back (KIP-394) */
static bool
is_empty(KGroup *g)
{
	return g->nmembers == 0 && g->state == KG_EMPTY && !member_pending_any(g);
}

/* the groups the database holds nothing of: forgotten, if still Empty */
static void
cleanup_done(KRequest *r)
{
	const PGresult *res = job.n > 0 ? job.stmts[0].res : NULL;

	for (int i = 0; res && i < PQntuples(res); i++)
	{
		const char *id = PQgetvalue(res, i, 0);
		KGroup	   *g = group_find(id);

		if (g && is_empty(g) && group_forget(id))
			mq_log_info("group \"%s\" is empty and has no committed offsets: dropped, as Kafka does", id);
	}
	kjob_free(&job);
	running = false;
	if (again)
	{
		again = false;
		group_cleanup();
	}
}

void
group_cleanup(void)
{
	MqArray		ids;
	int			n = 0;

	if (cluster_enabled() || group_store_loading())
		return;
	if (running)
	{
		again = true;
		return;
	}
	mq_array_init(&ids, MQ_TEXTOID);
	for (KGroup *g = group_list(); g; g = g->next)
		if (is_empty(g))
		{
			mq_array_add(&ids, g->id, strlen(g->id));
			n++;
		}
	if (n > 0)
	{
		kstmt_array(kjob_add(&job, UNUSED_SQL, 0), MQ_TEXTARRAYOID, &ids);
		memset(&sub, 0, sizeof(sub));
		running = true;
		pool_run_on(pool_local(), &sub, &job, cleanup_done);
	}
	mq_array_free(&ids);
}

static void
on_cleanup_timer(evutil_socket_t fd, short what, void *arg)
{
	group_cleanup();
}

/* the groups kept before a restart (group_start), then the cleanup's timer */
void
group_cleanup_start(void)
{
	struct timeval tv = {CLEANUP_INTERVAL_MS / 1000, 0};

	group_start();
	cleanup_timer = event_new(kbase, -1, EV_PERSIST, on_cleanup_timer, NULL);
	evtimer_add(cleanup_timer, &tv);
}
