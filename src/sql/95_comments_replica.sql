-------------------------------------------------------------------------------
-- Descriptions of the replication functions and tables, data node and
-- coordinator side: 95_comments.sql's rules, in a file of their own to
-- keep each within its size (test/static/sizes.sh).
-------------------------------------------------------------------------------

-- Replication, data node side (60_replica*.sql)
COMMENT ON TABLE mq.replica_partition IS
    'replication state of this node''s partitions: leader broker id and address, replicas and ISR';
COMMENT ON TABLE mq.leader_epoch_history IS
    'per partition: the offset each leader epoch started at (KIP-101''s leader epoch cache)';
COMMENT ON TABLE mq.replica_progress IS
    'on a leader: each follower''s log end offset and when it last caught up, for ISR decisions';
COMMENT ON TABLE mq.replica_broker IS
    'the mq-broker attached to this node (one row once one has attached)';
COMMENT ON TYPE mq.replica_batch IS
    'what a follower fetches from its leader: records with their producer fields, producer batches, epoch history, leader log end and high watermark';
COMMENT ON FUNCTION mq.replica_renew_lease(integer) IS
    'broker: the attached broker renews its lease every tick; a leader whose broker''s lease ran out refuses produce and reads (MQ020)';
COMMENT ON FUNCTION mq.replica_attach_broker(integer) IS
    'broker API: attaches the calling session as this node''s broker; refused (MQ026) while another broker is attached';
COMMENT ON FUNCTION mq.replica_become_leader(text, integer, integer, integer, integer[], integer[], text) IS
    'broker API: makes this node the leader of a partition in a new leader epoch; returns the log end offset';
COMMENT ON FUNCTION mq.replica_become_follower(text, integer, integer, integer, text, integer[]) IS
    'broker API: makes this node a follower of a partition in a leader epoch (the same epoch resigns a leadership); returns the log end offset';
COMMENT ON FUNCTION mq.replica_resign_all() IS
    'broker API: gives up every leadership on this node, keeping the epochs; returns how many were resigned';
COMMENT ON FUNCTION mq.replica_set_isr(text, integer, integer, integer[]) IS
    'broker API, on the leader: sets the local in-sync replica set; returns the high watermark';
COMMENT ON FUNCTION mq.replica_leader_state(text, integer, integer) IS
    'broker API, on the leader: each follower''s progress and lag, for ISR decisions';
COMMENT ON FUNCTION mq._replica_follower_rows(integer, integer, integer, bigint, bigint, bigint, integer[], integer[], integer, timestamptz) IS
    'internal (replication): a leader''s report of each follower, the rows of replica_leader_state and replica_leader_states';
COMMENT ON FUNCTION mq.replica_leader_states(text[], integer[], integer[]) IS 'broker API, on the leader: replica_leader_state for every quiet partition in one statement; the others flagged';
COMMENT ON FUNCTION mq.replica_fetch(text, integer, integer, integer, bigint, integer, integer, bigint) IS
    'broker API, on the leader: a follower''s fetch; records its progress, advances the high watermark, returns records (long polling)';
COMMENT ON FUNCTION mq.replica_append(text, integer, integer, mq.replica_batch) IS
    'broker API, on a follower: appends a fetched batch at the leader''s offsets; returns the new log end offset';
COMMENT ON FUNCTION mq.replica_truncate(text, integer, integer, bigint) IS
    'broker API, on a follower: removes records from an offset on (KIP-101 truncation); returns how many';
COMMENT ON FUNCTION mq.replica_epoch_end_offset(text, integer, integer, integer) IS
    'broker API, on the leader: where a leader epoch ends in its log (OffsetsForLeaderEpoch)';
COMMENT ON FUNCTION mq.replica_log_state(text, integer, integer) IS
    'broker API: this node''s replica of a partition: role, epochs, log end, high watermark, and where a requested epoch ends';
COMMENT ON FUNCTION mq._replica_attach_broker() IS
    'internal: takes the broker lock for the calling session (MQ026 when another broker holds it)';
COMMENT ON FUNCTION mq._replica_lock(integer, integer) IS
    'internal: the partition''s produce lock until commit, for the replica API';
COMMENT ON FUNCTION mq._replica_notify(integer, integer) IS
    'internal: wakes the partition''s waiters (long polls, acks=all) at commit';
COMMENT ON FUNCTION mq._replica_durable_log_end(integer, integer) IS
    'internal: the partition''s log end once every commit it counts is flushed on this node (the leader''s share of the high watermark)';
COMMENT ON FUNCTION mq._replica_wait_records(integer, integer, bigint, integer, bigint) IS
    'internal: the leader side of a follower''s long poll, waiting for records past an offset or an offset commit';
COMMENT ON FUNCTION mq.await_commit(integer) IS
    'waits until what the session''s last transaction wrote to replicated partitions (records, committed offsets) is on every in-sync replica; MQ020, MQ022 or MQ023 otherwise';
COMMENT ON FUNCTION mq._offsets_version(integer, integer) IS
    'internal: the version of a partition''s committed group offsets';
