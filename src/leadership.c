/*-------------------------------------------------------------------------
 *
 * leadership.c
 *	  Enforcing the roles the broker assigns: refusing produce and reads on
 *	  a partition this node does not lead (or holds no replica of:
 *	  src/sql/66_placement.sql), and the broker's attachment to its node
 *	  (mq._replica_attach_broker).
 *
 * The broker decides roles and epochs; the node only enforces them (see
 * replica.c's header).  A node's leadership lives only as long as its
 * broker: once a node has had a broker, a leader whose broker is gone, or
 * whose broker's lease (mq.replica_renew_lease, renewed every tick for
 * session.timeout.ms) ran out, takes no produce and serves no reads.
 *
 * Locking: the state is read with the latest snapshot, under the
 * partition's produce lock when called from an append (the broker changes
 * roles under the same lock).  The broker's node session holds the
 * advisory lock MQ_LOCK_BROKER for as long as it lives; others test it
 * with a conditional share lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mq.h"

PG_FUNCTION_INFO_V1(mq_replica_attach_broker);

void
mq_replica_read_state(int32 topic_id, int32 partition, MqReplicaState *st)
{
	static SPIPlanPtr plan = NULL;
	MqSpiSave	spi;
	Datum		args[2] = {Int32GetDatum(topic_id), Int32GetDatum(partition)};
	bool		isnull;

	memset(st, 0, sizeof(*st));
	st->leader_id = -1;
	st->high_watermark = -1;
	st->hosted = true;

	/* the latest snapshot: a role or epoch changed since ours must count */
	PushActiveSnapshot(GetLatestSnapshot());
	mq_spi_begin(&spi);
	if (plan == NULL)
	{
		Oid			argtypes[2] = {INT4OID, INT4OID};

		plan = mq_spi_prepare("SELECT p.role, p.leader_epoch, p.high_watermark, r.leader_id, "
							  "       r.leader_name, pg_catalog.cardinality(r.isr), "
							  "       EXISTS (SELECT 1 FROM mq.replica_broker), "
							  "       coalesce(r.hosted, true), "
							  "       (SELECT b.lease_until FROM mq.replica_broker b) "
							  "  FROM mq.partition_state p "
							  "  LEFT JOIN mq.replica_partition r "
							  "    ON r.topic_id = p.topic_id AND r.partition = p.partition "
							  " WHERE p.topic_id = $1 AND p.partition = $2",
							  2, argtypes);
	}
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "mq: replica state lookup failed");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *s;
		Datum		d;

		st->found = true;
		s = SPI_getvalue(tup, desc, 1);
		strlcpy(st->role, s ? s : "", sizeof(st->role));
		st->leader_epoch = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull)
			st->high_watermark = DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 4, &isnull);
		if (!isnull)
			st->leader_id = DatumGetInt32(d);
		s = SPI_getvalue(tup, desc, 5);
		if (s)
			strlcpy(st->leader_name, s, sizeof(st->leader_name));
		d = SPI_getbinval(tup, desc, 6, &isnull);
		st->isr_size = isnull ? 0 : DatumGetInt32(d);
		st->brokered = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
		st->hosted = DatumGetBool(SPI_getbinval(tup, desc, 8, &isnull));
		d = SPI_getbinval(tup, desc, 9, &isnull);
		st->lease_until = isnull ? 0 : DatumGetTimestampTz(d);
	}
	mq_spi_end(&spi);
	PopActiveSnapshot();
}

void
mq_replica_raise_not_leader(const char *topic_name, int32 partition, MqReplicaState *st)
{
	if (st->found && !st->hosted)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_NOT_LEADER),
				 errmsg("this node holds no replica of \"%s\" partition %d", topic_name, partition),
				 errdetail("The topic is replicated on this node only in part (its placement, or a "
						   "replica that moved away)."),
				 errhint("mq_coord.metadata on the coordinator names the partition's replicas and leader.")));
	if (st->leader_id >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_NOT_LEADER),
				 errmsg("this node is not the leader of \"%s\" partition %d: broker %d (%s) leads it",
						topic_name, partition, st->leader_id,
						st->leader_name[0] ? st->leader_name : "address unknown"),
				 errdetail("This node's replica is a %s in leader epoch %d.",
						   st->role, st->leader_epoch),
				 errhint("Send to the leader; the view mq.replica_status on any node names it.")));
	ereport(ERROR,
			(errcode(ERRCODE_MQ_NOT_LEADER),
			 errmsg("this node is not the leader of \"%s\" partition %d, and the leader is not known yet",
					topic_name, partition),
			 errdetail("This node's replica is a %s in leader epoch %d.", st->role, st->leader_epoch),
			 errhint("An election may be under way: retry shortly, then look at mq.replica_status.")));
}

