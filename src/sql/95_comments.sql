-------------------------------------------------------------------------------
-- Descriptions of every function, procedure, view, table and type of
-- schemas mq and mq_coord, so that \df+ mq.*, \dv+ and \dt+ explain
-- themselves.  They live here, apart from the definitions, so that edits
-- to the other files do not collide with them.  A function or view without
-- a comment fails test/pgtap/comments.sql: document new objects here
-- (replication's in 95_comments_replica.sql).
-- Public objects say what they do for a user; objects whose names start
-- with an underscore are internal and say who calls them.
-------------------------------------------------------------------------------

-- Catalog (01_catalog.sql)
COMMENT ON TABLE mq.topic IS
    'one row per topic: id, name, partition count, config and its partitioned log table in mq_log';
COMMENT ON COLUMN mq.topic.config IS
    'topic configuration with Kafka''s key names (retention.ms, segment.bytes, replication.factor, ...), normalised by mq.validate_config; see docs/sql.md#configuration';
COMMENT ON TABLE mq.partition_state IS
    'per partition: its log table, log start offset, and the replication role, leader epoch and high watermark (null when not replicated)';
COMMENT ON TABLE mq.segment IS
    'per segment: the table holding the offsets [base_offset, end_offset) of one partition';
COMMENT ON TABLE mq.last_segment_written IS
    'partitions whose last segment has been written to: the next maintenance pass makes each another segment ahead';
COMMENT ON TABLE mq.consumer_offset IS
    'committed offsets: per group, topic and partition, the offset of the next record to read';
COMMENT ON TABLE mq.poll_pending IS
    'per group partition: the batch a member''s last auto_commit poll returned, which its next poll commits in whichever session it runs';
COMMENT ON TABLE mq.producer IS
    'idempotent producers: id, current epoch and optional transactional id';
COMMENT ON TABLE mq.producer_state IS
    'per partition and producer: the epoch and the last five batches (sequences, base offset) for deduplicating retries';
COMMENT ON TYPE mq.record IS
    'one record as fetch and poll return it: topic, partition, offset, append time, key, value, headers (jsonb), Kafka timestamp and its type, headers as Kafka''s list';
COMMENT ON TYPE mq.header IS
    'one Kafka record header: a key (keys may repeat in a list) and a value (null differs from empty)';

-- Helpers (10_helpers.sql; validate_config and murmur2 are commented there)
COMMENT ON FUNCTION mq._config_shown(jsonb) IS
    'internal: a config value as error messages quote it, at most 40 characters';
COMMENT ON FUNCTION mq._config_text(text, jsonb, text) IS
    'internal: validate_config''s check of a Kafka topic config mq keeps without acting on it and that is no number';
COMMENT ON FUNCTION mq._config_ms(jsonb, text) IS
    'internal: a time limit of a topic config as mq computes with it: at most 1,000 years (Kafka''s no limit is the int8 maximum); NULL when not set';
COMMENT ON FUNCTION mq._config_key(text) IS
    'internal: a topic config key''s kind and range, for validate_config (an unknown key is an error)';
COMMENT ON FUNCTION mq._config_number(text, jsonb, text, numeric, numeric) IS
    'internal: a number-valued topic config value with its unit resolved and its range checked, for validate_config';
COMMENT ON FUNCTION mq.partition_for(text, bytea) IS
    'the partition a key goes to in a topic, by Kafka''s default partitioner (murmur2)';
COMMENT ON FUNCTION mq.partition_for(text, text) IS
    'the partition a text key (as UTF-8) goes to in a topic, by Kafka''s default partitioner';
COMMENT ON FUNCTION mq._refuse_log_change() IS
    'internal: trigger on log tables refusing UPDATE, DELETE and TRUNCATE (MQ009)';
COMMENT ON FUNCTION mq._invalidate(regclass) IS
    'internal: make every backend reload its cached structure of the topic stored in this table';
COMMENT ON FUNCTION mq._lock_partition(integer, integer) IS
    'internal: take the partition''s produce lock until the transaction ends';
COMMENT ON FUNCTION mq._try_lock_partition(integer, integer) IS
    'internal: take the partition''s produce lock until the transaction ends if nobody holds it; false otherwise';
COMMENT ON FUNCTION mq._log_end_offset(integer, integer) IS
    'internal: the log end offset of a partition (topic id, partition) as the caller''s snapshot sees it';

-- Administration (20_admin.sql)
COMMENT ON FUNCTION mq.create_topic(text, integer, jsonb) IS
    'creates a topic with 1 to 10000 partitions and a config; returns its topic id';
COMMENT ON FUNCTION mq.drop_topic(text) IS
    'drops a topic with its records, committed offsets and producer state; a topic replicated in a cluster is MQ039 (delete it on the coordinator)';
COMMENT ON FUNCTION mq.alter_topic(text, jsonb) IS
    'merges config keys into a topic''s config (a JSON null resets a key); returns the new config';
COMMENT ON FUNCTION mq.add_partitions(text, integer) IS
    'adds partitions to a topic (never removes any); returns the new partition count; a topic replicated in a cluster is MQ039 (add them on the coordinator)';
COMMENT ON FUNCTION mq._refuse_replicated_topic(integer, text, oid, text) IS
    'internal: raises MQ039 when a client drops or grows a node''s copy of a replicated topic';
COMMENT ON FUNCTION mq._check_topic_name(text) IS
    'internal: refuses a topic name outside Kafka''s rule (MQ003)';
COMMENT ON FUNCTION mq._topic_name_valid(text) IS
    'internal: whether a topic name follows Kafka''s rule (1 to 249 of [A-Za-z0-9._-], not . or ..)';
COMMENT ON FUNCTION mq._topic_collision_key(text) IS
    'internal: a topic name with . as _ (Kafka''s collision rule: two topics may not share it)';
COMMENT ON FUNCTION mq._kafka_topic_id(text) IS
    'internal: a topic''s Kafka id (KIP-516), the MD5 of its name in hex; indexed on mq.topic';
COMMENT ON FUNCTION mq._refuse_topic_collision(text, text) IS
    'internal: refuses a new topic whose name collides with an existing one''s (MQ003)';
COMMENT ON FUNCTION mq._protect_log_table(regclass) IS
    'internal: attaches the triggers that make a log table append-only';
COMMENT ON FUNCTION mq._create_segment(integer, integer, bigint, bigint) IS
    'internal: creates and attaches the segment table of a partition covering offsets [base, end)';
COMMENT ON FUNCTION mq._segment_span(integer, integer) IS
    'internal: how many offsets a new segment of the partition covers (segment.records, or segment.bytes over the record size seen)';
COMMENT ON FUNCTION mq._segment_ahead(integer, integer) IS
    'internal (maintenance): whether a whole empty segment lies beyond the partition''s log end';
COMMENT ON FUNCTION mq._segments_end(integer, integer) IS
    'internal: where the partition''s next segment starts (the last one''s end, or the log start when none is left)';
COMMENT ON FUNCTION mq._ensure_segments(integer, integer) IS
    'internal (maintenance): keeps one empty segment ahead of the one being written; returns the number created';
COMMENT ON FUNCTION mq._note_last_segment_written(integer, integer) IS
    'internal (produce path): notes that a record landed in the partition''s last segment, so that the next maintenance pass makes another one ahead';
COMMENT ON FUNCTION mq._ensure_segments_to(integer, integer, bigint, bigint) IS
    'internal (produce and replication paths): creates the segments from where the last one ends through a batch''s last offset (the 32nd covering the rest), and one ahead when one was needed; returns the number created';
COMMENT ON FUNCTION mq._segment_roll_ms(jsonb) IS
    'internal: how long a segment is written before time closes it (segment.ms, or max.compaction.lag.ms on a compacted topic)';
COMMENT ON FUNCTION mq._roll_segment_by_time(integer, integer) IS
    'internal (maintenance): closes the segment being written once its first record is older than segment.ms';
COMMENT ON FUNCTION mq._segment_to_roll(integer, integer, bigint) IS
    'internal (maintenance): the segment holding the log end, with the log end, when its first record is older than the given segment.ms (base_offset NULL otherwise)';
COMMENT ON FUNCTION mq._create_partition(integer, integer) IS
    'internal: creates a partition''s log table, its state row and its first segments';
COMMENT ON FUNCTION mq._topic_id(text) IS
    'internal: the id of a topic by name; MQ001 when it does not exist';

-- Produce (30_produce.sql, 31_produce_acks.sql)
COMMENT ON FUNCTION mq.send(text, bytea, bytea, jsonb, integer, bigint, integer, integer, timestamptz, mq.header[]) IS
    'appends one record (bytea key and value) to a topic; returns its partition and offset. Optional: headers, partition, and producer id, epoch and sequence for idempotence';
COMMENT ON FUNCTION mq.send(text, text, text, jsonb, integer, bigint, integer, integer, timestamptz, mq.header[]) IS
    'appends one record with a text key and value (stored as UTF-8); returns its partition and offset';
COMMENT ON FUNCTION mq.send(text, text, jsonb, jsonb, integer, bigint, integer, integer, timestamptz, mq.header[]) IS
    'appends one record with a text key and a jsonb value (stored as its text in UTF-8); returns its partition and offset';
COMMENT ON FUNCTION mq.send_batch(text, bytea[], bytea[], jsonb[], integer, bigint, integer, integer, timestamptz[], timestamptz, integer) IS
    'appends a batch of records (arrays of keys, values and optional headers) in one call; returns each record''s partition and offset';
COMMENT ON FUNCTION mq.send_batch(text, text[], text[], jsonb[], integer, bigint, integer, integer, timestamptz[], timestamptz) IS
    'appends a batch of records with text keys and values; returns each record''s partition and offset';
COMMENT ON FUNCTION mq.record_size(bytea, bytea, jsonb) IS
    'the size max.message.bytes limits: the Kafka record batch holding this record alone (61 bytes of header, key, value and headers with their lengths); see docs/sql.md#record-size';
COMMENT ON FUNCTION mq._check_records(text, bytea[], bytea[], jsonb[], integer, bigint, integer, integer, timestamptz[], timestamptz, integer) IS
    'internal: the checks mq.send_batch makes before it writes (rights, topic, partition, sizes, keys of compacted topics, timestamps), without writing';
COMMENT ON FUNCTION mq._rotate_producer(bigint) IS
    'internal: a transactional id past epoch 32766 gets a new producer id at epoch 0; the old id stays fenced at 32767';
COMMENT ON FUNCTION mq.init_producer(text) IS
    'registers an idempotent producer, or for a transactional id bumps its epoch and fences the older instance; returns producer id and epoch';
COMMENT ON FUNCTION mq._lock_producer(bigint) IS
    'internal: init_producer''s exclusive producer lock, waiting for sends of older epochs to end';
COMMENT ON FUNCTION mq._next_local_producer_id() IS
    'internal: the next producer id of the node''s own counter that no producer holds (batches register ids mq did not issue)';
COMMENT ON FUNCTION mq._try_lock_producer(bigint) IS
    'internal: maintenance''s exclusive producer lock, only if no send holds the producer; false otherwise';
COMMENT ON TYPE mq.produced IS
    'a record mq.produce_records wrote: partition, offset, and the wait acks=all owes (await_epoch and await_min_isr for mq.produce_await; NULL: none)';
COMMENT ON FUNCTION mq.produce_records(text, bytea[], bytea[], jsonb[], integer, bigint, integer, integer, timestamptz[], timestamptz, text, integer) IS
    'the write of the produce contract: checks acks and, for acks=all, the ISR (MQ021, nothing written), applies the durability floor, appends (a Kafka batch''s batch_bytes is what max.message.bytes limits); returns each record''s partition and offset and the wait acks=all owes';
COMMENT ON FUNCTION mq.produce_check(text, integer) IS
    'the produce contract''s check alone: MQ021 where acks=all would be refused for too few in-sync replicas; nothing written';
COMMENT ON FUNCTION mq.produce_await(text, integer, bigint, integer, integer, integer) IS
    'the acknowledgement of the produce contract, after the commit: waits until the in-sync replicas hold the records (MQ022 when the ISR shrank, MQ023 on timeout); NULL when nothing is owed';
COMMENT ON PROCEDURE mq.produce(text, text[], text[], integer, text, bigint, integer, integer, integer, bigint, bigint, jsonb[], timestamptz[], timestamptz) IS
    'mq.produce with text keys and values, sent as UTF-8';
COMMENT ON PROCEDURE mq.produce(text, bytea[], bytea[], integer, text, bigint, integer, integer, integer, bigint, bigint, jsonb[], timestamptz[], timestamptz) IS
    'produces a batch to one partition with Kafka''s acks (0, 1 or all) and commits; with acks=all waits for the in-sync replicas. Call outside a transaction block';

-- Consume (40_consume.sql; commit_polled is commented there)
COMMENT ON FUNCTION mq.kafka_fetch(text[], integer[], bigint[], integer[], integer[], integer) IS
    'Kafka''s Fetch: each partition''s records from an offset as Kafka record batches (v2, CRC-32C), read as mq.fetch reads them, within its max_bytes and the call''s response_max_bytes';
COMMENT ON FUNCTION mq._await_partitions(text[], integer[], bigint[], integer) IS 'internal: waits until the high watermark of one of the partitions (of topics the caller may read) is not the one seen, at most max_wait_ms, and returns them; NULL when no commit can wake it (no shared memory)';
COMMENT ON FUNCTION mq.fetch(text, integer, bigint, integer, integer, integer, bigint) IS
    'reads up to max_records records of one partition from an offset; with max_wait_ms waits for at least min_records (long polling)';
COMMENT ON FUNCTION mq.commit_offset(text, text, integer, bigint, text, bigint, integer, text, integer) IS
    'commits a group''s position (the next offset to read) in a partition; fenced by producer epoch or group generation when those are given';
COMMENT ON FUNCTION mq.committed_offset(text, text, integer) IS
    'the group''s committed position in a partition, or null when it has none';
COMMENT ON FUNCTION mq._committed_position(text, text, integer) IS
    'internal (mq-kafka''s OffsetFetch): the group''s committed position in a partition and its metadata, null when none';
COMMENT ON FUNCTION mq.offsets_for_times(text, integer, timestamptz) IS
    'the earliest offset of a partition whose record timestamp is at or after ts, or the log end offset (Kafka''s ListOffsets by timestamp)';
COMMENT ON FUNCTION mq.reset_offsets(text, text, timestamptz) IS
    'commits a group''s position in every partition of a topic at the first record at or after a time; returns the positions';
COMMENT ON FUNCTION mq.header_list(jsonb) IS
    'headers jsonb (an object, or an array of [key, value] pairs) as Kafka''s ordered header list';
COMMENT ON FUNCTION mq.headers_jsonb(mq.header[]) IS
    'Kafka''s header list as jsonb: an array of [key, value] pairs, a value being text, null or {"base64": ...}';
COMMENT ON FUNCTION mq.poll(text, text, integer, boolean, integer, integer, text, text, integer[]) IS
    'reads records for a consumer group from its positions, over the partitions it can claim (or, with member_id, owns); optionally auto-commits and long-polls';

-- Consumer groups (50_groups.sql, 51_group_members.sql)
COMMENT ON TABLE mq.consumer_group IS
    'consumer groups: current generation, assignor and rebalance counters';
COMMENT ON TABLE mq.group_member IS
    'members of consumer groups: subscribed topics (by name), optional static instance id, session timeout and last heartbeat';
COMMENT ON TABLE mq.group_assignment IS
    'per group and partition: the owning member, the target member while it moves, and whether it is being revoked';
COMMENT ON TABLE mq.fenced_member IS
    'member ids replaced by a newer member with the same instance id (their calls fail with MQ033)';
COMMENT ON FUNCTION mq.join_group(text, text[], text, text, text, integer) IS
    'joins (or rejoins) a consumer group subscribing to topics, with an assignor (range, roundrobin, cooperative-sticky); returns the member id and generation';
COMMENT ON FUNCTION mq.heartbeat(text, text, integer) IS
    'keeps a group member alive and returns its assignment (partitions owned, or being revoked) in the current generation; a generation_id other than the group''s is refused (MQ030)';
COMMENT ON FUNCTION mq.leave_group(text, text) IS
    'removes a member from its group, which rebalances';
COMMENT ON FUNCTION mq.config_defaults() IS
    'the value of each topic config key while a topic does not set it (what mq does then); DescribeConfigs lists them as defaults';
COMMENT ON FUNCTION mq._config_replace(jsonb, text[], text[]) IS
    'internal: the mq.alter_topic change that makes the given keys a topic''s whole config (Kafka''s AlterConfigs); replication.factor is kept';
COMMENT ON FUNCTION mq._config_incremental(jsonb, text[], integer[], text[]) IS
    'internal: the mq.alter_topic change of Kafka''s IncrementalAlterConfigs operations (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT; the last two for cleanup.policy only, MQ010 otherwise)';
COMMENT ON FUNCTION mq.move_partition(text, integer, name) IS
    'moves a partition''s segments, and those made later, to a tablespace (Kafka''s AlterReplicaLogDirs); needs alter on the topic and CREATE on the tablespace; returns the segments moved';
COMMENT ON FUNCTION mq_internal.move_partition(text, integer, name, oid) IS
    'internal: mq.move_partition as the owner, with the caller''s role last';
COMMENT ON FUNCTION mq.delete_records(text, integer, bigint) IS
    'moves a partition''s log start offset up to before_offset (-1: the high watermark), as Kafka''s DeleteRecords: records below are no longer readable; needs DELETE on the topic; MQ007 beyond the high watermark, MQ020 on a follower; returns the new log start';
COMMENT ON FUNCTION mq._delete_records_lock(text, integer, integer) IS
    'internal: locks a partition for mq.delete_records and returns its state; MQ006 unknown partition, MQ020 when this node does not lead it';
COMMENT ON FUNCTION mq._drop_segment(integer, integer, bigint) IS
    'internal: drops one segment of a partition (its row and table), for mq.delete_records and replica truncation';
COMMENT ON FUNCTION mq._try_drop_segment(integer, integer, bigint) IS
    'internal (retention): drops one segment if its table and the partition''s are not locked by anyone now (pg_dump); false otherwise, nothing changed';
COMMENT ON FUNCTION mq.delete_group(text) IS
    'deletes a consumer group: its committed offsets and group state (Kafka''s DeleteGroups); needs DELETE on the group; MQ035 unknown group, MQ036 group with live members; returns the number of offsets deleted';
COMMENT ON FUNCTION mq.delete_offsets(text, text, integer[]) IS
    'deletes a consumer group''s committed offsets of one topic, on the given partitions or all (Kafka''s OffsetDelete); needs DELETE on the group and READ on the topic; MQ035 unknown group, MQ037 live members subscribed to the topic; returns the number of offsets deleted';
COMMENT ON FUNCTION mq._delete_offsets_check(text, text, integer, integer[]) IS
    'internal: raises MQ006, MQ035, MQ037 or MQ020 before mq.delete_offsets';
COMMENT ON FUNCTION mq._group_topic_offsets(text, integer, integer[]) IS
    'internal: a group''s committed offsets of one topic (or all), on some partitions or all';
COMMENT ON FUNCTION mq._delete_offsets_of(text, integer, integer[]) IS
    'internal: deletes a group''s offsets of a topic (or all) once checked, with tombstones, version bumps for followers and retention losses';
COMMENT ON FUNCTION mq._delete_group_check(text) IS
    'internal: raises MQ036 (live members), MQ035 (unknown group) or MQ020 (offsets on a partition this node follows) before mq.delete_group';
COMMENT ON FUNCTION mq._assign(text) IS
    'internal: the target assignment of a group''s current members by its assignor';
COMMENT ON FUNCTION mq._assign_roundrobin(text) IS
    'internal: the roundrobin assignment, as Kafka''s RoundRobinAssignor deals it';
COMMENT ON FUNCTION mq._members_ordered(text) IS
    'internal: a group''s members in Kafka''s assignor order (static members by instance id, then member ids)';
COMMENT ON FUNCTION mq._group_partitions(text) IS
    'internal: the partitions of the topics a group subscribes to, in the assignors'' order (topic name, partition)';
COMMENT ON FUNCTION mq._metadata_changed(text) IS
    'internal: whether a group''s subscribed topics gained partitions since its last rebalance';
COMMENT ON FUNCTION mq._refresh_metadata(text) IS
    'internal (group calls, maintenance): rebalances the groups whose subscribed topics gained partitions; returns how many';
COMMENT ON FUNCTION mq._assign_sticky(text) IS
    'internal: the target assignment by cooperative-sticky, keeping owners where the balance allows';
COMMENT ON FUNCTION mq._rebalance(text) IS
    'internal: starts a new generation of a group with a new assignment';
COMMENT ON FUNCTION mq._expire_members(text) IS
    'internal (maintenance): removes members whose session timed out and rebalances their groups; returns how many';
COMMENT ON FUNCTION mq._check_join_args(text[], text, text, integer) IS
    'internal (groups): checks a join''s topics, instance id, assignor and session timeout';
COMMENT ON FUNCTION mq._rejoining_member(text, text, text) IS
    'internal (groups): a known member joining again, refused when it names another instance id than it joined with';
COMMENT ON FUNCTION mq._check_member(text, text) IS
    'internal: raises the right error (MQ031, MQ033) for a member id that is not in the group';
COMMENT ON FUNCTION mq._member_partitions(text, integer, text) IS
    'internal: the partitions of a topic a group member owns (for mq.poll with member_id)';
COMMENT ON FUNCTION mq._check_member_commit(text, integer, integer, text, integer) IS
    'internal: refuses a member''s offset commit from a stale generation (MQ030) or for a partition it does not own (MQ034)';
COMMENT ON FUNCTION mq._check_group(text, boolean) IS
    'internal: a group id''s rules (named, at most 255 bytes), MQ010 otherwise; for a read, false for a longer id';
COMMENT ON FUNCTION mq._check_offset_metadata(text) IS
    'internal: refuses an offset commit''s metadata over 4096 bytes (MQ038), Kafka''s offset.metadata.max.bytes';
COMMENT ON VIEW mq.groups IS
    'every consumer group: SQL groups and groups with committed offsets, with state (Empty, Rebalancing, Stable), live members, generation and assignor';
COMMENT ON VIEW mq.group_members IS
    'members of every consumer group, SQL''s and Kafka''s (as mq-kafka last saved them), with generation, assignor, topics, session, number of partitions owned, whether its session is live, client id and host';
COMMENT ON VIEW mq.group_assignments IS
    'every group''s partitions with owner, target and state (owned, revoking, unassigned); a Kafka group''s as its live members were last assigned';
COMMENT ON VIEW mq.kafka_group_member IS
    'internal: the Kafka members mq-kafka saved (mq.kafka_group_state), live for their session timeout after its last save or touch';
COMMENT ON FUNCTION mq._kafka_group_members(bytea) IS
    'internal, pure: the members of a Kafka GroupMetadataValue with subscribed topics and assigned partitions';

-- Retention and lag (70_retention.sql, 75_lag.sql)
COMMENT ON TABLE mq.retention_loss IS
    'records retention removed before a group consumed them, per group and partition';
COMMENT ON FUNCTION mq.apply_retention(text) IS
    'applies retention.ms and retention.bytes to every topic (or one), dropping whole segments; returns how many were dropped';
COMMENT ON FUNCTION mq._segment_table(regclass) IS
    'internal: a segment''s table as a qualified name, NULL once another transaction dropped it';
COMMENT ON FUNCTION mq._segment_last_time(regclass) IS
    'internal: a segment''s age for retention: its largest record timestamp, or its last modification once compaction emptied it';
COMMENT ON FUNCTION mq._segment_records_from(regclass, bigint) IS
    'internal: the records a segment still holds from an offset on (what a lagging group loses with it)';
COMMENT ON TABLE mq.lag_sample IS
    'samples of end and committed offsets per group and partition over the last hour, for lag trends';
COMMENT ON FUNCTION mq.sample_lag(interval) IS
    'samples every group''s end and committed offsets, unless sampled within min_interval; returns the number of rows sampled';
COMMENT ON FUNCTION mq._offset_time(integer, integer, bigint) IS
    'internal: the time a record was appended (null outside the log)';
COMMENT ON FUNCTION mq._retention_headroom(integer, integer, bigint) IS
    'internal: the shortest time in which retention.ms can delete the segment holding an offset, never negative (null without time retention)';
COMMENT ON VIEW mq.consumer_lag IS
    'per group and partition: committed offset, lag, age of the oldest unconsumed record, retention headroom, records lost and trend';
COMMENT ON VIEW mq.partition_stats IS
    'per partition: offsets, records, segments, bytes, oldest and newest record times, leader epoch and role';

-- Views (80_views.sql) and maintenance (85_maintenance.sql)
COMMENT ON VIEW mq.topics IS
    'topics with id, partition count, config and creation time';
COMMENT ON VIEW mq.partitions IS
    'partitions with log start, log end, high watermark, leader epoch, role and log table';
COMMENT ON VIEW mq.leader_epochs IS
    'each partition''s leader epochs and their start offsets (KIP-101), for the topics the caller may describe';
COMMENT ON VIEW mq.segments IS
    'segments with offset range, table, creation time and size';
COMMENT ON VIEW mq.producers IS
    'each partition''s producers (id, epoch, last sequence, last batch time), for the topics the caller may read';
COMMENT ON FUNCTION mq._retain_topic(integer, jsonb) IS
    'internal (maintenance): applies retention to one topic''s partitions, found by topic id; returns segments dropped';
COMMENT ON FUNCTION mq._maintain_topic(integer, text) IS
    'internal (maintenance): one topic''s share: applies retention, compacts; returns segments dropped';
COMMENT ON FUNCTION mq._maintain_segments(integer, integer) IS
    'internal (maintenance): last in a batch, under the produce lock taken without waiting: rolls one partition''s segment by time and keeps one ahead; returns segments created';
COMMENT ON FUNCTION mq._maintain_batch(integer, integer) IS
    'internal (maintenance): retention, compaction and segments of the next topics by id; returns the last topic handled (NULL: none left) and segments created';
COMMENT ON FUNCTION mq._maintain_rest() IS
    'internal (maintenance): after a pass''s batches: grants of dropped roles, group members, group metadata, lag samples, producer ids';
COMMENT ON FUNCTION mq.run_maintenance() IS
    'applies retention and compaction, rolls segments by time and creates segments ahead, topic by topic, then expires group members and producer ids and samples lag; returns segments created. Run by the background worker (a transaction per batch of topics), or by any scheduler (one transaction)';

-- Authorization (90_acl.sql; src/acl.c, src/owner.c)
COMMENT ON TABLE mq.acl IS
    'grants of Kafka-style rights: operation (read, write, describe, create, alter, delete, all) on a topic, group or the cluster, by literal name, * or prefix, allowed or denied to a role or PUBLIC';
COMMENT ON COLUMN mq.topic.owner IS
    'the role that created the topic: it has every right on it and may grant them';
COMMENT ON FUNCTION mq.grant(text, text, text, text, text, text) IS
    'grants operations (''read, describe'') on a topic, group or the cluster to a role or PUBLIC; a name ending in * is a prefix; permission => ''deny'' refuses; returns the number of grants added';
COMMENT ON FUNCTION mq.revoke(text, text, text, text, text, text) IS
    'takes back grants made by mq.grant (''all'' takes back every operation); returns the number removed';
COMMENT ON FUNCTION mq.has_topic_privilege(name, text, text) IS
    'whether the role may do the operation on the topic, as mq''s checks decide';
COMMENT ON FUNCTION mq.has_topic_privilege(text, text) IS
    'whether the current role may do the operation on the topic';
COMMENT ON FUNCTION mq.has_group_privilege(name, text, text) IS
    'whether the role may do the operation on the consumer group';
COMMENT ON FUNCTION mq.has_group_privilege(text, text) IS
    'whether the current role may do the operation on the consumer group';
COMMENT ON VIEW mq.grants IS
    'the grants that apply to the current role (directly, by membership or PUBLIC); every grant for roles with describe on the cluster';
COMMENT ON VIEW mq.effective_grants IS
    'each role with each grant it has and through which grantee (itself, a role it inherits, or PUBLIC)';
COMMENT ON FUNCTION mq._has_privilege(oid, text, text, text) IS
    'internal: the authorization decision for a role, resource and operation (src/acl.c); used by has_*_privilege and the views';
COMMENT ON FUNCTION mq._authorize(oid, text, text, text) IS
    'internal: raises 42501 unless the role may do the operation; called by the implementations in mq_internal with the caller''s role';
COMMENT ON FUNCTION mq._grant_shown(text, text, text) IS
    'may a role that is not an administrator see this grant (not one naming what it may not describe)';
COMMENT ON FUNCTION mq._describable(text, text) IS
    'internal: whether the current role may describe the topic or group; the views show only such rows';
COMMENT ON FUNCTION mq._cascade_delete() IS
    'internal: statement trigger deleting a catalog row''s children, as ON DELETE CASCADE (catalog tables have no foreign keys between them, for pg_restore -j)';
COMMENT ON FUNCTION mq._acl_changed() IS
    'internal: statement trigger on mq.acl and mq.topic that drops every backend''s rights cache';
COMMENT ON FUNCTION mq._acl_rows(text, text, text, text, text, text) IS
    'internal: the mq.acl rows one grant or revoke call names (operation list, prefix, PUBLIC resolved)';
COMMENT ON FUNCTION mq._authorize_grant(oid, text, text, text) IS
    'internal: raises 42501 unless the role may grant on the resource (alter on the cluster, or the topic''s owner)';
COMMENT ON FUNCTION mq._produce_answer(text, integer, bigint) IS
    'internal (mq-kafka): {a record''s append time in Unix ms on a LogAppendTime topic (null otherwise), the partition''s log start offset}: Produce''s log_append_time and log_start_offset';
COMMENT ON FUNCTION mq_internal._produce_answer(text, integer, bigint, oid) IS
    'implementation of mq._produce_answer, run as the owner with the caller''s role to authorize';
COMMENT ON FUNCTION mq._produce_outside_block() IS
    'internal: MQ052 inside a transaction block, where the procedure mq.produce cannot commit before its wait';
COMMENT ON FUNCTION mq._produce_state(text, integer) IS
    'internal: leader epoch, role, min.insync.replicas and ISR size of a partition, for the produce contract (producers of the topic only)';

-- one address for clients and cluster consumer groups (65_cluster_groups.sql)
COMMENT ON FUNCTION mq_coord.route(text) IS
    'routing for clients: each partition''s leader, leader epoch and the address of its node';
COMMENT ON TABLE mq_coord.cluster_group IS
    'consumer groups that span the cluster: generation and the partition counts of the last rebalance';
COMMENT ON TABLE mq_coord.cluster_group_member IS
    'members of cluster consumer groups: subscribed topics, session timeout, last heartbeat';
COMMENT ON TABLE mq_coord.cluster_group_assignment IS
    'which member of a cluster consumer group reads which partition, per generation (range assignor)';
COMMENT ON FUNCTION mq_coord._cluster_group_partitions(text) IS
    'internal: the partition counts of the topics a cluster group subscribes to';
COMMENT ON FUNCTION mq_coord._cluster_group_rebalance(text) IS
    'internal: a new generation of a cluster group with a range assignment';
COMMENT ON FUNCTION mq_coord._join_cluster_group(text, text[], text, integer) IS
    'internal: the body of mq_coord.join_cluster_group';
COMMENT ON FUNCTION mq_coord._cluster_group_heartbeat(text, text) IS
    'internal: the body of mq_coord.cluster_group_heartbeat';
COMMENT ON FUNCTION mq_coord._cluster_group_lock(text) IS
    'internal: lock a cluster group, drop expired members, rebalance when needed';
COMMENT ON FUNCTION mq_coord._cluster_group_mine(text, text) IS
    'internal: a member''s partitions in the group''s current generation';
COMMENT ON FUNCTION mq_coord.join_cluster_group(text, text[], text, integer) IS
    'join a cluster consumer group: member id, generation and the member''s partitions';
COMMENT ON FUNCTION mq_coord.cluster_group_heartbeat(text, text) IS
    'a cluster group member''s heartbeat: the generation and its partitions now (MQ031 when expired)';
COMMENT ON FUNCTION mq_coord.leave_cluster_group(text, text) IS
    'leave a cluster consumer group (its partitions go to the others)';
COMMENT ON FUNCTION mq_coord.cluster_group_members(text) IS
    'members of a cluster consumer group, whether active, and what each is assigned';
COMMENT ON FUNCTION mq_coord.grant_client(regrole) IS
    'grant a role what mqctl needs on the coordinator: routing and cluster consumer groups';

-- Placement and reassignment (66_placement.sql)
COMMENT ON FUNCTION mq_coord._placement_order(boolean) IS
    'internal: registered (or only the live) brokers in placement order, alternating between racks';
COMMENT ON FUNCTION mq_coord._place_partitions(text, integer, integer, integer) IS
    'internal: places new partitions of a replicated topic on the live brokers first (round robin with a shifting start, the leader live), then on brokers that are down; MQ046 above the registered brokers or with none live';
COMMENT ON FUNCTION mq_coord._check_broker(integer) IS
    'internal: raises MQ042 unless the broker is registered';
COMMENT ON FUNCTION mq_coord.set_broker_rack(integer, text) IS
    'sets the rack of a registered broker; placements made afterwards spread replicas over racks';
COMMENT ON FUNCTION mq_coord.register_rack(integer, text) IS
    'broker API: a live broker records the rack of its configuration';
COMMENT ON FUNCTION mq_coord.remove_broker(integer) IS
    'removes a stopped broker that holds no replicas (MQ043 otherwise)';
COMMENT ON FUNCTION mq_coord.add_partitions(text, integer) IS
    'adds partitions to a replicated topic, placed like create_topic; returns the new partition count';
COMMENT ON FUNCTION mq_coord.propose_reassignment(text[], integer[]) IS
    'a placement of the topics'' partitions on the given brokers (replication factor kept); changes nothing';
COMMENT ON FUNCTION mq_coord.reassign(text, integer, integer[], bigint) IS
    'starts moving a partition to a replica set under a throttle in bytes/s (per broker, shared by the copies it serves or receives); returns the replicas while moving';
COMMENT ON FUNCTION mq_coord.elect_preferred(text, integer, integer) IS
    'ask for a partition''s preferred replica to lead it within timeout_ms (Kafka''s ElectLeaders): requested, not_needed, not_available or unknown';
COMMENT ON FUNCTION mq_coord.complete_reassignment(text, integer, integer, integer) IS
    'broker API: the leader ends a move once the whole target is in the ISR; returns the new ISR or NULL';
COMMENT ON FUNCTION mq_coord.moving(integer) IS
    'broker API: the broker''s partitions that are moving, and the throttled moves sharing a leader with its throttled copies: target, throttle, leader, replicas, ISR';
COMMENT ON VIEW mq_coord.reassignments IS
    'partitions moving to another replica set: target, ISR, the target replicas still catching up, throttle';
COMMENT ON FUNCTION mq._replica_mark(integer, integer, boolean) IS
    'internal: makes a partition a follower on this node, hosted or not (under the produce lock)';
COMMENT ON FUNCTION mq.replica_adopt_partitions(text, integer[]) IS
    'broker API: partitions replication has not touched become followers, hosted or not; returns how many are not hosted';
COMMENT ON FUNCTION mq.replica_place_topic(text, integer, jsonb, integer[], uuid) IS
    'broker API: creates or grows a replicated topic on this node (afresh when the node holds another incarnation), brings its config to the coordinator''s, and adopts its partitions, in one transaction';
COMMENT ON FUNCTION mq.replica_unhost(text, integer) IS
    'broker API: this node no longer holds a replica of the partition (it moved away); produce and reads raise MQ020';
COMMENT ON FUNCTION mq.replica_set_replicas(text, integer, integer, integer[], integer[]) IS
    'broker API, on the leader: the replica set (and, after a completed move, the ISR) changed';
COMMENT ON FUNCTION mq.txn_finish(text, boolean) IS
    'commit (true) or roll back an mq: prepared transaction, as a statement of its own; false when it is not prepared (docs/delivery.md)';
COMMENT ON FUNCTION mq.txn_notes() IS
    'what this transaction wrote to replicated partitions so far (topic, partition, epoch, records end, offsets version), for a two-phase commit decision';
COMMENT ON FUNCTION mq.txn_in_doubt() IS
    'this database''s mq: prepared transactions and their age, for mq-broker''s recovery';
COMMENT ON FUNCTION mq.txn_output_replicated(text, integer, integer, bigint) IS
    'whether this node leads the partition in the epoch with its high watermark at least the end';
COMMENT ON FUNCTION mq.grant_pipeline(regrole) IS
    'grant a role what an exactly-once pipeline client needs on a data node (mq.txn_finish, mq.txn_notes)';
COMMENT ON TABLE mq_coord.txn IS
    'two-phase commit decisions of exactly-once pipeline steps: commit, outputs_durable, done or abort, with the participants';
COMMENT ON FUNCTION mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[]) IS
    'record the commit decision of a prepared step, with its output records (MQ051 when recovery aborted it first)';
