/*-------------------------------------------------------------------------
 *
 * mq.h
 *	  Declarations shared by the C files of the mq extension.
 *
 * The extension's own SQLSTATEs, one per condition in class "MQ", are
 * defined in src/errcodes.txt; the build generates mq_errcodes.h (the
 * ERRCODE_MQ_* macros) and the table in docs/errors.md from it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_H
#define MQ_H

#include "postgres.h"

#include "access/htup.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/tuplestore.h"
#include "executor/tuptable.h"
#include "utils/array.h"
#include "lib/stringinfo.h"

/* SQLSTATEs (class MQ): ERRCODE_MQ_*, generated from src/errcodes.txt */
#include "mq_errcodes.h"

/* advisory lock tag field4 values, distinct from pg_advisory_lock's 1 and 2 */
#define MQ_LOCK_PRODUCE		0x4D51	/* one producer per partition at a time */
#define MQ_LOCK_CLAIM		0x4D52	/* a poller's claim on a group's partition */
#define MQ_LOCK_PRODUCER	0x4D53	/* shared by sends, exclusive by init_producer */
#define MQ_LOCK_BROKER		0x4D54	/* held by the node's mq-broker session (leadership.c) */
#define MQ_LOCK_PROGRESS	0x4D55	/* a follower's fetch, progress to commit (replica.c) */
#define MQ_LOCK_COMPACT		0x4D56	/* one compaction pass per partition (compact.c) */

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
#define Anum_log_timestamp		10	/* NULL for LogAppendTime: then created_at */
#define Anum_log_max_timestamp	11	/* NULL unless above the record's own */
#define Natts_log				11

/* Columns of mq.record (fetch.c) */
#define Natts_record			10

/* One segment: a table covering offsets [base, end). */
typedef struct MqSegment
{
	int64		base;
	int64		end;
	Oid			relid;
	/* the unique index on msg_offset, a hint: mq_segment_index_open */
	Oid			indexid;
} MqSegment;

typedef struct MqPartition
{
	int32		partition;
	int64		log_start;
	bool		replicated;		/* high_watermark is set */
	int64		high_watermark;
	int64		cleaner_point;	/* gaps below: compacted, copied (72_compaction.sql) */
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
	int64		max_message_bytes;	/* the topic's max.message.bytes, -1 if unset */
	bool		compacted;		/* cleanup.policy compacts: records need keys */
	MqPartition *parts;
	bool		log_append_time;	/* message.timestamp.type is LogAppendTime */
	int64		timestamp_before_ms;	/* message.timestamp.before.max.ms, -1: none */
	int64		timestamp_after_ms;	/* message.timestamp.after.max.ms, -1: none */
} MqTopic;

/* One record to append. */
typedef struct MqRecordIn
{
	bytea	   *key;			/* NULL for a null key */
	bytea	   *value;
	Datum		headers;		/* jsonb datum, or 0 for null */
	bool		has_timestamp;	/* the producer gave a CreateTime */
	TimestampTz timestamp;
	int32		partition;
	int			input_index;	/* position in the caller's batch */
} MqRecordIn;

/*
 * replica.c: what a follower copies besides key, value, headers and the
 * Kafka timestamp (the leader's append time and producer fields), one per
 * record.
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
extern MqTopic *mq_topic_by_id(int32 topic_id, bool missing_ok);
extern MqPartition *mq_topic_partition(MqTopic *topic, int32 partition);
extern void mq_topic_cache_reset(void);
extern Relation mq_segment_open(MqSegment *seg, LOCKMODE lockmode);
extern Relation mq_segment_index_open(MqSegment *seg, Relation rel, LOCKMODE lockmode);
extern void mq_topic_cache_init(void);

/* log.c: storage engine */
extern void mq_lock_partition(int32 topic_id, int32 partition);
extern void mq_lock_partition_class(int32 topic_id, int32 partition, uint16 lock_class);
extern void mq_produce_lock_init(void);
extern bool mq_release_before_flush;
extern int64 mq_log_end_offset(MqPartition *part, Snapshot snapshot);
extern int64 mq_log_end_offset_ok(MqPartition *part, Snapshot snapshot);
extern int64 mq_segment_last_offset(MqSegment *seg, Snapshot snapshot, TimestampTz *max_ts);
extern int64 mq_log_append(const char *topic_name, int32 partition,
						   MqRecordIn *recs, int nrecs, MqProducer *producer);
