/*-------------------------------------------------------------------------
 *
 * handlers.h
 *	  The API handlers, one file per group of APIs.  Each runs on the loop
 *	  thread with the request body positioned after the header; it decodes
 *	  the request, then answers at once (req_finish), gives the pool a job
 *	  of statements and answers when it is done (pool_run), or parks the
 *	  request (fetch, join, sync).  A request that cannot be decoded
 *	  closes its connection (req_abort).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_HANDLERS_H
#define MQK_HANDLERS_H

#include "kjob.h"
#include "mqkafka.h"

/* api keys */
enum
{
	KAPI_PRODUCE = 0,
	KAPI_FETCH = 1,
	KAPI_LIST_OFFSETS = 2,
	KAPI_METADATA = 3,
	KAPI_OFFSET_COMMIT = 8,
	KAPI_OFFSET_FETCH = 9,
	KAPI_FIND_COORDINATOR = 10,
	KAPI_JOIN_GROUP = 11,
	KAPI_HEARTBEAT = 12,
	KAPI_LEAVE_GROUP = 13,
	KAPI_SYNC_GROUP = 14,
	KAPI_DESCRIBE_GROUPS = 15,
	KAPI_LIST_GROUPS = 16,
	KAPI_SASL_HANDSHAKE = 17,
	KAPI_API_VERSIONS = 18,
	KAPI_CREATE_TOPICS = 19,
	KAPI_DELETE_TOPICS = 20,
	KAPI_DELETE_RECORDS = 21,
	KAPI_INIT_PRODUCER_ID = 22,
	KAPI_OFFSET_FOR_LEADER_EPOCH = 23,
	KAPI_ADD_PARTITIONS_TO_TXN = 24,
	KAPI_ADD_OFFSETS_TO_TXN = 25,
	KAPI_END_TXN = 26,
	KAPI_TXN_OFFSET_COMMIT = 28,
	KAPI_DESCRIBE_ACLS = 29,
	KAPI_CREATE_ACLS = 30,
	KAPI_DELETE_ACLS = 31,
	KAPI_DESCRIBE_CONFIGS = 32,
	KAPI_ALTER_CONFIGS = 33,
	KAPI_ALTER_REPLICA_LOG_DIRS = 34,
	KAPI_DESCRIBE_LOG_DIRS = 35,
	KAPI_CREATE_PARTITIONS = 37,
	KAPI_CREATE_DELEGATION_TOKEN = 38,
	KAPI_RENEW_DELEGATION_TOKEN = 39,
	KAPI_EXPIRE_DELEGATION_TOKEN = 40,
	KAPI_DESCRIBE_DELEGATION_TOKEN = 41,
	KAPI_DELETE_GROUPS = 42,
	KAPI_ELECT_LEADERS = 43,
	KAPI_SASL_AUTHENTICATE = 36,
	KAPI_INCREMENTAL_ALTER_CONFIGS = 44,
	KAPI_ALTER_PARTITION_REASSIGNMENTS = 45,
	KAPI_LIST_PARTITION_REASSIGNMENTS = 46,
	KAPI_OFFSET_DELETE = 47,
	KAPI_DESCRIBE_CLIENT_QUOTAS = 48,
	KAPI_ALTER_CLIENT_QUOTAS = 49,
	KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS = 50,
	KAPI_ALTER_USER_SCRAM_CREDENTIALS = 51,
	KAPI_DESCRIBE_TRANSACTIONS = 65,
	KAPI_DESCRIBE_CLUSTER = 60,
	KAPI_DESCRIBE_PRODUCERS = 61,
	KAPI_LIST_TRANSACTIONS = 66,
	KAPI_LIST_CLIENT_METRICS_RESOURCES = 74,
	KAPI_DESCRIBE_TOPIC_PARTITIONS = 75,
};

