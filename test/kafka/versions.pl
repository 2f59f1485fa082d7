# Every API and every version mq-kafka advertises (run by versions.sh with
# the broker's port): for each, a minimal valid request built from the
# message layouts below, and a response decoded field by field for that
# version -- compact strings, arrays and bytes and the tagged fields of
# KIP-482 from the API's first flexible version on, response header v1
# (ApiVersions: v0) -- that must be consumed exactly.  So a version that
# is advertised but mis-encoded fails, as does an advertised range that
# differs from Kafka 3.9's.  Prints TAP.
#
# The layouts are written from Kafka's published protocol (the fields of
# each version; names for reading only): [name, type, versions] with type
# one of i8 i16 i32 i64 bool str nstr bytes uuid [i32] [str], or
# [name, [fields...], versions] for an array of structures (nullable where
# Kafka's is; a null array is sent as empty).  Versions "3+" or "0-2".
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Compress::Zlib ();
use FindBin;
use lib $FindBin::Bin;
use KafkaWire qw(ok tap_done);

my $port = shift or die "usage: versions.pl PORT\n";
$| = 1;
$SIG{PIPE} = 'IGNORE';	# a closed connection fails its check, not the script

# Kafka 3.9's ranges and first flexible versions (99: none)
my %kafka39 = (
	0 => [0, 11, 9], 1 => [0, 17, 12], 2 => [0, 9, 6], 3 => [0, 12, 9], 8 => [0, 9, 8],
	9 => [0, 9, 6], 10 => [0, 6, 3], 11 => [0, 9, 6], 12 => [0, 4, 4], 13 => [0, 5, 4],
	14 => [0, 5, 4], 15 => [0, 5, 5], 16 => [0, 5, 3], 17 => [0, 1, 99], 18 => [0, 4, 3],
	19 => [0, 7, 5], 20 => [0, 6, 4], 21 => [0, 2, 2], 22 => [0, 5, 2], 23 => [0, 4, 4], 32 => [0, 4, 4],
	24 => [0, 5, 3], 25 => [0, 4, 3], 26 => [0, 4, 3], 28 => [0, 4, 3], 65 => [0, 0, 0], 66 => [0, 1, 0],
	33 => [0, 2, 2], 36 => [0, 2, 2], 37 => [0, 3, 2], 42 => [0, 2, 2], 44 => [0, 1, 1],
	29 => [0, 3, 2], 30 => [0, 3, 2], 31 => [0, 3, 2], 50 => [0, 0, 0], 51 => [0, 0, 0],
	45 => [0, 0, 0], 46 => [0, 0, 0], 47 => [0, 0, 99], 35 => [0, 4, 2], 60 => [0, 1, 0],
	61 => [0, 0, 0], 48 => [0, 1, 1], 49 => [0, 1, 1], 75 => [0, 0, 0],
	38 => [0, 3, 2], 39 => [0, 2, 2], 40 => [0, 2, 2], 41 => [0, 3, 2], 43 => [0, 2, 2], 34 => [0, 2, 2], 74 => [0, 0, 0],
);
my @quota_entity = (['entity_type', 'str', '0+'], ['entity_name', 'nstr', '0+']);
my @principal = (['principal_type', 'str', '0+'], ['principal_name', 'str', '0+']);

my @part_fetch = (['partition', 'i32', '0+'], ['current_leader_epoch', 'i32', '9+'],
	['fetch_offset', 'i64', '0+'], ['last_fetched_epoch', 'i32', '12+'],
	['log_start_offset', 'i64', '5+'], ['partition_max_bytes', 'i32', '0+']);
my @config_entry = (['name', 'str', '0+'], ['value', 'nstr', '0+']);
my @txn_topic_result = (['name', 'str', '0+'], ['results', [['index', 'i32', '0+'], ['error_code', 'i16', '0+']], '0+']);