extern bool mq_allow_log_change;
/* replication hooks (log.c calls leadership.c; replica.c calls log.c) */
extern int64 mq_log_append_at(const char *topic_name, int32 partition,
							  MqRecordIn *recs, MqRecordMeta *meta, int nrecs,
							  int64 base_offset, const int64 *offsets);

/*
 * leadership.c: refusing produce and reads where this node does not lead.
 * MqReplicaState is what the node knows about a partition's replication.
 */
typedef struct MqReplicaState
{
	bool		found;
	char		role[16];
	int32		leader_epoch;
	int64		high_watermark; /* -1 when null */
	int32		leader_id;		/* -1 when unknown */
	char		leader_name[256];
	int			isr_size;
	bool		brokered;		/* a broker has attached to this node */
	TimestampTz lease_until;	/* its lease; 0: none taken yet */
	bool		hosted;			/* false: this node holds no replica of it */
} MqReplicaState;
extern void mq_replica_read_state(int32 topic_id, int32 partition, MqReplicaState *st);
extern int64 mq_replica_log_end_now(int32 topic_id, int32 partition);
extern int64 mq_replica_log_end_fresh(int32 topic_id, int32 partition);
extern void mq_replica_raise_not_leader(const char *topic_name, int32 partition,
										MqReplicaState *st);
extern void mq_replica_check_broker(const char *topic_name, int32 partition,
									MqReplicaState *st);
extern int32 mq_replica_check_produce(MqTopic *topic, int32 partition);
extern int32 mq_replica_check_leader(MqTopic *topic, int32 partition);

/* commit_wait.c: acknowledging writes to replicated partitions */
extern void mq_commit_note_records(MqTopic *topic, int32 partition, int32 epoch, int64 end);
extern void mq_commit_note_offsets(MqTopic *topic, int32 partition);
extern int64 mq_offsets_version(int32 topic_id, int32 partition);
extern void mq_replica_await_records(const char *topic_name, int32 topic_id, int32 partition,
									 int32 epoch, int64 target, int32 min_isr, int timeout_ms);
extern void mq_commit_wait_init(void);
extern void mq_commit_wait_finished(TransactionId xid, bool commit);

/* record_size.c: max.message.bytes; every leader append checks first */
extern int	mq_message_max_bytes;
extern void mq_record_size_init(void);
extern int64 mq_record_size(bytea *key, bytea *value, Jsonb *headers);
extern void mq_check_record_sizes(MqTopic *topic, MqRecordIn *recs, int n, int64 batch_bytes);

/* malloc_tune.c: mq.malloc_trim_threshold, memory kept between batches */
extern void mq_malloc_tune_init(void);

/* timeindex_write.c: Kafka's record timestamps at append */
extern TimestampTz mq_slot_timestamp(TupleTableSlot *slot);
extern TimestampTz mq_slot_max_timestamp(TupleTableSlot *slot);
extern void mq_check_timestamps(MqTopic *topic, MqRecordIn *recs, int n);
extern void mq_stamp_records(MqTopic *topic, MqRecordIn *recs, int n, TimestampTz now);
extern void mq_row_timestamps(MqRecordIn *r, Datum *values, bool *nulls, TimestampTz *running);

/* timeindex.c: the lookup by time */
extern int64 mq_offset_for_time(MqPartition *part, TimestampTz ts, Snapshot snapshot,
								int *descents);

/* headers.c: Kafka headers as mq.header[] and their jsonb form */
extern Datum mq_header_list_from_jsonb(Jsonb *headers, Oid elemtype, bool *isnull);
extern Jsonb *mq_header_list_to_jsonb(ArrayType *list);
extern int	mq_header_list_lengths(Jsonb *headers, int64 **keylens, int64 **vallens);
extern int	mq_header_list_wire(Jsonb *headers, char ***keys, int **keylens, char ***values,
								int **vallens);

