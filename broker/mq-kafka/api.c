/*-------------------------------------------------------------------------
 *
 * api.c
 *	  Request headers, the table of supported APIs and version ranges, and
 *	  ApiVersions.  Loop thread only.
 *
 * Request header v1 is api_key, api_version, correlation_id, client_id;
 * v2 (flexible versions, KIP-482) adds tagged fields, and so does
 * response header v1.  From an API's first flexible version on (the table's
 * flex), the body is read and written with the compact forms and tagged
 * fields (kbuf.h's flex flag; server.c ends the body's tagged fields).
 * ApiVersions v3+ is flexible but its response keeps header v0, as
 * KIP-511 says, so that a client can read it whatever version it asked.
 * The table's ranges are Kafka 3.9's for each API served (floors below).  An unknown API key or
 * an unsupported version of any API other than ApiVersions closes the
 * connection, as Kafka does; an unsupported ApiVersions version gets
 * UNSUPPORTED_VERSION with the supported ranges in the v0 format, on
 * which clients retry with a version they share.  A v3+ client software
 * name or version outside KIP-511's pattern gets INVALID_REQUEST and no
 * ranges, as from Kafka.
 *
 * On a SASL_PLAINTEXT or SASL_SSL listener (--sasl=plain), a
 * connection that has not authenticated (sasl.c)
 * may send only ApiVersions, SaslHandshake and SaslAuthenticate: any
 * other request closes it, as Kafka does.  The SASL APIs are advertised
 * on every listener, as by Kafka; on one without SASL they answer
 * ILLEGAL_SASL_STATE, as after a login (sasl.c).
 *
 *-------------------------------------------------------------------------
 */
#include "handlers.h"

#include "kerr.h"
#include "kmetrics.h"
#include "principal.h"
#include "sasl.h"
#include "util.h"

typedef struct KApi
{
	int16_t		key;
	int16_t		min;
	int16_t		max;
	int16_t		flex;			/* first flexible version */
	void		(*handle) (KRequest *req);
	const char *doc;			/* notes in docs/kafka.md's table */
} KApi;

static void h_api_versions(KRequest *req);