COMMENT ON TABLE mq_coord.txn_output IS
    'the records of each output partition of a decided step, until every output is durable: recovery sends them again when the client is gone';
COMMENT ON FUNCTION mq_coord._txn_check_outputs(text, jsonb, jsonb, bytea[], bytea[], jsonb[], timestamptz[]) IS
    'internal: raises MQ055 unless the output records fit the decision''s output participants';
COMMENT ON FUNCTION mq_coord._txn_store_outputs(text, jsonb, bytea[], bytea[], jsonb[], timestamptz[]) IS
    'internal: stores a decision''s output records, one row per output partition';
COMMENT ON FUNCTION mq_coord.txn_outputs_moved(integer) IS
    'mq-broker recovery: decided outputs whose partition this broker now leads and whose first leader lost it, with their records';
COMMENT ON FUNCTION mq_coord.txn_output_redone(text, text, integer, integer, integer) IS
    'mq-broker recovery: an output partition sent again is on its new leader''s ISR; the part is durable once all its partitions are';
COMMENT ON FUNCTION mq_coord.txn_part_committed(text, integer) IS
    'mq-broker recovery: a broker committed a prepared part; the offsets part of a step whose outputs are durable makes it done, on the input''s leader';
COMMENT ON FUNCTION mq_coord._txn_offsets_moved(jsonb, integer) IS
    'internal: whether an offsets participant''s input partition has another leader or epoch than the part''s';
