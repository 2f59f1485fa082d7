-------------------------------------------------------------------------------
-- Views
-------------------------------------------------------------------------------

CREATE VIEW mq.topics WITH (security_barrier) AS
SELECT t.topic_name AS topic, t.topic_id, t.partitions, t.config, t.created_at
  FROM mq.topic t
 WHERE mq._describable('topic', t.topic_name);

-- A row without a log end is a partition whose topic was dropped after
-- the statement's snapshot was taken (mq._log_end_offset reads the topic
-- as it is now): left out, as the topic is gone, rather than shown with
-- null offsets that a reader would pass on (mq-kafka's Fetch handed one
-- to mq.kafka_fetch: MQ010, INVALID_REQUEST to the client, while Kafka
-- answers a deleted partition UNKNOWN_TOPIC_OR_PARTITION).
CREATE VIEW mq.partitions WITH (security_barrier) AS
SELECT t.topic_name AS topic, p.partition, p.log_start_offset,
       e.log_end_offset,
       coalesce(p.high_watermark, e.log_end_offset) AS high_watermark,
       p.leader_epoch, p.role, p.relid
  FROM mq.partition_state p
  JOIN mq.topic t USING (topic_id)
  CROSS JOIN LATERAL (SELECT mq._log_end_offset(p.topic_id, p.partition) AS log_end_offset) e
 WHERE mq._describable('topic', t.topic_name)
   AND e.log_end_offset IS NOT NULL;

-- Each partition's leader epochs and where each starts (KIP-101's epoch
-- history, mq.leader_epoch_history); a partition that was never
-- replicated has one epoch, its current one, from offset 0.  mq-kafka's
-- OffsetForLeaderEpoch and Fetch read it (docs/kafka.md, "Leader epochs").
-- Its UNION ALL is a subquery, under the security barrier (56_group_views.sql).
CREATE VIEW mq.leader_epochs WITH (security_barrier) AS
SELECT * FROM (
SELECT t.topic_name AS topic, h.partition, h.leader_epoch, h.start_offset
  FROM mq.leader_epoch_history h
  JOIN mq.topic t USING (topic_id)
 WHERE mq._describable('topic', t.topic_name)
UNION ALL
SELECT t.topic_name, p.partition, p.leader_epoch, 0::bigint
  FROM mq.partition_state p
  JOIN mq.topic t USING (topic_id)
 WHERE mq._describable('topic', t.topic_name)
   AND NOT EXISTS (SELECT FROM mq.leader_epoch_history h
                    WHERE h.topic_id = p.topic_id AND h.partition = p.partition)) v;

CREATE VIEW mq.segments WITH (security_barrier) AS
SELECT t.topic_name AS topic, s.partition, s.base_offset, s.end_offset, s.relid,
       s.created_at, pg_total_relation_size(s.relid) AS bytes
  FROM mq.segment s
  JOIN mq.topic t USING (topic_id)
 WHERE mq._describable('topic', t.topic_name);