/* kafka_batch.c: Kafka record batches (v2) for mq.kafka_fetch (kafka_fetch.c) */
#define MQ_BATCH_LOG_APPEND_TIME 0x08	/* attribute bit */
typedef struct MqWireRecord
{
	int64		offset;
	int64		timestamp_ms;
	const char *key;
	int			keylen;			/* -1: null */
	const char *value;
	int			valuelen;
	int			nheaders;
	char	  **hkeys;			/* UTF-8 */
	int		   *hkeylens;
	char	  **hvals;
	int		   *hvallens;		/* -1: null */
} MqWireRecord;
typedef struct MqBatchWriter
{
	StringInfo	buf;
	int			start;			/* where the batch begins in buf */
	int64		base_offset;
	int64		base_ts;
	int64		max_ts;
	int64		last_offset;
	int32		count;
} MqBatchWriter;
extern void mq_batch_begin(MqBatchWriter *w, StringInfo b, int64 base_offset, int64 timestamp_ms,
						   bool log_append_time);
extern void mq_batch_add(MqBatchWriter *w, const MqWireRecord *r);
extern void mq_batch_end(MqBatchWriter *w);

/* compact.c: log compaction's removals; compacted topics need keys */
extern void mq_check_compacted_keys(MqTopic *topic, MqRecordIn *recs, int n);

/* notify.c: waking long pollers */
extern void mq_notify_init(void);
extern void mq_notify_at_commit(int32 topic_id, int32 partition);
extern void mq_notify_all(void);
extern void mq_notify_flush_visible(int32 topic_id);
extern uint64 mq_notify_counter(int32 topic_id);
extern bool mq_notify_wait(int32 topic_id, uint64 seen, TimestampTz deadline);
extern uint64 mq_notify_part_counter(int32 topic_id, int32 partition);
extern bool mq_notify_part_wait(int32 topic_id, int32 partition, uint64 seen,
								TimestampTz deadline);
extern bool mq_notify_nap(TimestampTz deadline, long ms);
extern bool mq_notify_watchable(void);
extern bool mq_notify_watch(void);
extern void mq_notify_unwatch(void);

/* longpoll.c: the high watermark reads stop at, and long polling */
typedef struct MqLongPoll
{
	bool		enabled;
	int			min_records;
	TimestampTz deadline;
	uint64		seen;			/* the topic's change counter before the read */
	bool		last_read;		/* the read at the deadline was started */
} MqLongPoll;
extern int64 mq_partition_high_watermark(MqTopic *topic, MqPartition *part);
extern void mq_long_poll_start(MqLongPoll *lp, NullableDatum wait, NullableDatum min,
							   int32 topic_id);
extern bool mq_long_poll_wait(MqLongPoll *lp, int got, int max, int32 topic_id);

/* fetch.c: mq.fetch, and the argument checks of reads */
/* mq.fetch's max_bytes: what the records read so far take of it */
typedef struct MqByteBudget
{
	int64		max;
	int64		used;
} MqByteBudget;
extern void mq_check_max_records(int32 max);
extern void mq_check_not_null(NullableDatum *args, int nargs, const char *const *names);

/* log_reader.c: one partition from an offset, a record at a time */
typedef struct MqLogReader
{
	int32		topic_id;
	MqPartition *part;
	Snapshot	snapshot;
	int64		from;			/* where the read started */
	int64		next;			/* the offset wanted next */
	int64		last;			/* the offset after the last record returned */
	int64		stop;			/* the high watermark, or PG_INT64_MAX */
	int			max;
	int			count;			/* records returned */
	MqByteBudget *budget;		/* NULL: no byte limit */
	int			seg;			/* index in part->segs of the open segment */
	Relation	rel;			/* the open segment, or NULL */
	Relation	irel;
	TupleTableSlot *slot;
	struct TableScanDescData *hscan;	/* the TID range scan, or NULL */
	bool		done;
} MqLogReader;
extern void mq_reader_start(MqLogReader *r, int32 topic_id, MqPartition *part, int64 from, int max,
							Snapshot snapshot, int64 stop, MqByteBudget *budget);
extern void mq_raise_below_log_start(const char *topic, int32 partition, int64 offset,
									 int64 log_start);
extern TupleTableSlot *mq_reader_next(MqLogReader *r);
extern void mq_reader_close(MqLogReader *r);

/*
 * feed.c: one call of mq.fetch or mq.poll, as a stream of log rows.  The
 * SQL functions materialize it; the custom scan (fetch_scan.c) streams it.
 * fetch.c and poll.c fill in the callbacks and their private state.
 */