COMMENT ON FUNCTION mq_coord.txn_offsets_pending(integer) IS
    'mq-broker recovery: offsets parts of a broker''s node whose steps have durable outputs, to report those committed';
COMMENT ON FUNCTION mq_coord.txn_offsets_moved(integer) IS
    'mq-broker recovery: offsets of steps whose outputs are durable that this broker, the input''s new leader, commits again';
COMMENT ON FUNCTION mq_coord.txn_offsets_redone(text, text, text, integer, integer, integer) IS
    'mq-broker recovery: the input''s leader has the step''s offset on its ISR: the step is done';
COMMENT ON FUNCTION mq._txn_check_leads(text, integer, integer) IS
    'internal (recovery): MQ020 unless this node leads the partition in the epoch';
COMMENT ON FUNCTION mq.txn_redo_offset(text, text, integer, integer, bigint) IS
    'mq-broker recovery: commit a decided step''s offset again on the input''s leader, forward only; true once on the ISR';
COMMENT ON FUNCTION mq.txn_redo_output(text, integer, integer, bigint, integer, integer, bytea[], bytea[], jsonb[], timestamptz[]) IS
    'mq-broker recovery: send a decided step''s records of an output partition again on its leader, idempotently; the records'' end';
COMMENT ON FUNCTION mq_coord.txn_abort(text, text) IS
    'abort a step unless it was decided; returns the state that holds';