# requests: api key => fields
my %req = (
	29 => [['resource_type_filter', 'i8', '0+'], ['resource_name_filter', 'nstr', '0+'], ['pattern_type_filter', 'i8', '1+'],
		['principal_filter', 'nstr', '0+'], ['host_filter', 'nstr', '0+'], ['operation', 'i8', '0+'],
		['permission_type', 'i8', '0+']],
	30 => [['creations', [['resource_type', 'i8', '0+'], ['resource_name', 'str', '0+'],
			['resource_pattern_type', 'i8', '1+'], ['principal', 'str', '0+'], ['host', 'str', '0+'],
			['operation', 'i8', '0+'], ['permission_type', 'i8', '0+']], '0+']],
	31 => [['filters', [['resource_type_filter', 'i8', '0+'], ['resource_name_filter', 'nstr', '0+'], ['pattern_type_filter', 'i8', '1+'],
		['principal_filter', 'nstr', '0+'], ['host_filter', 'nstr', '0+'], ['operation', 'i8', '0+'],
		['permission_type', 'i8', '0+']], '0+']],
	50 => [['users', [['name', 'str', '0+']], '0+']],
	48 => [['components', [['entity_type', 'str', '0+'], ['match_type', 'i8', '0+'], ['match', 'nstr', '0+']], '0+'],
		['strict', 'bool', '0+']],
	38 => [['owner_principal_type', 'nstr', '3+'], ['owner_principal_name', 'nstr', '3+'], ['renewers', \@principal, '0+'],
		['max_lifetime_ms', 'i64', '0+']],
	39 => [['hmac', 'bytes', '0+'], ['renew_period_ms', 'i64', '0+']],
	40 => [['hmac', 'bytes', '0+'], ['expiry_time_period_ms', 'i64', '0+']],
	41 => [['owners', \@principal, '0+']],
	43 => [['election_type', 'i8', '1+'], ['topic_partitions', [['topic', 'str', '0+'], ['partitions', '[i32]', '0+']], '0+'],
		['timeout_ms', 'i32', '0+']],
	34 => [['dirs', [['path', 'str', '0+'], ['topics', [['name', 'str', '0+'], ['partitions', '[i32]', '0+']], '0+']], '0+']],
	74 => [],
	# cursor: a nullable structure, sent null (-1)
	75 => [['topics', [['name', 'str', '0+']], '0+'], ['response_partition_limit', 'i32', '0+'], ['cursor', 'i8', '0+']],
	49 => [['entries', [['entity', \@quota_entity, '0+'],
			['ops', [['key', 'str', '0+'], ['value', 'f64', '0+'], ['remove', 'bool', '0+']], '0+']], '0+'],
		['validate_only', 'bool', '0+']],
	35 => [['topics', [['topic', 'str', '0+'], ['partitions', '[i32]', '0+']], '0+']],
	61 => [['topics', [['name', 'str', '0+'], ['partition_indexes', '[i32]', '0+']], '0+']],
	60 => [['include_cluster_authorized_operations', 'bool', '0+'], ['endpoint_type', 'i8', '1+']],
	51 => [['deletions', [['name', 'str', '0+'], ['mechanism', 'i8', '0+']], '0+'],
		['upsertions', [['name', 'str', '0+'], ['mechanism', 'i8', '0+'], ['iterations', 'i32', '0+'],
			['salt', 'bytes', '0+'], ['salted_password', 'bytes', '0+']], '0+']],
	0 => [['transactional_id', 'nstr', '3+'], ['acks', 'i16', '0+'], ['timeout_ms', 'i32', '0+'],
		['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'], ['records', 'bytes', '0+']], '0+']], '0+']],
	1 => [['replica_id', 'i32', '0-14'], ['max_wait_ms', 'i32', '0+'], ['min_bytes', 'i32', '0+'],
		['max_bytes', 'i32', '3+'], ['isolation_level', 'i8', '4+'], ['session_id', 'i32', '7+'],
		['session_epoch', 'i32', '7+'],
		['topics', [['topic', 'str', '0-12'], ['topic_id', 'uuid', '13+'], ['partitions', \@part_fetch, '0+']], '0+'],
		['forgotten', [['topic', 'str', '7-12'], ['topic_id', 'uuid', '13+'], ['partitions', '[i32]', '7+']], '7+'],
		['rack_id', 'str', '11+']],
	2 => [['replica_id', 'i32', '0+'], ['isolation_level', 'i8', '2+'],
		['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'],
			['current_leader_epoch', 'i32', '4+'], ['timestamp', 'i64', '0+'], ['max_num_offsets', 'i32', '0-0']], '0+']], '0+']],
	3 => [['topics', [['topic_id', 'uuid', '10+'], ['name', 'nstr', '0+']], '0+'],
		['allow_auto_topic_creation', 'bool', '4+'], ['include_cluster_authorized_operations', 'bool', '8-10'],
		['include_topic_authorized_operations', 'bool', '8+']],
	8 => [['group_id', 'str', '0+'], ['generation_id', 'i32', '1+'], ['member_id', 'str', '1+'],
		['group_instance_id', 'nstr', '7+'], ['retention_time_ms', 'i64', '2-4'],
		['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'], ['committed_offset', 'i64', '0+'],
			['committed_leader_epoch', 'i32', '6+'], ['commit_timestamp', 'i64', '1-1'], ['metadata', 'nstr', '0+']], '0+']], '0+']],
	9 => [['group_id', 'str', '0-7'], ['topics', [['name', 'str', '0-7'], ['partition_indexes', '[i32]', '0-7']], '0-7'],
		['groups', [['group_id', 'str', '8+'], ['member_id', 'nstr', '9+'], ['member_epoch', 'i32', '9+'],
			['topics', [['name', 'str', '8+'], ['partition_indexes', '[i32]', '8+']], '8+']], '8+'],
		['require_stable', 'bool', '7+']],
	10 => [['key', 'str', '0-3'], ['key_type', 'i8', '1+'], ['coordinator_keys', '[str]', '4+']],
	11 => [['group_id', 'str', '0+'], ['session_timeout_ms', 'i32', '0+'], ['rebalance_timeout_ms', 'i32', '1+'],
		['member_id', 'str', '0+'], ['group_instance_id', 'nstr', '5+'], ['protocol_type', 'str', '0+'],
		['protocols', [['name', 'str', '0+'], ['metadata', 'bytes', '0+']], '0+'], ['reason', 'nstr', '8+']],
	12 => [['group_id', 'str', '0+'], ['generation_id', 'i32', '0+'], ['member_id', 'str', '0+'],
		['group_instance_id', 'nstr', '3+']],
	13 => [['group_id', 'str', '0+'], ['member_id', 'str', '0-2'],
		['members', [['member_id', 'str', '3+'], ['group_instance_id', 'nstr', '3+'], ['reason', 'nstr', '5+']], '3+']],
	14 => [['group_id', 'str', '0+'], ['generation_id', 'i32', '0+'], ['member_id', 'str', '0+'],
		['group_instance_id', 'nstr', '3+'], ['protocol_type', 'nstr', '5+'], ['protocol_name', 'nstr', '5+'],
		['assignments', [['member_id', 'str', '0+'], ['assignment', 'bytes', '0+']], '0+']],
	15 => [['groups', '[str]', '0+'], ['include_authorized_operations', 'bool', '3+']],
	16 => [['states_filter', '[str]', '4+'], ['types_filter', '[str]', '5+']],
	18 => [['client_software_name', 'str', '3+'], ['client_software_version', 'str', '3+']],
	19 => [['topics', [['name', 'str', '0+'], ['num_partitions', 'i32', '0+'], ['replication_factor', 'i16', '0+'],
			['assignments', [['partition_index', 'i32', '0+'], ['broker_ids', '[i32]', '0+']], '0+'],
			['configs', \@config_entry, '0+']], '0+'],
		['timeout_ms', 'i32', '0+'], ['validate_only', 'bool', '1+']],
	20 => [['topic_names', '[str]', '0-5'], ['topics', [['name', 'nstr', '6+'], ['topic_id', 'uuid', '6+']], '6+'],
		['timeout_ms', 'i32', '0+']],
	21 => [['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'], ['offset', 'i64', '0+']], '0+']], '0+'],
		['timeout_ms', 'i32', '0+']],
	22 => [['transactional_id', 'nstr', '0+'], ['transaction_timeout_ms', 'i32', '0+'],
		['producer_id', 'i64', '3+'], ['producer_epoch', 'i16', '3+']],
	23 => [['replica_id', 'i32', '3+'], ['topics', [['topic', 'str', '0+'], ['partitions', [['partition', 'i32', '0+'],
			['current_leader_epoch', 'i32', '2+'], ['leader_epoch', 'i32', '0+']], '0+']], '0+']],
	24 => [['transactions', [['transactional_id', 'str', '4+'], ['producer_id', 'i64', '4+'], ['producer_epoch', 'i16', '4+'],
			['verify_only', 'bool', '4+'], ['topics', [['name', 'str', '4+'], ['partitions', '[i32]', '4+']], '4+']], '4+'],
		['v3_transactional_id', 'str', '0-3'], ['v3_producer_id', 'i64', '0-3'], ['v3_producer_epoch', 'i16', '0-3'],
		['v3_topics', [['name', 'str', '0-3'], ['partitions', '[i32]', '0-3']], '0-3']],
	17 => [['mechanism', 'str', '0+']],
	36 => [['auth_bytes', 'bytes', '0+']],
	25 => [['transactional_id', 'str', '0+'], ['producer_id', 'i64', '0+'], ['producer_epoch', 'i16', '0+'],
		['group_id', 'str', '0+']],
	26 => [['transactional_id', 'str', '0+'], ['producer_id', 'i64', '0+'], ['producer_epoch', 'i16', '0+'],
		['committed', 'bool', '0+']],
	47 => [['group_id', 'str', '0+'], ['topics', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+']],
				'0+']], '0+']],
	45 => [['timeout_ms', 'i32', '0+'], ['topics', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+'],
				['replicas', '[i32]', '0+']], '0+']], '0+']],
	46 => [['timeout_ms', 'i32', '0+'], ['topics', [['name', 'str', '0+'], ['partition_indexes', '[i32]', '0+']], '0+']],
	65 => [['transactional_ids', '[str]', '0+']],
	66 => [['state_filters', '[str]', '0+'], ['producer_id_filters', '[i64]', '0+'], ['duration_filter', 'i64', '1+']],
	28 => [['transactional_id', 'str', '0+'], ['group_id', 'str', '0+'], ['producer_id', 'i64', '0+'],
		['producer_epoch', 'i16', '0+'], ['generation_id', 'i32', '3+'], ['member_id', 'str', '3+'],
		['group_instance_id', 'nstr', '3+'],
		['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'], ['committed_offset', 'i64', '0+'],
			['committed_leader_epoch', 'i32', '2+'], ['committed_metadata', 'nstr', '0+']], '0+']], '0+']],
	32 => [['resources', [['type', 'i8', '0+'], ['name', 'str', '0+'], ['keys', '[str]', '0+']], '0+'],
		['include_synonyms', 'bool', '1+'], ['include_documentation', 'bool', '3+']],
	33 => [['resources', [['type', 'i8', '0+'], ['name', 'str', '0+'], ['configs', \@config_entry, '0+']], '0+'],
		['validate_only', 'bool', '0+']],
	37 => [['topics', [['name', 'str', '0+'], ['count', 'i32', '0+'],
			['assignments', [['broker_ids', '[i32]', '0+']], '0+']], '0+'],
		['timeout_ms', 'i32', '0+'], ['validate_only', 'bool', '0+']],
	42 => [['groups_names', '[str]', '0+']],
	44 => [['resources', [['type', 'i8', '0+'], ['name', 'str', '0+'],
			['configs', [['name', 'str', '0+'], ['op', 'i8', '0+'], ['value', 'nstr', '0+']], '0+']], '0+'],
		['validate_only', 'bool', '0+']],
);

