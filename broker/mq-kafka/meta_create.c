/*-------------------------------------------------------------------------
 *
 * meta_create.c
 *	  Automatic topic creation by Metadata in a replicated cluster, as a
 *	  Kafka cluster does it with auto.create.topics.enable: a topic a
 *	  producer names that the cluster does not have is made on the
 *	  coordinator (mq_coord.create_topic, --auto-create-topics partitions,
 *	  replication factor 1: Kafka's default.replication.factor), where the
 *	  brokers place it and elect its leader, as for CreateTopics
 *	  (h_admin.c).  On a single daemon Metadata creates it locally itself
 *	  (h_metadata.c).
 *
 * Two jobs: on this node as the client's role, which of the names the
 * view lacks the role may create (mq.has_topic_privilege, a valid name,
 * not a topic of this node); then on the coordinator as the daemon's
 * role, their creation.  A creation that fails (another daemon made the
 * topic first, or a name colliding with another's) is left to Metadata's
 * answer: the topic is then known, or unknown.  Each job runs on a
 * request of its own (check_req, coord_req) whose state is the
 * MetaCreate, and the Metadata request goes on with done.  Loop thread
 * only.
 *
 *-------------------------------------------------------------------------
 */
#include "meta_create.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "coffsets.h"
#include "pgbinary.h"
#include "util.h"

#define COORD_CREATE_SQL "SELECT mq_coord.create_topic($1, $2)"

static void
created(KRequest *sub)
{
	MetaCreate *mc = sub->state;
	int16_t		code;

	for (int i = 0; i < mc->coord.n; i++)
	{
		const char *name = mc->coord.stmts[i].values[0];

		if (kstmt_failed(&mc->coord.stmts[i], &code))
			continue;
		for (int32_t j = 0; j < mc->n; j++)
			if (mc->names[j] && strcmp(mc->names[j], name) == 0)
				mc->made[j] = true;
	}
	mc->done(mc->req);
}

static void
checked(KRequest *sub)
{
	MetaCreate *mc = sub->state;
	KStmt	   *st = &mc->check.stmts[0];
	int16_t		code;
	char		parts[16];

	snprintf(parts, sizeof(parts), "%d", kconfig_num_partitions());
	for (int r = 0; !kstmt_failed(st, &code) && r < PQntuples(st->res); r++)
	{
		KStmt	   *c = kjob_add(&mc->coord, COORD_CREATE_SQL, 0);

		kstmt_text(c, MQ_TEXTOID, PQgetvalue(st->res, r, 0));
		kstmt_text(c, MQ_INT4OID, parts);
	}
	mc->coord_req.state = mc;	/* no role: the daemon's on the coordinator */
	pool_run_on(cluster_coord_pool(), &mc->coord_req, &mc->coord, created);
}

void
meta_create_run(MetaCreate *mc, KRequest *req, const KSlice *names, int32_t n, KDoneFn done)
{
	MqArray		arr;

	mc->req = req;
	mc->done = done;
	mc->n = n;
	mc->names = mq_malloc0(sizeof(char *) * (n > 0 ? n : 1));
	mc->made = mq_malloc0(n > 0 ? n : 1);
	mq_array_init(&arr, MQ_TEXTOID);
	for (int32_t i = 0; i < n; i++)
	{
		if (names[i].len <= 0 || kslice_eq(names[i], CONSUMER_OFFSETS_TOPIC))
			continue;
		mc->names[i] = kslice_dup(names[i]);
		if (cluster_partition(mc->names[i], 0) != NULL)
		{
			free(mc->names[i]); /* the cluster has it */
			mc->names[i] = NULL;
			continue;
		}
		mq_array_add(&arr, mc->names[i], strlen(mc->names[i]));
	}
	if (arr.nelems == 0)
	{
		mq_array_free(&arr);
		done(req);
		return;
	}
	kstmt_array(kjob_add(&mc->check, META_CREATABLE_SQL, 0), MQ_TEXTARRAYOID, &arr);
	mq_array_free(&arr);
	mc->check_req.state = mc;
	mc->check_req.role = req->role;	/* borrowed: the client's */
	pool_run(&mc->check_req, &mc->check, checked);
}

bool
meta_create_made(const MetaCreate *mc, KSlice name)
{
	for (int32_t i = 0; i < mc->n; i++)
		if (mc->made[i] && kslice_eq(name, mc->names[i]))
			return true;
	return false;
}

void
meta_create_free(MetaCreate *mc)
{
	kjob_free(&mc->check);
	kjob_free(&mc->coord);
	for (int32_t i = 0; i < mc->n; i++)
		free(mc->names[i]);
	free(mc->names);
	free(mc->made);
}