COMMENT ON FUNCTION mq_coord.txn_state(text) IS
    'the decision state of a step (NULL: none)';
COMMENT ON FUNCTION mq_coord.txn_output_durable(text, text, integer) IS
    'an output participant is on its ISR; outputs_durable once all are';
COMMENT ON FUNCTION mq_coord.txn_done(text) IS
    'the step''s offsets are on their ISR too: complete';
COMMENT ON FUNCTION mq_coord.txn_resolve(text, integer, bigint, integer) IS
    'mq-broker recovery: commit, rollback or wait for one mq: prepared transaction of its node';
COMMENT ON FUNCTION mq_coord.txn_any_open() IS
    'broker: whether any exactly-once step is decided and not complete (recovery looks further only then)';
COMMENT ON FUNCTION mq_coord.txn_outputs_pending(integer) IS
    'decided output participants of a broker not yet known durable';
COMMENT ON FUNCTION mq_coord.grant_pipeline(regrole) IS
    'grant a role what an exactly-once pipeline client needs on the coordinator';
COMMENT ON FUNCTION mq_coord._txn_durably() IS
    'internal: this transaction commits with synchronous_commit on (a decision must survive a coordinator crash)';
COMMENT ON FUNCTION mq_coord._txn_check_participants(text, jsonb) IS
    'internal: raises MQ054 unless the participants are objects with a gid of the transaction and a kind';