my @broker = (['node_id', 'i32', '0+'], ['host', 'str', '0+'], ['port', 'i32', '0+'], ['rack', 'nstr', '1+']);
my %resp = (
	29 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['resources', [['resource_type', 'i8', '0+'], ['resource_name', 'str', '0+'], ['pattern_type', 'i8', '1+'],
			['acls', [['principal', 'str', '0+'], ['host', 'str', '0+'], ['operation', 'i8', '0+'],
				['permission_type', 'i8', '0+']], '0+']], '0+']],
	30 => [['throttle_time_ms', 'i32', '0+'], ['results', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+']], '0+']],
	31 => [['throttle_time_ms', 'i32', '0+'], ['filter_results', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['matching_acls', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'], ['resource_type', 'i8', '0+'],
				['resource_name', 'str', '0+'], ['pattern_type', 'i8', '1+'], ['principal', 'str', '0+'],
				['host', 'str', '0+'], ['operation', 'i8', '0+'], ['permission_type', 'i8', '0+']], '0+']], '0+']],
	50 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['results', [['user', 'str', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['credential_infos', [['mechanism', 'i8', '0+'], ['iterations', 'i32', '0+']], '0+']], '0+']],
	48 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['entries', [['entity', \@quota_entity, '0+'], ['values', [['key', 'str', '0+'], ['value', 'f64', '0+']], '0+']], '0+']],
	38 => [['error_code', 'i16', '0+'], @principal, ['token_requester_principal_type', 'str', '3+'],
		['token_requester_principal_name', 'str', '3+'], ['issue_timestamp_ms', 'i64', '0+'], ['expiry_timestamp_ms', 'i64', '0+'],
		['max_timestamp_ms', 'i64', '0+'], ['token_id', 'str', '0+'], ['hmac', 'bytes', '0+'], ['throttle_time_ms', 'i32', '0+']],
	39 => [['error_code', 'i16', '0+'], ['expiry_timestamp_ms', 'i64', '0+'], ['throttle_time_ms', 'i32', '0+']],
	40 => [['error_code', 'i16', '0+'], ['expiry_timestamp_ms', 'i64', '0+'], ['throttle_time_ms', 'i32', '0+']],
	41 => [['error_code', 'i16', '0+'], ['tokens', [@principal, ['token_requester_principal_type', 'str', '3+'],
			['token_requester_principal_name', 'str', '3+'], ['issue_timestamp', 'i64', '0+'], ['expiry_timestamp', 'i64', '0+'],
			['max_timestamp', 'i64', '0+'], ['token_id', 'str', '0+'], ['hmac', 'bytes', '0+'], ['renewers', \@principal, '0+']], '0+'],
		['throttle_time_ms', 'i32', '0+']],
	43 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '1+'], ['replica_election_results', [['topic', 'str', '0+'],
			['partition_result', [['partition_id', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+']], '0+']],
		'0+']],
	34 => [['throttle_time_ms', 'i32', '0+'], ['results', [['topic_name', 'str', '0+'],
			['partitions', [['partition_index', 'i32', '0+'], ['error_code', 'i16', '0+']], '0+']], '0+']],
	74 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['client_metrics_resources', [['name', 'str', '0+']], '0+']],
	# next_cursor: a nullable structure, null (-1) with one topic asked
	75 => [['throttle_time_ms', 'i32', '0+'], ['topics', [['error_code', 'i16', '0+'], ['name', 'nstr', '0+'],
			['topic_id', 'uuid', '0+'], ['is_internal', 'bool', '0+'],
			['partitions', [['error_code', 'i16', '0+'], ['partition_index', 'i32', '0+'], ['leader_id', 'i32', '0+'],
				['leader_epoch', 'i32', '0+'], ['replica_nodes', '[i32]', '0+'], ['isr_nodes', '[i32]', '0+'],
				['eligible_leader_replicas', '[i32]', '0+'], ['last_known_elr', '[i32]', '0+'],
				['offline_replicas', '[i32]', '0+']], '0+'], ['topic_authorized_operations', 'i32', '0+']], '0+'],
		['next_cursor', 'i8', '0+']],
	49 => [['throttle_time_ms', 'i32', '0+'], ['entries', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['entity', \@quota_entity, '0+']], '0+']],
	60 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['endpoint_type', 'i8', '1+'], ['cluster_id', 'str', '0+'], ['controller_id', 'i32', '0+'],
		['brokers', [['broker_id', 'i32', '0+'], ['host', 'str', '0+'], ['port', 'i32', '0+'], ['rack', 'nstr', '0+']], '0+'],
		['cluster_authorized_operations', 'i32', '0+']],
	35 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '3+'],
		['results', [['error_code', 'i16', '0+'], ['log_dir', 'str', '0+'],
			['topics', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+'],
				['partition_size', 'i64', '0+'], ['offset_lag', 'i64', '0+'], ['is_future_key', 'bool', '0+']], '0+']], '0+'],
			['total_bytes', 'i64', '4+'], ['usable_bytes', 'i64', '4+']], '0+']],
	51 => [['throttle_time_ms', 'i32', '0+'], ['results', [['user', 'str', '0+'], ['error_code', 'i16', '0+'],
			['error_message', 'nstr', '0+']], '0+']],
	61 => [['throttle_time_ms', 'i32', '0+'],
		['topics', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+'], ['error_code', 'i16', '0+'],
			['error_message', 'nstr', '0+'],
			['active_producers', [['producer_id', 'i64', '0+'], ['producer_epoch', 'i32', '0+'],
				['last_sequence', 'i32', '0+'], ['last_timestamp', 'i64', '0+'], ['coordinator_epoch', 'i32', '0+'],
				['current_txn_start_offset', 'i64', '0+']], '0+']], '0+']], '0+']],
	0 => [['responses', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'], ['error_code', 'i16', '0+'],
			['base_offset', 'i64', '0+'], ['log_append_time_ms', 'i64', '2+'], ['log_start_offset', 'i64', '5+'],
			['record_errors', [['batch_index', 'i32', '8+'], ['message', 'nstr', '8+']], '8+'],
			['error_message', 'nstr', '8+']], '0+']], '0+'], ['throttle_time_ms', 'i32', '1+']],
	1 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '7+'], ['session_id', 'i32', '7+'],
		['responses', [['topic', 'str', '0-12'], ['topic_id', 'uuid', '13+'],
			['partitions', [['index', 'i32', '0+'], ['error_code', 'i16', '0+'], ['high_watermark', 'i64', '0+'],
				['last_stable_offset', 'i64', '4+'], ['log_start_offset', 'i64', '5+'],
				['aborted', [['producer_id', 'i64', '4+'], ['first_offset', 'i64', '4+']], '4+'],
				['preferred_read_replica', 'i32', '11+'], ['records', 'bytes', '0+']], '0+']], '0+']],
	2 => [['throttle_time_ms', 'i32', '2+'], ['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'],
			['error_code', 'i16', '0+'], ['old_style_offsets', '[i64]', '0-0'], ['timestamp', 'i64', '1+'],
			['offset', 'i64', '1+'], ['leader_epoch', 'i32', '4+']], '0+']], '0+']],
	3 => [['throttle_time_ms', 'i32', '3+'], ['brokers', \@broker, '0+'], ['cluster_id', 'nstr', '2+'],
		['controller_id', 'i32', '1+'],
		['topics', [['error_code', 'i16', '0+'], ['name', 'nstr', '0+'], ['topic_id', 'uuid', '10+'],
			['is_internal', 'bool', '1+'], ['partitions', [['error_code', 'i16', '0+'], ['index', 'i32', '0+'],
				['leader_id', 'i32', '0+'], ['leader_epoch', 'i32', '7+'], ['replicas', '[i32]', '0+'],
				['isr', '[i32]', '0+'], ['offline', '[i32]', '5+']], '0+'],
			['topic_authorized_operations', 'i32', '8+']], '0+'],
		['cluster_authorized_operations', 'i32', '8-10']],
	8 => [['throttle_time_ms', 'i32', '3+'], ['topics', [['name', 'str', '0+'],
			['partitions', [['index', 'i32', '0+'], ['error_code', 'i16', '0+']], '0+']], '0+']],
	9 => [['throttle_time_ms', 'i32', '3+'],
		['topics', [['name', 'str', '0-7'], ['partitions', [['index', 'i32', '0-7'], ['committed_offset', 'i64', '0-7'],
			['committed_leader_epoch', 'i32', '5-7'], ['metadata', 'nstr', '0-7'], ['error_code', 'i16', '0-7']], '0-7']], '0-7'],
		['error_code', 'i16', '2-7'],
		['groups', [['group_id', 'str', '8+'], ['topics', [['name', 'str', '8+'], ['partitions', [['index', 'i32', '8+'],
			['committed_offset', 'i64', '8+'], ['committed_leader_epoch', 'i32', '8+'], ['metadata', 'nstr', '8+'],
			['error_code', 'i16', '8+']], '8+']], '8+'], ['error_code', 'i16', '8+']], '8+']],
	10 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '0-3'], ['error_message', 'nstr', '1-3'],
		['node_id', 'i32', '0-3'], ['host', 'str', '0-3'], ['port', 'i32', '0-3'],
		['coordinators', [['key', 'str', '4+'], ['node_id', 'i32', '4+'], ['host', 'str', '4+'], ['port', 'i32', '4+'],
			['error_code', 'i16', '4+'], ['error_message', 'nstr', '4+']], '4+']],
	11 => [['throttle_time_ms', 'i32', '2+'], ['error_code', 'i16', '0+'], ['generation_id', 'i32', '0+'],
		['protocol_type', 'nstr', '7+'], ['protocol_name', 'nstr', '0+'], ['leader', 'str', '0+'],
		['skip_assignment', 'bool', '9+'], ['member_id', 'str', '0+'],
		['members', [['member_id', 'str', '0+'], ['group_instance_id', 'nstr', '5+'], ['metadata', 'bytes', '0+']], '0+']],
	12 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '0+']],
	13 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '0+'],
		['members', [['member_id', 'str', '3+'], ['group_instance_id', 'nstr', '3+'], ['error_code', 'i16', '3+']], '3+']],
	14 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '0+'], ['protocol_type', 'nstr', '5+'],
		['protocol_name', 'nstr', '5+'], ['assignment', 'bytes', '0+']],
	15 => [['throttle_time_ms', 'i32', '1+'], ['groups', [['error_code', 'i16', '0+'], ['group_id', 'str', '0+'],
			['state', 'str', '0+'], ['protocol_type', 'str', '0+'], ['protocol_data', 'str', '0+'],
			['members', [['member_id', 'str', '0+'], ['group_instance_id', 'nstr', '4+'], ['client_id', 'str', '0+'],
				['client_host', 'str', '0+'], ['metadata', 'bytes', '0+'], ['assignment', 'bytes', '0+']], '0+'],
			['authorized_operations', 'i32', '3+']], '0+']],
	16 => [['throttle_time_ms', 'i32', '1+'], ['error_code', 'i16', '0+'],
		['groups', [['group_id', 'str', '0+'], ['protocol_type', 'str', '0+'], ['state', 'str', '4+'],
			['type', 'str', '5+']], '0+']],
	18 => [['error_code', 'i16', '0+'], ['api_keys', [['key', 'i16', '0+'], ['min', 'i16', '0+'], ['max', 'i16', '0+']], '0+'],
		['throttle_time_ms', 'i32', '1+']],
	19 => [['throttle_time_ms', 'i32', '2+'], ['topics', [['name', 'str', '0+'], ['topic_id', 'uuid', '7+'],
			['error_code', 'i16', '0+'], ['error_message', 'nstr', '1+'], ['num_partitions', 'i32', '5+'],
			['replication_factor', 'i16', '5+'], ['configs', [['name', 'str', '5+'], ['value', 'nstr', '5+'],
				['read_only', 'bool', '5+'], ['source', 'i8', '5+'], ['sensitive', 'bool', '5+']], '5+']], '0+']],
	20 => [['throttle_time_ms', 'i32', '1+'], ['responses', [['name', 'nstr', '0+'], ['topic_id', 'uuid', '6+'],
			['error_code', 'i16', '0+'], ['error_message', 'nstr', '5+']], '0+']],
	21 => [['throttle_time_ms', 'i32', '0+'], ['topics', [['name', 'str', '0+'], ['partitions', [['index', 'i32', '0+'],
			['low_watermark', 'i64', '0+'], ['error_code', 'i16', '0+']], '0+']], '0+']],
	22 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['producer_id', 'i64', '0+'],
		['producer_epoch', 'i16', '0+']],
	23 => [['throttle_time_ms', 'i32', '2+'], ['topics', [['topic', 'str', '0+'], ['partitions', [['error_code', 'i16', '0+'],
			['partition', 'i32', '0+'], ['leader_epoch', 'i32', '1+'], ['end_offset', 'i64', '0+']], '0+']], '0+']],
	24 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '4+'],
		['results_by_transaction', [['transactional_id', 'str', '4+'], ['topic_results', \@txn_topic_result, '4+']], '4+'],
		['results_by_topic', \@txn_topic_result, '0-3']],
	17 => [['error_code', 'i16', '0+'], ['mechanisms', '[str]', '0+']],
	36 => [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'], ['auth_bytes', 'bytes', '0+'],
		['session_lifetime_ms', 'i64', '1+']],
	25 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+']],
	26 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+']],
	47 => [['error_code', 'i16', '0+'], ['throttle_time_ms', 'i32', '0+'], ['topics', [['name', 'str', '0+'],
				['partitions', [['partition_index', 'i32', '0+'], ['error_code', 'i16', '0+']], '0+']], '0+']],
	45 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['responses', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+'], ['error_code', 'i16', '0+'],
				['error_message', 'nstr', '0+']], '0+']], '0+']],
	46 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
		['topics', [['name', 'str', '0+'], ['partitions', [['partition_index', 'i32', '0+'], ['replicas', '[i32]', '0+'],
				['adding_replicas', '[i32]', '0+'], ['removing_replicas', '[i32]', '0+']], '0+']], '0+']],
	65 => [['throttle_time_ms', 'i32', '0+'], ['transaction_states', [['error_code', 'i16', '0+'],
			['transactional_id', 'str', '0+'], ['transaction_state', 'str', '0+'], ['transaction_timeout_ms', 'i32', '0+'],
			['transaction_start_time_ms', 'i64', '0+'], ['producer_id', 'i64', '0+'], ['producer_epoch', 'i16', '0+'],
			['topics', [['topic', 'str', '0+'], ['partitions', '[i32]', '0+']], '0+']], '0+']],
	66 => [['throttle_time_ms', 'i32', '0+'], ['error_code', 'i16', '0+'], ['unknown_state_filters', '[str]', '0+'],
		['transaction_states', [['transactional_id', 'str', '0+'], ['producer_id', 'i64', '0+'],
			['transaction_state', 'str', '0+']], '0+']],
	28 => [['throttle_time_ms', 'i32', '0+'], ['topics', [['name', 'str', '0+'],
			['partitions', [['index', 'i32', '0+'], ['error_code', 'i16', '0+']], '0+']], '0+']],
	32 => [['throttle_time_ms', 'i32', '0+'], ['results', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['type', 'i8', '0+'], ['name', 'str', '0+'], ['configs', [['name', 'str', '0+'], ['value', 'nstr', '0+'],
				['read_only', 'bool', '0+'], ['is_default', 'bool', '0-0'], ['source', 'i8', '1+'],
				['sensitive', 'bool', '0+'], ['synonyms', [['name', 'str', '1+'], ['value', 'nstr', '1+'],
					['source', 'i8', '1+']], '1+'], ['config_type', 'i8', '3+'], ['documentation', 'nstr', '3+']], '0+']], '0+']],
	33 => [['throttle_time_ms', 'i32', '0+'], ['responses', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['type', 'i8', '0+'], ['name', 'str', '0+']], '0+']],
	37 => [['throttle_time_ms', 'i32', '0+'], ['results', [['name', 'str', '0+'], ['error_code', 'i16', '0+'],
			['error_message', 'nstr', '0+']], '0+']],
	42 => [['throttle_time_ms', 'i32', '0+'], ['results', [['group_id', 'str', '0+'], ['error_code', 'i16', '0+']], '0+']],
	44 => [['throttle_time_ms', 'i32', '0+'], ['responses', [['error_code', 'i16', '0+'], ['error_message', 'nstr', '0+'],
			['type', 'i8', '0+'], ['name', 'str', '0+']], '0+']],
);