COMMENT ON FUNCTION mq._offsets_snapshot(integer, integer) IS
    'internal: all committed offsets of a partition with their version, for a follower''s fetch';
COMMENT ON FUNCTION mq._offsets_apply(integer, integer, mq.replica_batch) IS
    'internal: a follower takes the leader''s committed offsets and their version';
COMMENT ON FUNCTION mq._offsets_acked_version(integer, integer, integer) IS
    'internal: the committed-offsets version every in-sync replica applied in the epoch';
COMMENT ON TABLE mq.offset_version IS
    'per replicated partition: the version of its committed group offsets, bumped by each commit on the leader';
COMMENT ON FUNCTION mq._replica_await_hwm(text, integer, bigint, integer, integer, integer) IS
    'internal: 0.1.0''s acks=all wait, kept for 0.1.0''s mq-kafka during a rolling upgrade';
COMMENT ON FUNCTION mq._replica_append_records(text, integer, mq.replica_batch) IS
    'internal: appends a fetched batch''s records at the leader''s offsets';
COMMENT ON FUNCTION mq._replica_truncate_records(integer, integer, bigint) IS
    'internal: removes a partition''s records from an offset on';
COMMENT ON FUNCTION mq._replica_fence(integer, integer, integer, text) IS
    'internal: the leader epoch check of every replica API call (MQ024, MQ025, MQ020)';
COMMENT ON FUNCTION mq._replica_restart_log(integer, integer, bigint) IS
    'internal (replication): a follower whose whole log lies below the leader''s log start restarts it empty there';
COMMENT ON FUNCTION mq._replica_follow_log_start(integer, integer, bigint) IS
    'internal (replication): a follower moves its log start up to the leader''s, at most to its high watermark';
COMMENT ON FUNCTION mq._replica_isr_min(integer, integer, integer, mq.replica_partition, bigint) IS
    'internal (replication): the log end every ISR member holds in the epoch, capped by the leader''s';
COMMENT ON FUNCTION mq._replica_advance_hwm(integer, integer) IS
    'internal: moves the high watermark forward to the least log end offset over the ISR';
COMMENT ON FUNCTION mq._replica_set_info(integer, integer, integer, text, integer[], integer[]) IS
    'internal: records a partition''s leader, replicas and ISR on this node';
COMMENT ON FUNCTION mq._replica_fetch_below_start(integer, integer, bigint, bigint, bigint) IS
    'internal (replication): replica_fetch''s answer to a follower whose log lies below the leader''s log start';
COMMENT ON FUNCTION mq._replica_fetch_progress(integer, integer, integer, integer, bigint, bigint, bigint, bigint) IS
    'internal (replication): records a follower''s fetch (its log end, when it was caught up) for replica_fetch';
COMMENT ON FUNCTION mq._replica_fetch(text, integer, integer, integer, bigint, integer, integer, bigint, boolean) IS
    'internal (replication): the body of replica_fetch, and replica_fetch_many''s fetch of one partition';
COMMENT ON FUNCTION mq._replica_fetch_end(integer, integer, regclass, bigint, integer, bigint, bigint) IS
    'internal (replication): where replica_fetch''s batch ends (records counted across compaction''s gaps, never inside a producer batch)';
COMMENT ON FUNCTION mq._replica_fetch_records(mq.replica_batch, integer, integer, regclass, bigint, bigint) IS
    'internal (replication): fills replica_fetch''s batch with a range''s records and producer batches';
COMMENT ON FUNCTION mq._batch_length(integer, integer) IS
    'internal: the number of records in a producer batch of sequences first..last (sequences wrap after 2^31 - 1)';
COMMENT ON FUNCTION mq._replica_epoch_end(integer, integer, integer) IS
    'internal: the largest leader epoch up to the requested one in this node''s history, and where it ends';
COMMENT ON FUNCTION mq._replica_log_state(text, integer, integer) IS
    'internal: the body of mq.replica_log_state';
COMMENT ON TABLE mq.producer_id_block IS
    'the blocks of cluster-wide producer ids this node''s broker fetched from the coordinator, with the next id to issue of each';
COMMENT ON FUNCTION mq.replica_add_producer_ids(bigint, bigint) IS
    'broker API: adds a block of producer ids from mq_coord.allocate_producer_ids; returns the ids the node has left';
COMMENT ON FUNCTION mq.replica_producer_ids_left() IS
    'broker API: how many producer ids this node can still issue from its blocks';
COMMENT ON FUNCTION mq._cluster_producer_ids() IS
    'internal: whether this node issues producer ids from coordinator blocks (a broker has attached)';
COMMENT ON FUNCTION mq._next_producer_id() IS
    'internal: issues the next producer id of this node''s blocks (MQ027 when none is left)';
COMMENT ON VIEW mq.replica_status IS
    'routing: what this node knows of each partition''s role, leader, replicas, ISR, log end and high watermark';

-- Replication, coordinator (61_coordinator.sql)
COMMENT ON TABLE mq_coord.broker IS
    'registered brokers: id, how to reach their node, coordinator session and last heartbeat';
COMMENT ON TABLE mq_coord.topic IS
    'replicated topics: partition count and config';