-- client quotas of Kafka clients (93_client_quotas.sql)
COMMENT ON TABLE mq.client_quota IS
    'Kafka client quotas mq-kafka enforces: per entity (a user, a client id, both, or their defaults) and key: producer_byte_rate or consumer_byte_rate (bytes a second), request_percentage (percent of one thread); readable by the owner only';
COMMENT ON FUNCTION mq.set_client_quota(text, double precision, text, text, boolean, boolean) IS
    'set a client quota of an entity (user_name or default_user, and/or client_id or default_client); quota_value NULL removes it; alter on the cluster';
COMMENT ON FUNCTION mq_internal.set_client_quota(text, double precision, text, text, boolean, boolean, oid) IS
    'implementation of mq.set_client_quota, run as the owner with the caller''s role to authorize';
COMMENT ON FUNCTION mq.list_client_quotas() IS
    'every client quota, to describe on the cluster (Kafka''s DescribeClientQuotas)';
COMMENT ON FUNCTION mq_internal.list_client_quotas(oid) IS
    'implementation of mq.list_client_quotas, run as the owner with the caller''s role to authorize';
COMMENT ON FUNCTION mq.client_quota_lookup() IS
    'internal (mq-kafka): every client quota, to enforce them; grant EXECUTE to the role mq-kafka connects as';
