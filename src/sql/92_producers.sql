-- mq.producers: each partition's idempotent and transactional producers
-- as the partition remembers them (mq.producer_state): epoch, the last
-- sequence it took, and when.  For the topics the caller may READ, as
-- Kafka's DescribeProducers requires (mq-kafka answers it from here):
-- a producer's id and epoch are what a writer would need to pose as it,
-- which DESCRIBE alone (or WRITE) does not show.  After 90_acl.sql, whose
-- privilege check it calls.
CREATE VIEW mq.producers WITH (security_barrier) AS
SELECT t.topic_name AS topic, s.partition, s.producer_id, s.producer_epoch,
       s.batch_last[pg_catalog.array_upper(s.batch_last, 1)] AS last_sequence,
       s.updated_at AS last_batch_at
  FROM mq.producer_state s
  JOIN mq.topic t USING (topic_id)
 WHERE mq.has_topic_privilege(t.topic_name, 'read');