COMMENT ON COLUMN mq_coord.topic.config IS
    'topic configuration with Kafka''s key names, as in mq.topic.config; see docs/sql.md#configuration';
COMMENT ON TABLE mq_coord.partition IS
    'per replicated partition: replicas (preferred leader first), leader, leader epoch, ISR and partition epoch';
COMMENT ON TABLE mq_coord.event IS
    'what happened in the cluster (registrations, elections, ISR changes), for people and tests';
COMMENT ON FUNCTION mq_coord.broker_lock_class() IS
    'the first key of the brokers'' liveness advisory locks';
COMMENT ON FUNCTION mq_coord.partition_lock_class() IS
    'the first key of the partitions'' leadership advisory locks';
COMMENT ON FUNCTION mq_coord._holds(integer, integer) IS
    'internal: whether this session holds advisory lock (class, id)';
COMMENT ON FUNCTION mq_coord.register_broker(integer, text, text) IS
    'broker API: registers a broker that holds its liveness lock, with its node''s connection info and name';
COMMENT ON FUNCTION mq_coord.heartbeat(integer) IS
    'broker API: records that the broker is alive';
COMMENT ON FUNCTION mq_coord.broker_alive(integer, integer) IS
    'whether a broker holds its liveness lock and heartbeat within the timeout';
COMMENT ON FUNCTION mq_coord.fence_broker(integer, integer, integer) IS
    'broker API: ends the coordinator session of a broker whose heartbeat is too old, so that its locks go; returns true when it did';
COMMENT ON FUNCTION mq_coord.create_topic(text, integer, jsonb) IS
    'creates a replicated topic, placing replication.factor replicas of each partition on the live brokers first, then on brokers that are down';
COMMENT ON FUNCTION mq_coord.elect(text, integer, integer, integer) IS
    'broker API: elects the candidate leader of a partition if eligible; returns the new leader epoch or null';
COMMENT ON FUNCTION mq_coord.alter_isr(text, integer, integer, integer, integer[]) IS
    'broker API: the leader changes the ISR if it still leads in its epoch; returns the new partition epoch or null';
COMMENT ON FUNCTION mq_coord.assignments(integer) IS
    'broker API: the partitions a broker holds a replica of, with leaders and their node addresses';
COMMENT ON TABLE mq_coord.producer_id_counter IS
    'the first producer id of the next block (one row): every block of producer ids is cut from it';
COMMENT ON TABLE mq_coord.producer_id_block IS
    'every block of producer ids handed out: to which broker, first and last id, when';
COMMENT ON FUNCTION mq_coord.allocate_producer_ids(integer, integer) IS
    'broker API: a new block of cluster-wide producer ids for a live broker, committed durably (KIP-730)';
COMMENT ON FUNCTION mq_coord._next_transactional_id() IS
    'internal: the next producer id for a transactional id, from the coordinator''s counter';
COMMENT ON FUNCTION mq_coord.init_producer(text) IS
    'cluster-wide transactional id: the same producer id with the next epoch on every call (Kafka''s InitProducerId), committed durably';
COMMENT ON FUNCTION mq_coord.grant_producer(regrole) IS
    'grant a role what it needs to call mq_coord.init_producer';
COMMENT ON TABLE mq_coord.transactional_producer IS
    'cluster-wide transactional ids: producer id and current epoch of each';
COMMENT ON VIEW mq_coord.metadata IS
    'routing for clients: each replicated partition''s leader, its node, epoch, ISR and replicas';

-- Deleting replicated topics (66_topic_delete.sql)
COMMENT ON COLUMN mq_coord.topic.incarnation IS
    'this topic''s incarnation: a random id given at creation, never given again; a node holding another has an older topic of the name';
COMMENT ON TABLE mq_coord.deleted_topic IS
    'tombstones of deleted replicated topics: name, incarnation and largest leader epoch, kept so that brokers down at the deletion drop their copy when back and a topic created again starts above the epochs old copies have';
COMMENT ON FUNCTION mq_coord.delete_topic(text) IS
    'deletes a replicated topic (its partitions, leaders, ISRs) in one transaction; every broker drops its node''s copy at its next tick';
COMMENT ON FUNCTION mq_coord.deleted_topics(text[], uuid[]) IS
    'broker API: of a node''s replicated topics and their incarnations, those deleted';
COMMENT ON TABLE mq.replica_topic IS
    'the coordinator''s incarnation each replicated topic of this node was placed with';
COMMENT ON FUNCTION mq.replica_topics() IS
    'broker API: this node''s replicated topics and the incarnation each was placed with (NULL: not recorded)';
COMMENT ON FUNCTION mq.replica_drop_topic(text, uuid) IS
    'broker API: drops this node''s copy of a deleted replicated topic in that incarnation, as mq.drop_topic; false when it holds none';
COMMENT ON FUNCTION mq._replica_add_partitions(text, integer) IS
    'internal: the broker grows its node''s copy of a replicated topic to the coordinator''s partition count';
COMMENT ON FUNCTION mq._replica_incarnation(text, uuid) IS
    'internal: records the incarnation a replicated topic is placed with, or drops a copy of another one';