/* h_metadata.c */
extern void h_metadata(KRequest *req);
extern void h_describe_cluster(KRequest *req);
/* h_client_metrics.c */
extern void h_list_client_metrics_resources(KRequest *req);
/* h_topic_partitions.c */
extern void h_describe_topic_partitions(KRequest *req);
/* h_admin.c */
extern void h_create_topics(KRequest *req);
extern void h_delete_topics(KRequest *req);
extern void h_create_partitions(KRequest *req);
/* h_delete_records.c */
extern void h_delete_records(KRequest *req);
/* h_token.c */
extern void h_create_delegation_token(KRequest *req);
extern void h_renew_delegation_token(KRequest *req);
extern void h_expire_delegation_token(KRequest *req);
extern void h_describe_delegation_token(KRequest *req);
/* h_log_dirs.c */
extern void h_describe_log_dirs(KRequest *req);
/* h_log_dirs_alter.c */
extern void h_alter_replica_log_dirs(KRequest *req);
/* h_config.c */
extern void h_describe_configs(KRequest *req);
/* h_config_alter.c */
extern void h_alter_configs(KRequest *req);
extern void h_incremental_alter_configs(KRequest *req);
/* h_produce.c */
extern void h_produce(KRequest *req);
extern void h_init_producer_id(KRequest *req);
/* h_txn.c */
extern void h_add_partitions_to_txn(KRequest *req);
extern void h_add_offsets_to_txn(KRequest *req);
extern void h_end_txn(KRequest *req);
extern void h_txn_offset_commit(KRequest *req);
/* h_txn_end.c: EndTxn in a cluster */
extern void txn_cluster_end(KRequest *req, KSlice id, int64_t producer_id, int16_t epoch, bool commit);
/* h_txn_init.c: InitProducerId in a cluster, statements on the transaction's node */
typedef struct TxnRemote
{
	KRequest	sub;			/* first: what the node's pool runs */
	KDoneFn		done;
	KJob	   *job;
	KPool	   *first;			/* the node the id maps to */
	KPool	   *pool;			/* the node running the job now */
	int			next;			/* the next broker to look on (cluster order) */
} TxnRemote;
extern void txn_cluster_init(KRequest *req, const char *id, int32_t timeout_ms, int64_t current_id,
							 int16_t current_epoch);
extern void init_producer_answer(KRequest *req, int16_t code, const PGresult *res);
extern int16_t init_producer_code(const KStmt *st, int16_t v);
extern int16_t txn_cluster_code(const KStmt *st, int16_t v);
extern void txn_cluster_stage(KRequest *req, TxnRemote *r, KJob *job, const char *id, KDoneFn done);
/* h_producers.c */
extern void h_describe_producers(KRequest *req);
/* h_txn_list.c */
extern void h_describe_transactions(KRequest *req);
extern void h_list_transactions(KRequest *req);
extern void h_alter_partition_reassignments(KRequest *req);
extern void h_list_partition_reassignments(KRequest *req);
extern void h_offset_delete(KRequest *req);
/* h_elect.c */
extern void h_elect_leaders(KRequest *req);
/* h_fetch.c */
extern void h_fetch(KRequest *req);
extern void fetch_wake_topic(const char *topic);
/* h_offsets.c */
extern void h_list_offsets(KRequest *req);
extern void h_offset_for_leader_epoch(KRequest *req);
extern void h_offset_commit(KRequest *req);
extern void h_offset_fetch(KRequest *req);
/* h_group.c */
extern void h_find_coordinator(KRequest *req);
extern void h_join_group(KRequest *req);
extern void h_sync_group(KRequest *req);
extern void h_heartbeat(KRequest *req);
extern void h_leave_group(KRequest *req);
extern void h_list_groups(KRequest *req);
extern void h_describe_groups(KRequest *req);
/* h_group_delete.c */
extern void h_delete_groups(KRequest *req);
/* h_acl.c, h_acl_delete.c */
extern void h_describe_acls(KRequest *req);
extern void h_create_acls(KRequest *req);
extern void h_delete_acls(KRequest *req);
/* sasl.c */
extern void h_sasl_handshake(KRequest *req);
extern void h_sasl_authenticate(KRequest *req);
/* h_quota.c */
extern void h_describe_client_quotas(KRequest *req);
extern void h_alter_client_quotas(KRequest *req);
/* h_scram_admin.c */
extern void h_describe_user_scram_credentials(KRequest *req);
extern void h_alter_user_scram_credentials(KRequest *req);

#endif							/* MQK_HANDLERS_H */
