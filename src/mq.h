/*-------------------------------------------------------------------------
 *
 * mq.h
 *	  Declarations shared by the C files of the mq extension.
 *
 * The extension's own SQLSTATEs live here, one per condition, in class
 * "MQ".  docs/errors.md lists them; keep the two in step.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_H
#define MQ_H

#include "postgres.h"

#include "access/htup.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"
#include "executor/spi.h"

/* SQLSTATEs (class MQ) */
#define ERRCODE_MQ_UNKNOWN_TOPIC			MAKE_SQLSTATE('M','Q','0','0','1')
#define ERRCODE_MQ_TOPIC_EXISTS				MAKE_SQLSTATE('M','Q','0','0','2')
#define ERRCODE_MQ_INVALID_TOPIC_NAME		MAKE_SQLSTATE('M','Q','0','0','3')
#define ERRCODE_MQ_INVALID_CONFIG			MAKE_SQLSTATE('M','Q','0','0','4')
#define ERRCODE_MQ_INVALID_PARTITIONS		MAKE_SQLSTATE('M','Q','0','0','5')
#define ERRCODE_MQ_UNKNOWN_PARTITION		MAKE_SQLSTATE('M','Q','0','0','6')
#define ERRCODE_MQ_OFFSET_OUT_OF_RANGE		MAKE_SQLSTATE('M','Q','0','0','7')
#define ERRCODE_MQ_INVALID_RECORD			MAKE_SQLSTATE('M','Q','0','0','8')
#define ERRCODE_MQ_LOG_IMMUTABLE			MAKE_SQLSTATE('M','Q','0','0','9')
#define ERRCODE_MQ_INVALID_ARGUMENT			MAKE_SQLSTATE('M','Q','0','1','0')
#define ERRCODE_MQ_OUT_OF_ORDER_SEQUENCE	MAKE_SQLSTATE('M','Q','0','1','1')
#define ERRCODE_MQ_PRODUCER_FENCED			MAKE_SQLSTATE('M','Q','0','1','2')
#define ERRCODE_MQ_UNKNOWN_PRODUCER_ID		MAKE_SQLSTATE('M','Q','0','1','3')
#define ERRCODE_MQ_INVALID_PRODUCER_EPOCH	MAKE_SQLSTATE('M','Q','0','1','4')
/* replication (replica.c, src/sql/60_replica.sql; docs/replication.md) */
#define ERRCODE_MQ_NOT_LEADER				MAKE_SQLSTATE('M','Q','0','2','0')
#define ERRCODE_MQ_NOT_ENOUGH_REPLICAS		MAKE_SQLSTATE('M','Q','0','2','1')
#define ERRCODE_MQ_NOT_ENOUGH_REPLICAS_AFTER_APPEND MAKE_SQLSTATE('M','Q','0','2','2')
#define ERRCODE_MQ_REQUEST_TIMED_OUT		MAKE_SQLSTATE('M','Q','0','2','3')
#define ERRCODE_MQ_FENCED_LEADER_EPOCH		MAKE_SQLSTATE('M','Q','0','2','4')
#define ERRCODE_MQ_UNKNOWN_LEADER_EPOCH		MAKE_SQLSTATE('M','Q','0','2','5')

/* advisory lock tag field4 values, distinct from pg_advisory_lock's 1 and 2 */
#define MQ_LOCK_PRODUCE		0x4D51	/* one producer per partition at a time */
#define MQ_LOCK_CLAIM		0x4D52	/* a poller's claim on a group's partition */
#define MQ_LOCK_PRODUCER	0x4D53	/* shared by sends, exclusive by init_producer */
#define MQ_LOCK_BROKER		0x4D54	/* held by the node's mq-broker session (replica.c) */

/* Column numbers of a log table (1-based, as in the CREATE TABLE) */
#define Anum_log_partition		1
#define Anum_log_msg_offset		2
#define Anum_log_created_at		3
#define Anum_log_key			4
#define Anum_log_value			5
#define Anum_log_headers		6
#define Anum_log_producer_id	7
#define Anum_log_producer_epoch 8
#define Anum_log_sequence		9
#define Natts_log				9

/* One segment: a table covering offsets [base, end). */
typedef struct MqSegment
{
	int64		base;
	int64		end;
	Oid			relid;
	Oid			indexid;		/* the unique index on msg_offset */
} MqSegment;

typedef struct MqPartition
{
	int32		partition;
	int64		log_start;
	bool		replicated;		/* high_watermark is set */
	int64		high_watermark;
	int			nsegs;
	MqSegment  *segs;			/* ordered by base */
} MqPartition;

/* What the backend caches about a topic; valid until the next invalidation. */
typedef struct MqTopic
{
	char		name[256];		/* hash key: Kafka names have <= 249 chars */
	int32		topic_id;
	Oid			relid;
	int32		npartitions;
	MqPartition *parts;
} MqTopic;