/*
 * Is the node's broker attached (its session holds MQ_LOCK_BROKER)?  A
 * conditional share lock that we get means nobody holds it.  The broker's
 * own session holds it already and asks nothing of the lock manager.
 */
static bool
broker_attached(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, MQ_LOCK_BROKER);
	if (LockHeldByMe(&tag, ExclusiveLock))
		return true;
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ShareLock, false);
	return false;
}

/*
 * A leader that lost its broker, or whose broker's lease ran out (paused or
 * stuck: another broker may be elected by now): refuse as not_leader.  A
 * broker that is gone is named as such even once its lease has run out
 * too, which the lease soon does after a kill.
 */
void
mq_replica_check_broker(const char *topic_name, int32 partition, MqReplicaState *st)
{
	if (!st->brokered || strcmp(st->role, "leader") != 0)
		return;
	if (!broker_attached())
		ereport(ERROR,
				(errcode(ERRCODE_MQ_NOT_LEADER),
				 errmsg("this node's broker is not running, so it no longer leads \"%s\" partition %d",
						topic_name, partition),
				 errdetail("The node led leader epoch %d; without its broker it cannot learn that another "
						   "replica was elected meanwhile.", st->leader_epoch),
				 errhint("Send to the new leader: mq_coord.metadata on the coordinator names it.")));
	if (st->lease_until != 0 && st->lease_until < GetCurrentTimestamp())
		ereport(ERROR,
				(errcode(ERRCODE_MQ_NOT_LEADER),
				 errmsg("this node's broker has not renewed its lease since %s, so it no longer leads \"%s\" partition %d",
						timestamptz_to_str(st->lease_until), topic_name, partition),
				 errdetail("The node led leader epoch %d; its broker is paused or stuck, and another replica "
						   "may have been elected meanwhile.", st->leader_epoch),
				 errhint("Send to the new leader: mq_coord.metadata on the coordinator names it.")));
}

/*
 * mq._replica_attach_broker(): the broker's node session holds the broker
 * lock for as long as it lives (mq.replica_attach_broker records which
 * broker).  A second broker on the same node is refused.
 */
Datum
mq_replica_attach_broker(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, MQ_LOCK_BROKER);
	if (!LockHeldByMe(&tag, ExclusiveLock) &&
		LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_MQ_BROKER_ALREADY_ATTACHED),
				 errmsg("another mq-broker is attached to this node"),
				 errhint("Run one broker per node; see mq.replica_broker for the one attached.")));
	PG_RETURN_VOID();
}

/*
 * Called by mq_log_append under the produce lock for replicated
 * partitions: only the leader in its current epoch takes new records.
 * The broker changes the role under the same lock, so an append either
 * finishes before a node is demoted or sees the demotion.
 */
int32
mq_replica_check_produce(MqTopic *topic, int32 partition)
{
	MqReplicaState st;

	mq_replica_read_state(topic->topic_id, partition, &st);
	if (st.found && strcmp(st.role, "follower") == 0)
		mq_replica_raise_not_leader(topic->name, partition, &st);
	if (st.found)
		mq_replica_check_broker(topic->name, partition, &st);
	return st.found ? st.leader_epoch : -1;
}

/*
 * Called by fetch.c before it reads a replicated partition (mq.fetch,
 * mq.poll, and again after every long-poll wake-up): consumers read from
 * the leader, as Kafka's do, so that what they see is what the leader's
 * high watermark covers now, not what a follower heard of last.  A
 * follower, or a resigned leader, raises not_leader naming the leader.
 * Unreplicated partitions never get here (the topic cache knows), so they
 * pay nothing; a replicated one pays one catalog lookup per read.
 */
int32
mq_replica_check_leader(MqTopic *topic, int32 partition)
{
	MqReplicaState st;

	mq_replica_read_state(topic->topic_id, partition, &st);
	if (st.found && strcmp(st.role, "leader") != 0)
		mq_replica_raise_not_leader(topic->name, partition, &st);
	if (st.found)
		mq_replica_check_broker(topic->name, partition, &st);
	return st.found ? st.leader_epoch : -1;
}