typedef struct MqFeed MqFeed;
struct MqFeed
{
	MqTopic    *topic;
	Datum		topic_datum;	/* the topic argument, as given */
	int			max;			/* max_records */
	int			got;			/* records returned so far */
	MqLongPoll	lp;
	Snapshot	snapshot;		/* what the current pass reads (registered) */
	List	   *snapshots;		/* all registered, released at the end */
	int			step;			/* reads started in the current pass */
	bool		(*start_read) (MqFeed *f);	/* the pass's next read; false: none */
	void		(*read_done) (MqFeed *f);	/* the read in f->reader ended */
	bool		drain_at_end;	/* mq.poll: positions move as if read to the end */
	void	   *priv;			/* fetch.c's or poll.c's state */
	bool		reading;		/* f->reader is started */
	MqLogReader reader;
	bool		done;
	List	   *runs;			/* what each read returned, for rewinds */
	bool		replaying;
	int			replay_next;
};
extern void mq_feed_init(MqFeed *f, MqTopic *topic, Datum topic_datum, int max);
extern void mq_feed_read_partition(MqFeed *f, MqPartition *part, int64 from,
								   MqByteBudget *budget);
extern TupleTableSlot *mq_feed_next(MqFeed *f);
extern void mq_feed_rewind(MqFeed *f);
extern void mq_feed_end(MqFeed *f);
/* a column of mq.record (1-based) in the set mq_feed_record fills */
#define MQ_RECORD_COLUMN(attno)	((uint32) 1 << ((attno) - 1))
#define MQ_RECORD_ALL			(MQ_RECORD_COLUMN(Natts_record + 1) - 1)
extern void mq_feed_record(MqFeed *f, TupleTableSlot *log, Oid header_elem, uint32 columns,
						   Datum *values, bool *nulls);
extern void mq_feed_materialize(FunctionCallInfo fcinfo, MqFeed *f);
extern void mq_fetch_feed_begin(MqFeed *f, NullableDatum *args, int nargs);
extern void mq_poll_feed_begin(MqFeed *f, NullableDatum *args, int nargs);

/*
 * fetch_path.c and fetch_scan.c: mq.fetch and mq.poll in FROM, planned as
 * a custom scan that streams their rows
 */
struct CustomScanMethods;
extern void mq_fetch_path_init(void);	/* starts both, from _PG_init */
extern const struct CustomScanMethods *mq_scan_plan_methods(bool poll);
extern void mq_fetch_scan_init(void);

/* a consumer position's key: group, topic, partition (positions.c, offsets.c) */
typedef struct MqPositionKey
{
	uint32		group_hash;
	int32		topic_id;
	int32		partition;
	char		group[NAMEDATALEN * 4];
} MqPositionKey;
/* group_id.c: the longest group id (what MqPositionKey holds), its check */
#define MQ_GROUP_ID_MAX (NAMEDATALEN * 4 - 1)
extern void mq_check_group(text *group);
extern bool mq_check_group_read(text *group);

/* consumer_offsets.c: the __consumer_offsets topic of offset commits */
#define MQ_CONSUMER_OFFSETS "__consumer_offsets"
/* partitions of it per broker on a cluster's node (mq-kafka's cluster.h too) */
#define MQ_CO_NODE_PARTITIONS 2
extern int32 mq_consumer_offsets_partition(const char *group, int len, int32 npartitions);
extern void mq_consumer_offsets_check_write(const char *topic_name);
extern void mq_consumer_offsets_init(void);
/* group_value.c: a GroupMetadataValue handed in, checked */
extern void mq_check_group_value(const bytea *value);
extern void mq_consumer_offsets_note(text *group, const char *topic_name, int32 partition,
									 int64 next, text *metadata, TimestampTz at);
/* Kafka's offset.metadata.max.bytes: an offset commit's metadata, at most */
#define MQ_OFFSET_METADATA_MAX 4096
extern void mq_check_offset_metadata(text *metadata);
/* positions.c: where consumers read next, taken back with their transactions */
typedef struct MqPendingBatch
{
	int32		partition;
	int64		next_offset;
	int64		replaces;		/* a reset from beyond the log end, or -1 */
} MqPendingBatch;
extern void mq_positions_init(void);
extern void mq_positions_after_utility(Node *stmt);
extern void mq_position_key(MqPositionKey *key, text *group, MqTopic *topic, int32 partition);
extern bool mq_position_xact(const MqPositionKey *key, int64 *next);
extern void mq_position_set_xact(const MqPositionKey *key, int64 next);
extern void mq_position_keep_pending(const MqPositionKey *key, int64 next, int64 replaces);
extern MqPendingBatch *mq_position_list(const MqPositionKey *probe, bool take, int *n);
extern void mq_auto_commit(text *group, MqTopic *topic, text *member);
extern int64 mq_position_current(MqPositionKey *key, text *group, MqTopic *topic);
extern void mq_position_advance(MqPositionKey *key, int64 next, bool autocommit, int n,
								text *member);