sub in_range {
	my ($v, $r) = @_;
	return $v >= $1 if $r =~ /^(\d+)\+$/;
	return $v >= $1 && $v <= $2 if $r =~ /^(\d+)-(\d+)$/;
	die "bad range $r\n";
}

# ---- encoding
sub uvarint { my $u = shift; my $o = ''; while ($u >= 0x80) { $o .= chr(($u & 0x7f) | 0x80); $u >>= 7 } $o . chr($u) }
sub e_str {
	my ($s, $flex) = @_;
	return $flex ? uvarint(0) : pack('s>', -1) unless defined $s;
	return ($flex ? uvarint(1 + length $s) : pack('n', length $s)) . $s;
}
sub e_bytes {
	my ($s, $flex) = @_;
	return $flex ? uvarint(0) : pack('l>', -1) unless defined $s;
	return ($flex ? uvarint(1 + length $s) : pack('l>', length $s)) . $s;
}
sub e_count { my ($k, $flex) = @_; $flex ? uvarint($k + 1) : pack('l>', $k) }

sub encode {
	my ($fields, $vals, $v, $flex) = @_;
	my $out = '';
	for my $f (@$fields) {
		my ($name, $type, $range) = @$f;
		next unless in_range($v, $range);
		my $x = $vals->{$name};
		if (ref $type) {
			my @el = @{ $x // [] };
			$out .= e_count(scalar @el, $flex);
			$out .= encode($type, $_, $v, $flex) for @el;
		}
		elsif ($type =~ /^\[(\w+)\]$/) {
			my @el = @{ $x // [] };
			$out .= e_count(scalar @el, $flex);
			$out .= $1 eq 'str' ? e_str($_, $flex) : pack('l>', $_) for @el;
		}
		elsif ($type eq 'i8' || $type eq 'bool') { $out .= pack('c', $x // 0) }
		elsif ($type eq 'i16') { $out .= pack('s>', $x // 0) }
		elsif ($type eq 'i32') { $out .= pack('l>', $x // 0) }
		elsif ($type eq 'i64') { $out .= pack('q>', $x // 0) }
		elsif ($type eq 'f64') { $out .= pack('d>', $x // 0) }
		elsif ($type eq 'str') { $out .= e_str($x // '', $flex) }
		elsif ($type eq 'nstr') { $out .= e_str($x, $flex) }
		elsif ($type eq 'bytes') { $out .= e_bytes($x // '', $flex) }
		elsif ($type eq 'uuid') { $out .= $x // ("\0" x 16) }
		else { die "type $type\n" }
	}
	$out .= uvarint(0) if $flex;
	return $out;
}

# ---- decoding: dies on a short or malformed read
sub take { my ($b, $k) = @_; die "short read\n" if $k < 0 || $$b{pos} + $k > length $$b{buf}; my $s = substr($$b{buf}, $$b{pos}, $k); $$b{pos} += $k; $s }
sub d_uvarint {
	my $b = shift;
	my ($u, $shift) = (0, 0);
	while (1) { my $c = ord take($b, 1); $u |= ($c & 0x7f) << $shift; return $u unless $c & 0x80; $shift += 7; die "varint\n" if $shift > 63 }
}
sub d_len { my ($b, $flex, $wide) = @_; $flex ? d_uvarint($b) - 1 : unpack($wide ? 'l>' : 's>', take($b, $wide ? 4 : 2)) }
sub d_tags {
	my $b = shift;
	my $k = d_uvarint($b);
	for (1 .. $k) { d_uvarint($b); take($b, d_uvarint($b)) }
}
sub decode {
	my ($fields, $b, $v, $flex) = @_;
	my %h;
	for my $f (@$fields) {
		my ($name, $type, $range) = @$f;
		next unless in_range($v, $range);
		if (ref $type || $type =~ /^\[/) {
			my $k = d_len($b, $flex, 1);
			die "array length $k\n" if $k < -1 || $k > 100000;
			my @el;
			for (1 .. $k) {
				if (ref $type) { push @el, decode($type, $b, $v, $flex) }
				elsif ($type eq '[str]') { my $l = d_len($b, $flex, 0); push @el, $l < 0 ? undef : take($b, $l) }
				elsif ($type eq '[i64]') { push @el, unpack('q>', take($b, 8)) }
				else { push @el, unpack('l>', take($b, 4)) }
			}
			$h{$name} = \@el;
		}
		elsif ($type eq 'i8' || $type eq 'bool') { $h{$name} = unpack('c', take($b, 1)) }
		elsif ($type eq 'i16') { $h{$name} = unpack('s>', take($b, 2)) }
		elsif ($type eq 'i32') { $h{$name} = unpack('l>', take($b, 4)) }
		elsif ($type eq 'i64') { $h{$name} = unpack('q>', take($b, 8)) }
		elsif ($type eq 'f64') { $h{$name} = unpack('d>', take($b, 8)) }
		elsif ($type eq 'str' || $type eq 'nstr') {
			my $l = d_len($b, $flex, 0);
			die "null $name\n" if $l < 0 && $type eq 'str';
			$h{$name} = $l < 0 ? undef : take($b, $l);
		}
		elsif ($type eq 'bytes') { my $l = d_len($b, $flex, 1); $h{$name} = $l < 0 ? undef : take($b, $l) }
		elsif ($type eq 'uuid') { $h{$name} = take($b, 16) }
	}
	d_tags($b) if $flex;
	return \%h;
}

# ---- the connection
my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
  or die "connect: $!\n";
my $corr = 0;
sub call {
	my ($api, $v, $body, $flex) = @_;
	my $hdr = pack('s> s> l>', $api, $v, ++$corr) . pack('n', 11) . 'versions.pl';
	$hdr .= "\0" if $flex;
	my $frame = $hdr . $body;
	$sock->syswrite(pack('l>', length $frame) . $frame);
	my $sel = IO::Select->new($sock);
	my $buf = '';
	while (1) {
		return (undef, 'timeout') unless $sel->can_read(15);
		my $got = $sock->sysread($buf, 1 << 20, length $buf);
		return (undef, 'connection closed') unless $got;
		next if length $buf < 4;
		my $size = unpack('l>', $buf);
		next if length $buf < 4 + $size;
		my $c = unpack('l>', substr($buf, 4, 4));
		return (undef, "correlation id $c, not $corr") if $c != $corr;
		my $hlen = ($flex && $api != 18) ? 5 : 4;	# ApiVersions: header v0
		my $tags = $hlen == 5 ? ord(substr($buf, 8, 1)) : 0;
		return (undef, "response header tags $tags") if $tags != 0;
		return (substr($buf, 4 + $hlen, $size - $hlen), undef);
	}
}

sub exchange {
	my ($api, $v, $vals) = @_;
	my $flex = $v >= $kafka39{$api}[2];
	my ($body, $err) = call($api, $v, encode($req{$api}, $vals, $v, $flex), $flex);
	return (undef, $err) unless defined $body;
	my $b = { buf => $body, pos => 0 };
	my $h = eval { decode($resp{$api}, $b, $v, $flex) };
	return (undef, "decoding: $@") unless $h;
	return (undef, ($b->{pos} < length $body ? 'trailing ' . (length($body) - $b->{pos}) : '') . ' bytes')
	  if $b->{pos} != length $body;
	return ($h, undef);
}

# ---- ApiVersions: the advertised ranges are Kafka 3.9's
my ($av, $err) = exchange(18, 3, { client_software_name => 'versions.pl', client_software_version => '1' });
ok($av, 'ApiVersions v3 decodes', $err);
exit 1 unless $av;
my %adv = map { $_->{key} => [$_->{min}, $_->{max}] } @{ $av->{api_keys} };
for my $k (sort { $a <=> $b } keys %kafka39) {
	ok($adv{$k} && $adv{$k}[0] == $kafka39{$k}[0] && $adv{$k}[1] == $kafka39{$k}[1],
		"api $k: advertised range is Kafka 3.9's ($kafka39{$k}[0]-$kafka39{$k}[1])",
		$adv{$k} ? "advertised $adv{$k}[0]-$adv{$k}[1]" : 'not advertised');
}
ok(!grep({ !$kafka39{$_} } keys %adv), 'no API advertised that this test does not know');

# ---- a topic and its id
my $topic = 'vt';
my ($md) = exchange(3, 12, { topics => [{ name => $topic }], allow_auto_topic_creation => 0 });
my $tid = $md && $md->{topics}[0]{topic_id};
ok($md && $md->{topics}[0]{error_code} == 0 && $tid ne "\0" x 16, 'Metadata v12 gives topic vt an id');
my ($md2) = exchange(3, 12, { topics => [{ topic_id => $tid, name => undef }] });
ok($md2 && ($md2->{topics}[0]{name} // '') eq $topic, 'Metadata v12 by topic id names the topic');

# a minimal valid record batch (v2) of one record
my $rec = "\0" . "\0" . "\0" . "\x01" . "\x02v" . "\0";
my $rest = pack('s> l> q> q> q> s> l> l>', 0, 0, 0, 0, -1, -1, -1, 1) . chr(2 * length $rec) . $rec;
sub crc32c { my $c = 0xFFFFFFFF; for my $b (unpack 'C*', $_[0]) { $c ^= $b; $c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8 } $c ^ 0xFFFFFFFF }
my $batch = pack('q> l> l> C N', 0, 9 + length $rest, 0, 2, crc32c($rest)) . $rest;

# a message set of one message in format 0 or 1 (Produce v0-v2)
sub message {
	my ($magic) = @_;
	my $body = pack('C C', $magic, 0) . ($magic ? pack('q>', 1700000000000) : '') . pack('l>', -1) . pack('l>', 1) . 'o';
	my $m = pack('N', Compress::Zlib::crc32($body)) . $body;
	return pack('q> l>', 0, length $m) . $m;
}

# the magics of a fetched message set, or undef if a CRC-32 is wrong
sub magics {
	my ($set) = @_;
	my @m;
	while (length $set >= 12) {
		my (undef, $size) = unpack('q> l>', $set);
		last if length $set < 12 + $size;
		my ($crc, $rest) = (unpack('N', substr($set, 12, 4)), substr($set, 16, $size - 4));
		return undef if Compress::Zlib::crc32($rest) != $crc;
		push @m, ord $rest;
		$set = substr($set, 12 + $size);
	}
	return \@m;
}

# ---- each API's requests, by version
my %vals = (
	0 => sub { { acks => 1, timeout_ms => 5000, topics => [{ name => $topic, partitions => [{ index => 0,
				records => $_[0] >= 3 ? $batch : message($_[0] >= 2 ? 1 : 0) }] }] } },
	1 => sub { { replica_id => -1, max_wait_ms => 0, min_bytes => 0, max_bytes => 1 << 20, session_epoch => -1,
			topics => [{ topic => $topic, topic_id => $tid, partitions => [{ partition => 0, fetch_offset => 0,
				current_leader_epoch => -1, last_fetched_epoch => -1, log_start_offset => -1, partition_max_bytes => 1 << 20 }] }] } },
	2 => sub { { replica_id => -1, topics => [{ name => $topic, partitions => [{ index => 0, current_leader_epoch => -1,
				timestamp => $_[0] >= 7 ? -3 : -1, max_num_offsets => 1 }] }] } },
	3 => sub { { topics => [{ name => $topic }] } },
	8 => sub { { group_id => 'vg', generation_id => -1, member_id => '',
			topics => [{ name => $topic, partitions => [{ index => 0, committed_offset => 1, committed_leader_epoch => -1 }] }] } },
	9 => sub { my $t = [{ name => $topic, partition_indexes => [0] }];
		{ group_id => 'vg', topics => $t, groups => [{ group_id => 'vg', member_epoch => -1, topics => $t }, { group_id => 'vh' }] } },
	10 => sub { { key => 'vg', coordinator_keys => ['vg', 'vh'] } },
	11 => sub { { group_id => "vj$_[0]", session_timeout_ms => 10000, rebalance_timeout_ms => 10000, member_id => '',
			protocol_type => 'consumer', protocols => [{ name => 'range', metadata => "\0\0\0\0\0\0\0\0\0\0" }] } },
	12 => sub { { group_id => 'vg', generation_id => 1, member_id => 'nobody' } },
	13 => sub { { group_id => 'vg', member_id => 'nobody', members => [{ member_id => 'nobody' }] } },
	14 => sub { { group_id => 'vg', generation_id => 1, member_id => 'nobody', protocol_type => 'consumer', protocol_name => 'range' } },
	15 => sub { { groups => ['vg'] } },
	16 => sub { { states_filter => [], types_filter => [] } },
	18 => sub { { client_software_name => 'versions.pl', client_software_version => '1' } },
	19 => sub { { topics => [{ name => "vc$_[0]", num_partitions => 1, replication_factor => 1,
				configs => [{ name => 'retention.ms', value => '60000' }] }], timeout_ms => 5000, validate_only => 0 } },
	20 => sub { { topic_names => ["vc$_[0]"], topics => [{ name => "vc$_[0]" }], timeout_ms => 5000 } },
	21 => sub { { topics => [{ name => 'vnone', partitions => [{ index => 0, offset => 0 }] }], timeout_ms => 5000 } },
	22 => sub { { transactional_id => undef, transaction_timeout_ms => 60000, producer_id => -1, producer_epoch => -1 } },
	23 => sub { { replica_id => -1, topics => [{ topic => $topic, partitions => [{ partition => 0,
		current_leader_epoch => -1, leader_epoch => 0 }] }] } },
	# an unknown transactional id: decoded and answered (INVALID_PRODUCER_ID_MAPPING), nothing changed
	24 => sub { my $t = [{ name => $topic, partitions => [0] }];
		{ transactions => [{ transactional_id => 'vx', producer_id => 1, producer_epoch => 0, verify_only => 0, topics => $t }],
			v3_transactional_id => 'vx', v3_producer_id => 1, v3_producer_epoch => 0, v3_topics => $t } },
	# a listener without SASL: ILLEGAL_SASL_STATE, and the connection goes on (checked below)
	17 => sub { { mechanism => 'PLAIN' } },
	36 => sub { { auth_bytes => "\0u\0p" } },
	25 => sub { { transactional_id => 'vx', producer_id => 1, producer_epoch => 0, group_id => 'vg' } },
	# broker 1 alone: nothing to move on a single daemon
	45 => sub { { timeout_ms => 5000, topics => [{ name => $topic, partitions => [{ partition_index => 0, replicas => [1] }] }] } },
	46 => sub { { timeout_ms => 5000, topics => [{ name => $topic, partition_indexes => [0] }] } },
	# a group with no offsets (vg's are checked below): GROUP_ID_NOT_FOUND
	47 => sub { { group_id => 'vdel', topics => [{ name => $topic, partitions => [{ partition_index => 0 }] }] } },
	48 => sub { { components => [{ entity_type => 'client-id', match_type => 2, match => undef }], strict => 0 } },
	75 => sub { { topics => [{ name => $topic }], response_partition_limit => 2000, cursor => -1 } },
	74 => sub { {} },
	# a directory no tablespace has: LOG_DIR_NOT_FOUND, nothing moved
	34 => sub { { dirs => [{ path => 'vnowhere', topics => [{ name => $topic, partitions => [0] }] }] } },
	# partition 0 and one the topic lacks (twice: answered once), preferred (v0) or unclean (v1+)
	43 => sub { { election_type => $_[0] >= 1 ? 1 : 0, topic_partitions => [{ topic => $topic, partitions => [9, 0, 9] }],
			timeout_ms => 1000 } },
	38 => sub { { owner_principal_type => 'User', owner_principal_name => 'vowner', max_lifetime_ms => -1,
			renewers => [{ principal_type => 'User', principal_name => 'vrenewer' }] } },
	39 => sub { { hmac => 'vhmac', renew_period_ms => -1 } },
	40 => sub { { hmac => 'vhmac', expiry_time_period_ms => -1 } },
	41 => sub { { owners => [{ principal_type => 'User', principal_name => 'vowner' }] } },
	49 => sub { { entries => [{ entity => [{ entity_type => 'user', entity_name => 'vq' }],
			ops => [{ key => 'producer_byte_rate', value => 1000, remove => 0 }] }], validate_only => 1 } },
	65 => sub { { transactional_ids => ['vx'] } },
	66 => sub { { state_filters => ['Ongoing', 'NoSuchState'], producer_id_filters => [], duration_filter => -1 } },
	26 => sub { { transactional_id => 'vx', producer_id => 1, producer_epoch => 0, committed => 1 } },
	28 => sub { { transactional_id => 'vx', group_id => 'vg', producer_id => 1, producer_epoch => 0, generation_id => -1,
			member_id => '', group_instance_id => undef,
			topics => [{ name => $topic, partitions => [{ index => 0, committed_offset => 1, committed_leader_epoch => -1 }] }] } },
	32 => sub { { resources => [{ type => 2, name => $topic, keys => ['retention.ms'] }] } },
	33 => sub { { resources => [{ type => 2, name => $topic, configs => [{ name => 'retention.ms', value => '600000' }] }],
			validate_only => 1 } },
	35 => sub { { topics => [{ topic => $topic, partitions => [0] }] } },
	# partition 0 and one the topic lacks
	61 => sub { { topics => [{ name => $topic, partition_indexes => [0, 7] }] } },
	60 => sub { { include_cluster_authorized_operations => 0, endpoint_type => 1 } },
	37 => sub { { topics => [{ name => $topic, count => 1 }], timeout_ms => 5000, validate_only => 1 } },
	42 => sub { { groups_names => ['vnone'] } },
	44 => sub { { resources => [{ type => 2, name => $topic, configs => [{ name => 'retention.ms', op => 0, value => '600000' }] }],
			validate_only => 1 } },
);

for my $k (sort { $a <=> $b } keys %vals) {
	next unless $adv{$k};
	for my $v ($adv{$k}[0] .. $adv{$k}[1]) {
		my ($h, $e) = exchange($k, $v, $vals{$k}->($v));
		ok($h, "api $k v$v: the response decodes exactly", $e);
		print "# api $k v$v: " . summary($k, $h) . "\n" if $h && summary($k, $h);
		if (!$h) {
			$sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die "connect: $!\n";
		}
	}
}

# ElectLeaders on a single daemon: no election is needed (84), an unknown partition is 3
for my $v ($adv{43}[0] .. $adv{43}[1]) {
	my ($h) = exchange(43, $v, $vals{43}->($v));
	my $got = $h ? summary(43, $h) : 'no answer';
	ok($got eq 'partitions 0: error 84, 9: error 3' ? 1 : 0,
		"ElectLeaders v$v: ELECTION_NOT_NEEDED for a partition this daemon leads, UNKNOWN_TOPIC_OR_PARTITION for one it lacks (asked twice, answered once)", $got);
}

# SASL on a listener without it: as Kafka, ILLEGAL_SASL_STATE and no mechanisms
for my $k (17, 36) {
	my @codes = map { my ($h) = exchange($k, $_, $vals{$k}->($_)); $h ? $h->{error_code} . ($k == 17 ? '/' . @{ $h->{mechanisms} } : '') : 'none' } $adv{$k}[0] .. $adv{$k}[1];
	my $want = $k == 17 ? '34/0' : '34';
	ok((grep { $_ ne $want } @codes) ? 0 : 1, "api $k at every version on a listener without SASL: ILLEGAL_SASL_STATE",
		join(',', @codes));
}

# mq issues no delegation tokens: on a connection without SASL, Kafka's first refusal
for my $k (38 .. 41) {
	my @codes = map { my ($h) = exchange($k, $_, $vals{$k}->($_)); $h ? $h->{error_code} : 'none' } $adv{$k}[0] .. $adv{$k}[1];
	ok((grep { $_ ne '64' } @codes) ? 0 : 1, "api $k at every version: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED without SASL",
		join(',', @codes));
}

# the semantic checks that go with the new fields
sub summary {
	my ($k, $h) = @_;
	return "error $h->{responses}[0]{partitions}[0]{error_code}" if $k == 0;
	return "records " . length($h->{responses}[0]{partitions}[0]{records} // '') if $k == 1;
	return "error $h->{error_code}" if $k == 25 || $k == 26;
	return "epoch end $h->{topics}[0]{partitions}[0]{end_offset}" if $k == 23;
	return "log dir $h->{results}[0]{log_dir}: $h->{results}[0]{topics}[0]{name} partition "
		. "$h->{results}[0]{topics}[0]{partitions}[0]{partition_index} of "
		. "$h->{results}[0]{topics}[0]{partitions}[0]{partition_size} bytes" if $k == 35 && @{ $h->{results} // [] };
	return 'partitions ' . join(' ', map { "$_->{partition_index}: error $_->{error_code}, "
				. scalar(@{ $_->{active_producers} }) . ' producers' } @{ $h->{topics}[0]{partitions} }) if $k == 61;
	return "error $h->{error_code}, " . scalar(@{ $h->{client_metrics_resources} }) . ' resources' if $k == 74;
	return "error $h->{results}[0]{partitions}[0]{error_code}" if $k == 34 && @{ $h->{results} // [] };
	return 'partitions ' . join(', ', map { "$_->{partition_id}: error $_->{error_code}" }
			@{ $h->{replica_election_results}[0]{partition_result} }) if $k == 43 && @{ $h->{replica_election_results} // [] };
	return "error $h->{error_code} cluster $h->{cluster_id} controller $h->{controller_id} brokers "
		. join(',', map { "$_->{broker_id}\@$_->{host}:$_->{port}" } @{ $h->{brokers} }) if $k == 60;
	return '';
}
for my $v (0 .. 2) {
	my ($h, $e) = exchange(0, $v, $vals{0}->($v));
	my $p = $h && $h->{responses}[0]{partitions}[0];
	ok($p && $p->{error_code} == 0 && $p->{base_offset} > 0, "Produce v$v stores a format-" . ($v >= 2 ? 1 : 0) . ' message',
		$e // ($p ? "error $p->{error_code}" : 'no partition'));
}
{
	# a record without a key to a compacted topic: INVALID_RECORD, and (v8+) why
	my ($h, $e) = exchange(0, 11, { acks => 1, timeout_ms => 5000,
			topics => [{ name => 'vk', partitions => [{ index => 0, records => $batch }] }] });
	my $p = $h && $h->{responses}[0]{partitions}[0];
	ok(($p && $p->{error_code} == 87 && ($p->{error_message} // '') =~ /key/) ? 1 : 0,
		'Produce v11 of a keyless record to a compacted topic: INVALID_RECORD (87) with an error message',
		$e // ($p ? "error $p->{error_code}, message " . ($p->{error_message} // 'null') : 'no partition'));
}
for my $v (0 .. 3) {
	my ($h, $e) = exchange(1, $v, $vals{1}->($v));
	my $p = $h && $h->{responses}[0]{partitions}[0];
	my $m = $p && magics($p->{records});
	my $want = $v >= 2 ? 1 : 0;
	ok($m && @$m >= 5 && !grep({ $_ != $want } @$m), "Fetch v$v answers every record as a format-$want message, CRC-32 right",
		$e // ($m ? "magics @$m" : 'bad CRC or no partition'));
}
for my $v (12, 13, 16, 17) {
	next unless $adv{1} && $v <= $adv{1}[1];
	my ($h, $e) = exchange(1, $v, $vals{1}->($v));
	my $p = $h && $h->{responses}[0]{partitions}[0];
	ok($p && $p->{error_code} == 0 && length($p->{records} // '') > 61, "Fetch v$v reads topic vt's records"
		. ($v >= 13 ? ' by its id' : ''), $e // ($p ? "error $p->{error_code}" : 'no partition'));
}
{
	my ($h) = exchange(1, 13, { %{ $vals{1}->(13) }, topics => [{ topic_id => "\x01" x 16, partitions => [{ partition => 0, partition_max_bytes => 1000 }] }] });
	ok($h && $h->{responses}[0]{partitions}[0]{error_code} == 100, 'Fetch v13 of an unknown topic id: UNKNOWN_TOPIC_ID (100)');
}
{
	my ($h) = exchange(2, 7, $vals{2}->(7));
	my $p = $h && $h->{topics}[0]{partitions}[0];
	print "# ListOffsets v7 -3: offset $p->{offset} timestamp $p->{timestamp}\n" if $p;
	ok($p && $p->{error_code} == 0 && $p->{offset} >= 0 && $p->{timestamp} > 0,
		'ListOffsets v7 max timestamp (-3) gives a record\'s offset and time');
	($h) = exchange(2, 9, { %{ $vals{2}->(9) }, topics => [{ name => $topic, partitions => [{ index => 0, current_leader_epoch => -1, timestamp => -5 }] }] });
	$p = $h && $h->{topics}[0]{partitions}[0];
	ok($p && $p->{error_code} == 0 && $p->{offset} == -1, 'ListOffsets v9 latest tiered (-5): -1, nothing is tiered');
}
{
	my ($h) = exchange(9, 8, $vals{9}->(8));
	my $g = $h && $h->{groups};
	ok($g && @$g == 2 && $g->[0]{group_id} eq 'vg' && $g->[0]{topics}[0]{partitions}[0]{committed_offset} == 1
		&& $g->[1]{group_id} eq 'vh' && $g->[1]{error_code} == 0 && @{ $g->[1]{topics} } == 0,
		'OffsetFetch v8: each group answered (vg offset 1, vh, which never committed, no offsets)');
}
{
	my ($h) = exchange(10, 4, $vals{10}->(4));
	ok($h && @{ $h->{coordinators} } == 2 && $h->{coordinators}[1]{key} eq 'vh', 'FindCoordinator v4 answers each key');
}

for my $v (0 .. 4) {
	my ($h, $e) = exchange(23, $v, $vals{23}->($v));
	my $p = $h && $h->{topics}[0]{partitions}[0];
	ok($p && $p->{error_code} == 0 && $p->{end_offset} >= 2 && ($v == 0 || $p->{leader_epoch} == 0),
		"OffsetForLeaderEpoch v$v: epoch 0, the only one, ends at the log end", $e // ($p ? "error $p->{error_code}" : 'no partition'));
}

for my $v (0 .. 4) {
	my ($h, $e) = exchange(26, $v, $vals{26}->($v));
	ok($h && $h->{error_code} == 49, "EndTxn v$v for a transactional id never initialized: INVALID_PRODUCER_ID_MAPPING (49)",
		$e // ($h ? "error $h->{error_code}" : ''));
}
{
	my ($h) = exchange(65, 0, $vals{65}->(0));
	ok($h && $h->{transaction_states}[0]{error_code} == 105,
		'DescribeTransactions of an unknown id: TRANSACTIONAL_ID_NOT_FOUND (105)');
	($h) = exchange(66, 1, $vals{66}->(1));
	ok($h && $h->{error_code} == 0 && "@{ $h->{unknown_state_filters} }" eq 'NoSuchState',
		'ListTransactions v1 answers the state filter it does not know');
}
{
	my ($h) = exchange(60, 1, $vals{60}->(1));
	ok($h && $h->{error_code} == 0 && $h->{cluster_id} eq 'mq' && $h->{controller_id} == 1
		&& @{ $h->{brokers} } == 1 && $h->{brokers}[0]{broker_id} == 1 && $h->{brokers}[0]{port} == $port,
		'DescribeCluster v1: cluster mq, this daemon the controller and the one broker, at its port');
	($h) = exchange(60, 1, { include_cluster_authorized_operations => 0, endpoint_type => 2 });
	ok($h && $h->{error_code} == 114 && !@{ $h->{brokers} },
		'DescribeCluster v1 of the controllers: MISMATCHED_ENDPOINT_TYPE (114), as a Kafka broker answers');
	for my $type (0, 3, -1) {
		($h) = exchange(60, 1, { include_cluster_authorized_operations => 0, endpoint_type => $type });
		ok($h && $h->{error_code} == 115 && ($h->{error_message} // '') eq "Unsupported endpoint type $type"
			&& $h->{cluster_id} eq '' && $h->{controller_id} == -1 && !@{ $h->{brokers} },
			"DescribeCluster v1 of endpoint type $type: UNSUPPORTED_ENDPOINT_TYPE (115), as Kafka 3.9",
			$h ? "error $h->{error_code}, cluster '$h->{cluster_id}'" : 'no answer');
	}
}
{
	# the partition's log start offset (v5+), once DeleteRecords moved it
	# (last: the topic's first record is gone for the checks above)
	my ($d) = exchange(21, 2, { topics => [{ name => $topic, partitions => [{ index => 0, offset => 1 }] }], timeout_ms => 5000 });
	ok($d && $d->{topics}[0]{partitions}[0]{error_code} == 0, 'DeleteRecords moves the log start of vt to 1');
	for my $v (5, 8, 11) {
		my ($h, $e) = exchange(0, $v, $vals{0}->($v));
		my $p = $h && $h->{responses}[0]{partitions}[0];
		ok($p && $p->{error_code} == 0 && $p->{log_start_offset} == 1, "Produce v$v answers the partition's log start offset, 1",
			$e // ($p ? "log start $p->{log_start_offset}" : 'no partition'));
	}
}
tap_done();
