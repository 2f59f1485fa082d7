-- the data an update must keep (test/cli/upgrade.sh): one line per fact,
-- ordered, without timestamps that are set at write time
SELECT line FROM (
  SELECT 'record ' || r.topic || '/' || r.partition || '@' || r.msg_offset || ' ' || coalesce(encode(r.key, 'escape'), '∅')
         || '=' || coalesce(encode(r.value, 'escape'), '∅') || ' h=' || coalesce(r.headers::text, '')
         || ' hl=' || coalesce(r.header_list::text, '') || ' ts=' || r."timestamp" || ' ' || r.timestamp_type AS line
    FROM mq.topic t, generate_series(0, t.partitions - 1) p,
         LATERAL mq.fetch(t.topic_name, p, 0, 100000) r
  UNION ALL
  SELECT 'topic ' || t.topic_name || ' id=' || t.topic_id || ' partitions=' || t.partitions || ' config=' || t.config
         || ' owner=' || coalesce(t.owner::text, '') FROM mq.topic t
  UNION ALL
  SELECT 'partition ' || t.topic_name || '/' || s.partition || ' start=' || s.log_start_offset
         || ' hwm=' || coalesce(s.high_watermark::text, '') || ' epoch=' || s.leader_epoch || ' role=' || s.role
    FROM mq.partition_state s JOIN mq.topic t USING (topic_id)
  UNION ALL
  SELECT 'segment ' || t.topic_name || '/' || s.partition || ' ' || s.base_offset || '..' || s.end_offset
    FROM mq.segment s JOIN mq.topic t USING (topic_id)
  UNION ALL
  SELECT 'offset ' || o.group_id || ' ' || t.topic_name || '/' || o.partition || ' next=' || o.next_offset
         || ' meta=' || coalesce(o.metadata, '')
    FROM mq.consumer_offset o JOIN mq.topic t USING (topic_id)
  UNION ALL
  SELECT 'group ' || g.group_id || ' gen=' || g.generation || ' assignor=' || g.assignor FROM mq.consumer_group g
  UNION ALL
  SELECT 'member ' || m.group_id || ' ' || m.member_id || ' instance=' || coalesce(m.instance_id, '')
         || ' timeout=' || m.session_timeout_ms FROM mq.group_member m
  UNION ALL
  SELECT 'assignment ' || a.group_id || ' ' || t.topic_name || '/' || a.partition || ' owner=' || coalesce(a.owner, '')
    FROM mq.group_assignment a JOIN mq.topic t USING (topic_id)
  UNION ALL
  SELECT 'producer ' || p.producer_id || ' tx=' || coalesce(p.transactional_id, '') || ' epoch=' || p.producer_epoch
    FROM mq.producer p
  UNION ALL
  SELECT 'producer-state ' || t.topic_name || '/' || s.partition || ' pid=' || s.producer_id || ' epoch='
         || s.producer_epoch || ' ' || s.batch_first::text || s.batch_last::text || s.batch_offset::text
    FROM mq.producer_state s JOIN mq.topic t USING (topic_id)
  UNION ALL
  SELECT 'acl ' || a.resource_type || ' ' || a.pattern_type || ' ' || a.resource_name || ' ' || coalesce(a.grantee::text, 'PUBLIC')
         || ' ' || a.operation || ' ' || a.permission FROM mq.acl a
  UNION ALL
  SELECT 'sql-grant ' || g.grantee || ' ' || g.privilege_type || ' ' || g.routine_schema || '.' || g.routine_name
    FROM information_schema.role_routine_grants g WHERE g.grantee LIKE 'mq_upg_%'
  UNION ALL
  SELECT 'sql-grant ' || g.grantee || ' ' || g.privilege_type || ' ' || g.table_schema || '.' || g.table_name
    FROM information_schema.role_table_grants g WHERE g.grantee LIKE 'mq_upg_%'
  UNION ALL
  SELECT 'sql-grant ' || g.grantee || ' ' || g.privilege_type || ' ' || g.table_schema || '.' || g.table_name
         || '.' || g.column_name
    FROM information_schema.column_privileges g WHERE g.grantee LIKE 'mq_upg_%'
  UNION ALL
  SELECT 'coord-broker ' || b.broker_id || ' ' || b.node_conninfo || ' ' || b.node_name FROM mq_coord.broker b
  UNION ALL
  SELECT 'coord-topic ' || c.topic || ' ' || c.partitions || ' ' || c.config FROM mq_coord.topic c
  UNION ALL
  SELECT 'coord-partition ' || c.topic || '/' || c.partition || ' replicas=' || c.replicas::text || ' leader='
         || coalesce(c.leader::text, '') || ' epoch=' || c.leader_epoch || ' isr=' || c.isr::text
         || ' pepoch=' || c.partition_epoch FROM mq_coord.partition c
  UNION ALL
  SELECT 'coord-producer-ids ' || c.next_id FROM mq_coord.producer_id_counter c
) facts
ORDER BY line COLLATE "C";