COMMENT ON FUNCTION mq._client_quota_check(text, boolean, text, boolean, text, double precision) IS
    'internal: a client quota''s entity, key and value checked (MQ063)';

-- SCRAM credentials for Kafka clients (91_scram.sql)
COMMENT ON TABLE mq.scram_credential IS
    'SCRAM verifiers of Kafka users (mq-kafka --sasl=scram-sha-*): per user and mechanism the salt, iterations, StoredKey and ServerKey, never the password; readable by the owner only';
COMMENT ON TABLE mq.scram_secret IS
    'one random 32-byte key, made at install, from which mq.scram_lookup derives the fake salts of unknown users';
COMMENT ON VIEW mq.scram_credentials IS
    'SCRAM credentials without salts or keys: every user''s with describe on the cluster, else the current role''s own';
COMMENT ON FUNCTION mq.set_scram_credential(text, text, text, integer) IS
    'set or replace a Kafka user''s SCRAM credential (SCRAM-SHA-256 or SCRAM-SHA-512) from a password, 4096 to 16384 iterations; administrators, or the user itself';
COMMENT ON FUNCTION mq.set_scram_credential_salted(text, text, integer, bytea, bytea) IS
    'set or replace a SCRAM credential from a SaltedPassword and its salt, as Kafka''s AlterUserScramCredentials sends them';