/* also the one source of docs/kafka.md's API table (scripts/reftables.sh) */
static const KApi apis[] = {
	{KAPI_PRODUCE, 0, 11, 9, h_produce,
	 "record batch v2 (v3+), message sets v0 and v1 up-converted (v0-v2); gzip, snappy (raw and xerial framing), lz4, zstd (v7+, as in Kafka); acks 0, 1, -1 (acks 0 that fails closes the connection, as Kafka does); v5+: the partition's log start offset; v8+: a refused partition's error message"},
	{KAPI_FETCH, 0, 17, 12, h_fetch,
	 "record batches (v4+), message sets down-converted to v0 (v0-v1) and v1 (v2-v3); topic ids (v13+); byte limits with at least one whole record (KIP-74); long polling; fetch sessions (v7+, KIP-227); current leader epoch checked (v9+); diverging epoch from the last fetched epoch (v12+)"},
	{KAPI_LIST_OFFSETS, 0, 9, 6, h_list_offsets,
	 "earliest (-2), latest (-1), max timestamp (-3, v7+), local start (-4, v8+), last tiered (-5, v9+: -1), each UNSUPPORTED_VERSION before its version, and by timestamp; a partition asked twice is INVALID_REQUEST each time (v1+); v0 answers at most one offset (the one v1 gives), none for `max_num_offsets` 0; the current leader epoch checked (v4+); a partition this node follows is NOT_LEADER_OR_FOLLOWER"},
	{KAPI_METADATA, 0, 12, 9, h_metadata,
	 "this daemon and its `--peer`s, or the cluster's live daemons; leaders as below; v0: an empty topic array is every topic; topic ids (v10+), by id (v12); a name outside Kafka's rule is INVALID_TOPIC_EXCEPTION; one the role may not describe (or, to be created, create) TOPIC_AUTHORIZATION_FAILED, whether it exists or not"},
	{KAPI_OFFSET_COMMIT, 0, 9, 8, h_offset_commit,
	 "into `mq.commit_offset` on the partition's leader, metadata included (up to 4096 bytes, else OFFSET_METADATA_TOO_LARGE); in a cluster a partition whose ISR is short of min.insync.replicas refuses it before it is stored (COORDINATOR_NOT_AVAILABLE); v0 commits outside any generation (refused while the group has members); the commit timestamp (v1) and retention time (v2 to v4) are ignored; the logical offsets -2 and -1 commit the log start and the high watermark"},
	{KAPI_OFFSET_FETCH, 0, 9, 6, h_offset_fetch,
	 "from `mq.committed_offset` and `mq.committed_offsets` on the partition's leader; all of a group's offsets (v2+); `require_stable` (v7+): UNSTABLE_OFFSET_COMMIT while a transaction commits the offset; v8+: every group of the batch in order, each as if asked alone (below), none of an empty one"},
	{KAPI_FIND_COORDINATOR, 0, 6, 3, h_find_coordinator,
	 "the daemon asked; in a cluster, the group's daemon (below); a batch of keys (v4+); key type 2 (share groups) INVALID_REQUEST below v6, COORDINATOR_NOT_AVAILABLE at v6 (Kafka 3.9 has no share coordinator), any type but 0, 1 and 2 INVALID_REQUEST for every key"},
	{KAPI_JOIN_GROUP, 0, 9, 6, h_join_group,
	 "classic protocol; v4+ without a member id: MEMBER_ID_REQUIRED with one to join with (KIP-394); static membership (v5): a restarted static member keeps a stable group's generation unless the protocol chosen would change (v9+: a leader is told to skip the assignment); a known member joining again unchanged keeps the generation unless it leads a stable group"},
	{KAPI_HEARTBEAT, 0, 4, 4, h_heartbeat,
	 ""},
	{KAPI_LEAVE_GROUP, 0, 5, 4, h_leave_group,
	 "one member, or a batch of members (v3)"},
	{KAPI_SYNC_GROUP, 0, 5, 4, h_sync_group,
	 "followers wait for the leader's assignment; v5: a protocol type or protocol the group does not have is INCONSISTENT_GROUP_PROTOCOL"},
	{KAPI_DESCRIBE_GROUPS, 0, 5, 5, h_describe_groups,
	 "the protocol and each member's metadata and assignment while the group is Stable, none during a rebalance (Kafka's summary); a group it holds no members of from `mq.groups`: an SQL group's live members (client `mq`, consumer protocol v0), a group with only committed offsets Empty; one nobody knows: Dead"},
	{KAPI_LIST_GROUPS, 0, 5, 3, h_list_groups,
	 "groups this daemon coordinates: those it holds members of, and every other group `mq.groups` knows (SQL groups; groups with only committed offsets, an empty protocol type, as Kafka lists them); with SASL those the client may describe, every group with DESCRIBE on the cluster"},
	{KAPI_SASL_HANDSHAKE, 0, 1, 99, h_sasl_handshake,
	 "mechanisms `PLAIN` (refused without TLS unless `--sasl-plain-on-plaintext`), `SCRAM-SHA-256`, `SCRAM-SHA-512`; after v0 the tokens come as bare frames (kafka-python 2.0.2); ILLEGAL_SASL_STATE after a login and on a listener without SASL, as from Kafka"},
	{KAPI_API_VERSIONS, 0, 4, 3, h_api_versions,
	 "v3+: a client software name or version outside KIP-511's pattern is INVALID_REQUEST, with no ranges"},
	{KAPI_CREATE_TOPICS, 0, 7, 5, h_create_topics,
	 "`mq.create_topic`; `validate_only` supported; a name given twice is INVALID_REQUEST (answered once, nothing made), partitions or replication factor 0 or below -1 INVALID_PARTITIONS or INVALID_REPLICATION_FACTOR, and so is (in a cluster) one above the registered brokers or any with every broker down (the live brokers get the replicas first, the leader among them, then the registered ones that are down, as Kafka's StripedReplicaPlacer); a name differing from an existing topic's only in `.` against `_` INVALID_TOPIC_EXCEPTION (Kafka's collision rule); a manual replica assignment as Kafka's one broker checks it (only this broker, partitions 0 .. n-1), refused in a cluster (reassign once made)"},
	{KAPI_DELETE_TOPICS, 0, 6, 4, h_delete_topics,
	 "`mq.drop_topic`; in a cluster `mq_coord.delete_topic` for a replicated topic (answered once the view lost it); a name or id given twice, or an entry (v6+) with neither or both, is INVALID_REQUEST, nothing of it dropped"},
	{KAPI_DELETE_RECORDS, 0, 2, 2, h_delete_records,
	 "`mq.delete_records`: the log start moves up to the offset (-1: the high watermark); the answer is the new low watermark"},
	{KAPI_INIT_PRODUCER_ID, 0, 5, 2, h_init_producer_id,
	 "`mq.kafka_init_producer()` (WRITE on some topic, KIP-679); with a transactional id `mq.kafka_txn_init` (below: Transactions)"},
	{KAPI_OFFSET_FOR_LEADER_EPOCH, 0, 4, 4, h_offset_for_leader_epoch,
	 "where a leader epoch ends, from the partition's epoch history (`mq.leader_epochs`); the current leader epoch checked (v2+)"},
	{KAPI_ADD_PARTITIONS_TO_TXN, 0, 5, 3, h_add_partitions_to_txn,
	 "`mq.kafka_txn_add_partitions`, all or none (the others OPERATION_NOT_ATTEMPTED); v4+ (the brokers' batched form) served too, each transaction on its own id's node"},
	{KAPI_ADD_OFFSETS_TO_TXN, 0, 4, 3, h_add_offsets_to_txn,
	 "`mq.kafka_txn_add_offsets`"},
	{KAPI_END_TXN, 0, 4, 3, h_end_txn,
	 "`mq.kafka_txn_end`: the staged batches appended and the staged offsets committed in one transaction, or both dropped"},
	{KAPI_TXN_OFFSET_COMMIT, 0, 4, 3, h_txn_offset_commit,
	 "`mq.kafka_txn_offset`: staged until EndTxn; v3+ a stale member or generation is fenced (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID; KIP-447)"},
	{KAPI_DESCRIBE_ACLS, 0, 3, 2, h_describe_acls,
	 "`mq.grants`, to a principal with DESCRIBE on the cluster (below: ACLs)"},
	{KAPI_CREATE_ACLS, 0, 3, 2, h_create_acls,
	 "`mq.grant`, one transaction per creation; shapes mq cannot hold refused (`INVALID_REQUEST`)"},
	{KAPI_DELETE_ACLS, 0, 3, 2, h_delete_acls,
	 "`mq.revoke` of each grant a filter matches, one transaction per filter"},
	{KAPI_DESCRIBE_CONFIGS, 0, 4, 4, h_describe_configs,
	 "a topic's keys set in mq (`mq.topics.config`), and the others with mq's defaults (`mq.config_defaults()`, DEFAULT_CONFIG); this broker: those defaults under Kafka's broker names and the daemon's settings, read-only; a topic's need alter on it (Kafka's DESCRIBE_CONFIGS, implied by ALTER_CONFIGS); with include_synonyms (v1+) each key's synonyms: the topic's value, then the broker default under Kafka's broker name; a topic name outside Kafka's rule (`\"\"` too) INVALID_TOPIC_EXCEPTION, as Kafka 3.9"},
	{KAPI_ALTER_CONFIGS, 0, 2, 2, h_alter_configs,
	 "a topic's whole config replaced, through `mq.alter_topic`; `validate_only` supported; a key named twice, or a resource given twice, is INVALID_REQUEST; a topic name outside Kafka's rule INVALID_TOPIC_EXCEPTION, `\"\"` INVALID_REQUEST (Kafka 3.9's controller)"},
	{KAPI_ALTER_REPLICA_LOG_DIRS, 0, 2, 2, h_alter_replica_log_dirs,
	 "`mq.move_partition` of each partition to the tablespace its directory names (DescribeLogDirs' names), done when answered: its segments and those made later; ALTER on the cluster; a name no tablespace has is LOG_DIR_NOT_FOUND"},
	{KAPI_DESCRIBE_LOG_DIRS, 0, 4, 2, h_describe_log_dirs,
	 "a log directory per tablespace holding segments (pg_tablespace's name); each partition's size, its segments' `pg_total_relation_size`; DESCRIBE on the cluster"},
	{KAPI_CREATE_PARTITIONS, 0, 3, 2, h_create_partitions,
	 "`mq.add_partitions` to the requested total; `validate_only` supported; a name given twice is INVALID_REQUEST, nothing of it grown; new partitions assigned to this broker alone on a single node"},
	{KAPI_CREATE_DELEGATION_TOKEN, 0, 3, 2, h_create_delegation_token,
	 "mq issues no delegation tokens: as a Kafka broker without `delegation.token.secret.key`, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that did not authenticate with SASL, DELEGATION_TOKEN_AUTH_DISABLED on one that did"},
	{KAPI_RENEW_DELEGATION_TOKEN, 0, 2, 2, h_renew_delegation_token,
	 "as CreateDelegationToken"},
	{KAPI_EXPIRE_DELEGATION_TOKEN, 0, 2, 2, h_expire_delegation_token,
	 "as CreateDelegationToken"},
	{KAPI_DESCRIBE_DELEGATION_TOKEN, 0, 3, 2, h_describe_delegation_token,
	 "as CreateDelegationToken, with no tokens"},
	{KAPI_SASL_AUTHENTICATE, 0, 2, 2, h_sasl_authenticate,
	 "`session_lifetime_ms` 0 (no re-authentication); ILLEGAL_SASL_STATE after a login and on a listener without SASL, as from Kafka"},
	{KAPI_DELETE_GROUPS, 0, 2, 2, h_delete_groups,
	 "`mq.delete_group`: a group's committed offsets and empty state (below)"},
	{KAPI_ELECT_LEADERS, 0, 2, 2, h_elect_leaders,
	 "preferred elections through `mq_coord.elect_preferred`: the leader hands over at its next tick and the answer waits (up to `timeout_ms`) until the preferred replica leads; ELECTION_NOT_NEEDED where it leads, PREFERRED_LEADER_NOT_AVAILABLE where it is out of the ISR or down; unclean: ELECTION_NOT_NEEDED with a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE without (mq elects out of the ISR only by the topic's config); ALTER on the cluster; without `--coordinator` every election is ELECTION_NOT_NEEDED"},
	{KAPI_OFFSET_DELETE, 0, 0, 99, h_offset_delete,
	 "`mq.delete_offsets` of each topic: a group's committed offsets of some partitions; a topic a live member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC"},
	{KAPI_ALTER_PARTITION_REASSIGNMENTS, 0, 0, 0, h_alter_partition_reassignments,
	 "`mq_coord.reassign` on the coordinator (KIP-455's moves, as `mqctl reassign`); null replicas cancel; ALTER on the cluster; without `--coordinator` only this broker alone"},
	{KAPI_LIST_PARTITION_REASSIGNMENTS, 0, 0, 0, h_list_partition_reassignments,
	 "the coordinator's moves in progress (`mq_coord.partition`): replicas, adding, removing; DESCRIBE on the cluster; none without `--coordinator`"},
	{KAPI_DESCRIBE_CLIENT_QUOTAS, 0, 1, 1, h_describe_client_quotas,
	 "`mq.list_client_quotas()`: entities (user, client-id, both; a null name is the default) matched by name, default or any, strict or not; DESCRIBE on the cluster"},
	{KAPI_ALTER_CLIENT_QUOTAS, 0, 1, 1, h_alter_client_quotas,
	 "`mq.set_client_quota`, one transaction per entry, then on every other live node of a cluster; `producer_byte_rate`, `consumer_byte_rate` and `request_percentage`, which mq-kafka enforces (`controller_mutation_rate` and ip entities are INVALID_REQUEST); `validate_only` supported; ALTER on the cluster"},
	{KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, 0, h_describe_user_scram_credentials,
	 "`mq.scram_credentials` to a principal with DESCRIBE on the cluster, as Kafka (else CLUSTER_AUTHORIZATION_FAILED); a user without credentials `RESOURCE_NOT_FOUND`"},
	{KAPI_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, 0, h_alter_user_scram_credentials,
	 "the verifier derived here from the SaltedPassword, by `mq.set_scram_keys` / `mq.drop_scram_credential`, one transaction per user, then on every other live node of a cluster; ALTER on the cluster, as Kafka (else CLUSTER_AUTHORIZATION_FAILED, nothing altered)"},
	{KAPI_DESCRIBE_CLUSTER, 0, 1, 0, h_describe_cluster,
	 "the brokers Metadata lists, cluster id `mq`, this daemon as the controller; endpoint type controllers (v1) is MISMATCHED_ENDPOINT_TYPE, any other but brokers UNSUPPORTED_ENDPOINT_TYPE (an error: cluster id `\"\"`, controller -1, no brokers, as Kafka 3.9)"},
	{KAPI_DESCRIBE_PRODUCERS, 0, 0, 0, h_describe_producers,
	 "`mq.producers`: each partition's producer ids, epochs, last sequence and its time; READ on the topic; coordinator epoch and transaction start -1"},
	{KAPI_DESCRIBE_TRANSACTIONS, 0, 0, 0, h_describe_transactions,
	 "`mq.kafka_transactions`: state, timeout, start, producer, the partitions with staged batches"},
	{KAPI_LIST_TRANSACTIONS, 0, 1, 0, h_list_transactions,
	 "`mq.kafka_transactions`, filtered by state, producer id and (v1) time open"},
	{KAPI_LIST_CLIENT_METRICS_RESOURCES, 0, 0, 0, h_list_client_metrics_resources,
	 "none: mq keeps no client metrics subscriptions (KIP-714), as a Kafka broker before any is configured; DESCRIBE on the cluster"},
	{KAPI_DESCRIBE_TOPIC_PARTITIONS, 0, 0, 0, h_describe_topic_partitions,
	 "Metadata's topics and partitions a page at a time: in name order from the cursor on, at most `response_partition_limit` (and 2000; a limit of 0 or less is 1, as in Kafka) partitions, the next cursor where the limit cut; each topic's authorized operations; none asked is every topic the role may describe; nothing is created"},
	{KAPI_INCREMENTAL_ALTER_CONFIGS, 0, 1, 1, h_incremental_alter_configs,
	 "SET, DELETE; APPEND and SUBTRACT for Kafka's list keys (`cleanup.policy`, the throttled replica lists; INVALID_CONFIG on others); through `mq.alter_topic`; `validate_only` supported; a key named twice, a resource given twice or a null value but for DELETE is INVALID_REQUEST; a topic name outside Kafka's rule INVALID_TOPIC_EXCEPTION, `\"\"` INVALID_REQUEST (Kafka 3.9's controller)"},
};

