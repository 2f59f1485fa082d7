/*-------------------------------------------------------------------------
 *
 * assign.c
 *	  The partitions this broker holds a replica of, as the coordinator
 *	  assigns them: read every tick (with the heartbeat and the list of
 *	  live brokers), kept as Part entries, forgotten when unassigned (the
 *	  node then stops serving them); and the topic placed on the node the
 *	  first time one of its replicas shows up (placement.c).
 *
 * Topic config arrives as jsonb text and is read with jansson, never by
 * substring.
 *
 * Locking: none; the broker's one thread.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker.h"
#include "calls.h"
#include "placement.h"
#include "util.h"

bool
broker_is_live(Broker *b, int id)
{
	return int_in(id, b->live_brokers, b->nlive);
}

/* Does the topic config allow unclean leader election?  Unparsable: no. */
bool
topic_config_unclean(const char *config_json)
{
	json_error_t jerr;
	json_t	   *root = config_json ? json_loads(config_json, 0, &jerr) : NULL;
	json_t	   *v = root ? json_object_get(root, "unclean.leader.election.enable") : NULL;
	bool		on = v && (json_is_true(v) ||
						   (json_is_string(v) && strcmp(json_string_value(v), "true") == 0));

	json_decref(root);
	return on;
}

static char *
replace_str(char *old, const char *s)
{
	if (old && s && strcmp(old, s) == 0)
		return old;
	free(old);
	return s ? mq_strdup(s) : NULL;
}

_Static_assert(PART_NONE == 0, "a zeroed Part is in state NONE");

static Part *
new_part(Broker *b, const char *topic, int partition, const char *incarnation)
{
	Part	   *p = mq_malloc0(sizeof(Part));

	p->topic = mq_strdup(topic);
	p->partition = partition;
	p->incarnation = mq_strdup(incarnation);
	/* zeroed: state PART_NONE (only fsm_fire changes it from here on) */
	p->applied_epoch = -1;
	p->m_log_end = p->m_hwm = p->m_leader_log_end = -1;
	p->applied_hwm = p->applied_log_start = -1;
	p->next = b->parts;
	b->parts = p;
	mq_log_info("%s: assigned a replica; will create it on the node if missing", part_label(p));
	return p;
}

/*
 * A partition of a topic created again under its name (another
 * incarnation) is another partition: the old one's Part, left unseen, is
 * forgotten below as a deleted topic's are, and the new one starts afresh.
 */
static void
apply_assignment(Broker *b, const Assignment *a)
{
	Part	   *p = broker_find_part(b, a->topic, a->partition);

	if (p == NULL || strcmp(p->incarnation, a->incarnation) != 0)
		p = new_part(b, a->topic, a->partition, a->incarnation);
	p->seen = true;
	p->partitions = a->partitions;
	if (p->config == NULL || strcmp(p->config, a->config) != 0)
	{
		p->config = replace_str(p->config, a->config);
		p->unclean = topic_config_unclean(p->config);
	}
	p->lock_id = a->lock_id;
	p->nreplicas = parse_int_array(a->replicas, p->replicas, MAX_REPLICAS);
	p->leader = a->leader;
	p->leader_epoch = a->leader_epoch;
	p->nisr = parse_int_array(a->isr, p->isr, MAX_REPLICAS);
	p->leader_conninfo = replace_str(p->leader_conninfo, a->leader_conninfo);
	p->leader_name = replace_str(p->leader_name, a->leader_name);
	p->elect_preferred = a->elect_preferred;
}

void
free_part(Part *p)
{
	free(p->topic);
	free(p->config);
	free(p->leader_conninfo);
	free(p->leader_name);
	free(p->incarnation);
	free(p);
}

/*
 * Partitions no longer assigned (moved away, or their topic deleted or
 * created again): forget them, and look for deleted topics to drop from
 * the node (topic_drop.c).
 */
static void
forget_unassigned(Broker *b)
{
	Part	  **pp = &b->parts;

	while (*pp)
	{
		Part	   *p = *pp;

		if (p->seen)
		{
			pp = &p->next;
			continue;
		}
		mq_log_info("%s: no longer assigned; dropping its state", part_label(p));
		b->drops_due = true;
		placement_forget(b, p); /* the node stops serving it */
		follower_stop(p);
		release_lock(b, p);
		*pp = p->next;
		free_part(p);
	}
}

/*
 * The heartbeat comes last: it is a write, so its commit waits for the
 * coordinator's synchronous standby, if it has one.  Once it returns
 * without a warning (session.c), the standby holds everything the two reads
 * before it saw, and a failover cannot take back what this tick acts on
 * (docs/replication.md, "A highly available coordinator").  When it fails,
 * the tick does nothing.
 */
bool
read_assignments(Broker *b)
{
	MqError		err = MQ_ERROR_INIT;

	if (!coord_live_brokers(b, &err))
	{
		mq_error_free(&err);
		return false;
	}
	for (Part *p = b->parts; p; p = p->next)
		p->seen = false;
	if (!coord_assignments(b, apply_assignment, &err))
	{
		mq_error_free(&err);
		return false;
	}
	forget_unassigned(b);
	if (!placement_read_moving(b))	/* a read too: before the heartbeat */
		return false;
	topic_drop_read(b);			/* likewise */
	if (!coord_heartbeat(b, &err))
	{
		mq_error_free(&err);
		return false;
	}
	placement_tick(b);			/* the time this tick may place topics */
	placement_register_rack(b);
	placement_retry_unhost(b);	/* acts on what the standby holds */
	topic_drop_apply(b);
	return true;
}

/*
 * The topic on the node, with only our replicas hosted, the first time we
 * see one of its replicas and whenever its partition count grows
 * (placement.c).
 */
bool
ensure_topic(Broker *b, Part *p)
{
	return placement_ensure_topic(b, p);
}