COMMENT ON FUNCTION mq.drop_scram_credential(text, text) IS
    'drop a Kafka user''s SCRAM credential for a mechanism (NULL: both); MQ062 if there is none; returns how many went';
COMMENT ON FUNCTION mq.list_scram_credentials() IS
    'internal: the rows of mq.scram_credentials, run as the owner with the caller''s rights checked';
COMMENT ON FUNCTION mq.scram_lookup(text, text) IS
    'mq-kafka''s read of one user''s SCRAM verifier (a fake one for unknown users); grant EXECUTE to the daemon''s role only';
COMMENT ON FUNCTION mq._scram_keys(text, bytea, bytea, integer, boolean) IS
    'internal: StoredKey and ServerKey from a password (or SaltedPassword), salt and iterations (src/scram.c)';
COMMENT ON FUNCTION mq._scram_random(integer) IS
    'internal: n bytes of pg_strong_random, for salts and the fake-salt secret';
COMMENT ON FUNCTION mq._authorize_scram(oid, text) IS
    'internal: refuses (42501) unless the caller is an administrator (alter on the cluster) or the user itself';
COMMENT ON FUNCTION mq._scram_mechanism(text) IS
    'internal: the canonical SCRAM mechanism name, or MQ061';
COMMENT ON FUNCTION mq._scram_check(oid, text, text, integer, bytea) IS
    'internal: the caller''s right and the parameters every way of setting a SCRAM credential checks; the mechanism''s canonical name';