extern void mq_position_reset(MqPositionKey *key, int64 from, int64 next, bool autocommit,
							  text *member);
extern bool mq_position_in_log(MqPositionKey *key, int64 pos);
extern void mq_position_note_in_log(MqPositionKey *key, int64 pos);

/* idempotence.c: idempotent producer state */
extern void mq_producer_check_epoch(int64 producer_id, int32 epoch, int32 base_sequence);
extern bool mq_producer_check_sequence(MqTopic *topic, int32 partition, MqProducer *p,
									   int n, int64 *dup_base);
extern void mq_producer_record_batch(MqTopic *topic, int32 partition, MqProducer *p,
									 int n, int64 base);

/* Attribute numbers of mq.replica_batch (keep in step with src/sql/60_replica.sql; replica.c, replica_fetch.c) */
#define RB_BASE_OFFSET		1
#define RB_LOG_END_OFFSET	2
#define RB_CREATED_AT		6
#define RB_KEYS				7
#define RB_VALS				8
#define RB_HEADERS			9
#define RB_PRODUCER_IDS		10
#define RB_PRODUCER_EPOCHS	11
#define RB_SEQUENCES		12
#define RB_BATCH_PRODUCER	13
#define RB_BATCH_EPOCH		14
#define RB_BATCH_FIRST		15
#define RB_BATCH_LAST		16
#define RB_BATCH_OFFSET		17
#define RB_TIMESTAMPS		20	/* Kafka timestamps: NULL for LogAppendTime */
#define RB_OFFSETS			25	/* NULL: base_offset, base_offset + 1, ... */

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
extern bool mq_spi_get_int64(SPIPlanPtr *plan, const char *sql, int nargs, Oid *argtypes,
							 Datum *args, int64 *result);
extern void mq_spi_begin_definer(MqSpiSave *save);

/* arrays.c: one-dimensional arrays to and from Datums */
extern Datum *mq_array_elems(ArrayType *a, Oid type, bool **nulls, int *n);
extern Datum mq_array_of(Datum *d, bool *nulls, int n, Oid type);

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
#define MQ_RES_CLUSTER		'c'
#define MQ_RES_TXN_ID		'x' /* a Kafka transactional id */
#define MQ_CLUSTER_NAME		"kafka-cluster"	/* the one cluster resource */
extern void mq_acl_init(void);
extern int	mq_acl_op_from_name(const char *name);
extern bool mq_acl_allowed(Oid role, char restype, const char *name, int op);
extern void mq_acl_check_role(Oid role, char restype, const char *name, int op);
extern void mq_acl_check(char restype, const char *name, int op);
extern MqTopic *mq_topic_authorized(text *name, int op);
extern void mq_group_authorize(text *group, int op);

/* owner.c: SQL functions that run as the owner after their checks */
extern Oid	mq_owner(void);

/* partitioner.c: Kafka's default partitioner */
extern int32 mq_murmur2(const char *data, int len);
extern int32 mq_default_partition(bytea *key, int32 npartitions);


/* launcher.c, launcher_hook.c, maintenance.c: the maintenance workers */
extern char *mq_database;
extern int	mq_launcher_interval;
extern int	mq_maintenance_interval;
extern int	mq_maintenance_batch_topics;
extern void mq_launcher_init(void);
extern void mq_launcher_hook_init(void);
extern void mq_launcher_before_utility(Node *stmt);
extern void mq_launcher_after_utility(Node *stmt);

/* utility.c */
extern void mq_utility_init(void);
extern pid_t mq_launcher_pause(Oid dboid, TimestampTz until);
extern void mq_launcher_wake(bool probe_all);
extern bool mq_launcher_worker_state(bool absent);
extern bool mq_launcher_note_read_only(bool read_only);
extern void mq_launcher_restart_me(void);

#endif							/* MQ_H */