/* One record to append. */
typedef struct MqRecordIn
{
	bytea	   *key;			/* NULL for a null key */
	bytea	   *value;
	Datum		headers;		/* jsonb datum, or 0 for null */
	int32		partition;
	int			input_index;	/* position in the caller's batch */
} MqRecordIn;

/*
 * replica.c: what a follower copies besides key, value and headers (the
 * leader's timestamp and producer fields), one per record.
 */
typedef struct MqRecordMeta
{
	TimestampTz created_at;
	bool		has_producer;
	int64		producer_id;
	int32		producer_epoch;
	int32		sequence;
} MqRecordMeta;

/* Producer identity carried with records (all null when not idempotent). */
typedef struct MqProducer
{
	bool		present;
	int64		producer_id;
	int32		producer_epoch;
	int32		base_sequence;
} MqProducer;

/* topic.c: the per-backend topic cache */
extern MqTopic *mq_topic_lookup(const char *name, bool missing_ok);
extern MqTopic *mq_topic_lookup_text(text *name);
extern MqTopic *mq_topic_by_id(int32 topic_id);
extern MqPartition *mq_topic_partition(MqTopic *topic, int32 partition);
extern void mq_topic_cache_reset(void);
extern void mq_topic_cache_init(void);

/* log.c: storage engine */
extern void mq_lock_partition(int32 topic_id, int32 partition);
extern void mq_log_init(void);
extern bool mq_release_before_flush;
extern int64 mq_log_end_offset(MqPartition *part, Snapshot snapshot);
extern int64 mq_log_append(const char *topic_name, int32 partition,
						   MqRecordIn *recs, int nrecs, MqProducer *producer);
extern bool mq_allow_log_change;
/* replication hooks (log.c calls replica.c; replica.c calls log.c) */
extern int64 mq_log_append_at(const char *topic_name, int32 partition,
							  MqRecordIn *recs, MqRecordMeta *meta, int nrecs,
							  int64 base_offset);
extern void mq_replica_check_produce(MqTopic *topic, int32 partition);
extern void mq_replica_check_leader(MqTopic *topic, int32 partition);

/* notify.c: waking long pollers */
extern void mq_notify_init(void);
extern void mq_notify_now(int32 topic_id);
extern void mq_notify_at_commit(int32 topic_id);
extern uint64 mq_notify_counter(int32 topic_id);
extern bool mq_notify_wait(int32 topic_id, uint64 seen, TimestampTz deadline);

/* consume.c */
extern void mq_consume_init(void);

/* producer.c */
extern void mq_producer_check_epoch(int64 producer_id, int32 epoch);
extern bool mq_producer_check_sequence(MqTopic *topic, int32 partition, MqProducer *p,
									   int n, int64 *dup_base);
extern void mq_producer_record_batch(MqTopic *topic, int32 partition, MqProducer *p,
									 int n, int64 base);

/* spi.c: catalog queries as the extension owner */
typedef struct MqSpiSave
{
	Oid			user;
	int			sec_context;
	int			guc_nestlevel;	/* the pinned search_path's GUC level */
} MqSpiSave;
extern void mq_spi_begin(MqSpiSave *save);
extern void mq_spi_end(MqSpiSave *save);
extern SPIPlanPtr mq_spi_prepare(const char *sql, int nargs, Oid *argtypes);
extern void mq_spi_begin_definer(MqSpiSave *save);

/* acl.c: Kafka's resource rights on PostgreSQL roles */
#define MQ_ACL_READ			(1 << 0)
#define MQ_ACL_WRITE		(1 << 1)
#define MQ_ACL_DESCRIBE		(1 << 2)
#define MQ_ACL_CREATE		(1 << 3)
#define MQ_ACL_ALTER		(1 << 4)
#define MQ_ACL_DELETE		(1 << 5)
#define MQ_ACL_ALL			0x3f
#define MQ_RES_TOPIC		't'
#define MQ_RES_GROUP		'g'
extern void mq_acl_init(void);
extern int	mq_acl_op_from_name(const char *name);
extern bool mq_acl_allowed(Oid role, char restype, const char *name, int op);
extern void mq_acl_check_role(Oid role, char restype, const char *name, int op);
extern void mq_acl_check(char restype, const char *name, int op);
extern MqTopic *mq_topic_authorized(text *name, int op);
extern void mq_group_authorize(text *group, int op);

/* owner.c: SQL functions that run as the owner after their checks */
extern Oid	mq_owner(void);

/* partitioner.c */
extern int32 mq_murmur2(const char *data, int len);
extern int32 mq_default_partition(bytea *key, int32 npartitions);


#endif							/* MQ_H */