#define NAPIS (int) (sizeof(apis) / sizeof(apis[0]))

static bool
is_sasl_api(int16_t key)
{
	return key == KAPI_SASL_HANDSHAKE || key == KAPI_SASL_AUTHENTICATE;
}

/* the API, if this daemon serves it */
static const KApi *
api_find(int16_t key)
{
	for (int i = 0; i < NAPIS; i++)
		if (apis[i].key == key)
			return &apis[i];
	return NULL;
}

/* may this connection send this request yet? */
static bool
api_allowed(const KRequest *req)
{
	return !conn_needs_sasl(req->conn) || conn_sasl_step(req->conn) == KSASL_DONE ||
		req->api_key == KAPI_API_VERSIONS || is_sasl_api(req->api_key);
}

/* the ranges of the APIs served, or (INVALID_REQUEST) none, as Kafka */
static void
api_versions_body(KRequest *req, int16_t error, int16_t version)
{
	KWriter    *w = &req->resp;
	bool		none = error == KERR_INVALID_REQUEST;
	int			n = 0;

	for (int i = 0; i < NAPIS && !none; i++)
		n += api_find(apis[i].key) != NULL;
	kw_i16(w, error);
	kw_array(w, n);
	for (int i = 0; i < NAPIS && !none; i++)
	{
		if (api_find(apis[i].key) == NULL)
			continue;
		kw_i16(w, apis[i].key);
		kw_i16(w, apis[i].min);
		kw_i16(w, apis[i].max);
		kw_tags(w);
	}
	if (version >= 1)
		kw_i32(w, 0);			/* throttle_time_ms */
}