COMMENT ON FUNCTION mq._scram_store_secret(text, text, integer, bytea, bytea, boolean) IS
    'internal: stores the SCRAM verifier of a password or of Kafka''s SaltedPassword, once the other parameters are checked';
COMMENT ON FUNCTION mq._scram_store(text, text, integer, bytea, bytea, bytea) IS
    'internal: stores one checked SCRAM verifier, replacing the user''s for that mechanism';
COMMENT ON FUNCTION mq.set_scram_keys(text, text, integer, bytea, bytea, bytea) IS
    'sets (or replaces) a user''s SCRAM credential from the verifier the client computed (salt, iterations, StoredKey, ServerKey): the password never reaches the server';
COMMENT ON FUNCTION mq.ensure_consumer_offsets(integer) IS
    'creates the __consumer_offsets topic (offset commits in Kafka''s format) with the committed offsets known now, unless it exists (on a node with an attached broker, grows it to what is asked and its broker''s two); returns its partition count';
COMMENT ON FUNCTION mq._consumer_offsets_append(text, text, integer, bigint, text, bytea, timestamptz) IS
    'internal: appends a commit (next_offset NULL: a tombstone) or, with topic NULL, a group''s metadata to __consumer_offsets, if it exists';
COMMENT ON FUNCTION mq._consumer_offsets_flush() IS
    'internal: appends the transaction''s queued __consumer_offsets records now instead of at its commit (tests); returns how many';
COMMENT ON FUNCTION mq._refuse_internal_topic(text) IS
    'internal: raises MQ070 for __consumer_offsets, which only offset commits write';