/*
 * KIP-511's pattern for a client's software name and version (v3+):
 * letters, digits, '-' and '.', beginning and ending with a letter or digit
 */
static bool
software_id_valid(KSlice s)
{
	for (int32_t i = 0; i < s.len; i++)
	{
		uint8_t		c = s.p[i];
		bool		alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (!alnum && ((c != '-' && c != '.') || i == 0 || i == s.len - 1))
			return false;
	}
	return s.len > 0;
}

/* v3+'s client software name and version are checked as Kafka checks them */
static void
h_api_versions(KRequest *req)
{
	KReader    *r = &req->body;
	int16_t		error = KERR_NONE;

	if (req->api_version >= 3)
	{
		KSlice		name = kr_str(r);
		KSlice		version = kr_str(r);

		if (r->err || !software_id_valid(name) || !software_id_valid(version))
			error = KERR_INVALID_REQUEST;
	}
	api_versions_body(req, error, req->api_version);
	req_finish(req);
}

void
api_dispatch(KRequest *req, size_t frame_len)
{
	KReader		r;
	const KApi *api;

	if (conn_sasl_step(req->conn) == KSASL_BARE)
	{
		sasl_bare_token(req, frame_len);
		return;
	}
	kr_init(&r, req->frame, frame_len);
	req->api_key = kr_i16(&r);
	req->api_version = kr_i16(&r);
	req->corr = kr_i32(&r);
	req->client_id = kslice_dup(kr_str(&r));
	api = api_find(req->api_key);
	if (r.err || api == NULL)
	{
		mq_log_warning("%s: unknown api key %d, closing", conn_peer(req->conn), req->api_key);
		req_abort(req);
		return;
	}
	if (!api_allowed(req))
	{
		mq_log_warning("%s: api key %d before sasl authentication, closing",
					   conn_peer(req->conn), req->api_key);
		req_abort(req);
		return;
	}
	/* the role its statements run as (principal.c) */
	if (req->api_key != KAPI_API_VERSIONS && !is_sasl_api(req->api_key) && !principal_apply(req))
	{
		mq_log_warning("%s: api key %d from a refused principal, closing",
					   conn_peer(req->conn), req->api_key);
		req_abort(req);
		return;
	}
	if (req->api_version < api->min || req->api_version > api->max)
	{
		if (req->api_key == KAPI_API_VERSIONS)
		{
			api_versions_body(req, KERR_UNSUPPORTED_VERSION, 0);
			req_finish(req);
			return;
		}
		mq_log_warning("%s: api key %d version %d not supported, closing",
					   conn_peer(req->conn), req->api_key, req->api_version);
		req_abort(req);
		return;
	}
	if (req->api_version >= api->flex)
	{
		kr_skip_tags(&r);
		r.flex = true;
		req->resp.flex = true;
		req->flexible_resp = req->api_key != KAPI_API_VERSIONS;
	}
	req->body = r;
	if (r.err)
	{
		req_abort(req);
		return;
	}
	kmetrics_request(req);
	api->handle(req);
}
