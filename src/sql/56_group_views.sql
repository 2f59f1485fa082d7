-------------------------------------------------------------------------------
-- The consumer groups as roles may see them (docs/groups.md): each shows
-- only the groups (and, for assignments, topics) the role may DESCRIBE.
--
-- mq.groups: every consumer group this database knows, in one place: a
-- group of SQL consumers (mq.join_group) and any group with committed
-- offsets (a Kafka group, or SQL consumers committing without joining),
-- each once, with the state its members give it.  mqctl's group list and mq-kafka's
-- ListGroups and DescribeGroups (for the groups it holds no members of)
-- read it, so a group is listed the same way everywhere.
--
-- Kafka's members are shown too (column kafka), as mq-kafka last saved its
-- groups on this node (54_kafka_group_state.sql): as of the group's last
-- completed rebalance, live while mq-kafka says it holds them (their
-- session timeout after its last word).  mq-kafka itself keeps to the SQL
-- members (kafka false): it holds its own in memory.
--
-- A view whose query is a UNION ALL is planned as an append of its
-- branches, and its security barrier does not hold there: a function in
-- the caller's WHERE ran before the branches' _describable filters and saw
-- the hidden rows.  So such a view selects from its UNION ALL as a
-- subquery (test/pgtap/acl_holes.sql).
-------------------------------------------------------------------------------

-- Kafka's members of a GroupMetadataValue (src/group_value.c); pure.
CREATE FUNCTION mq._kafka_group_members(value bytea,
    OUT member_id text, OUT instance_id text, OUT client_id text, OUT client_host text,
    OUT session_timeout_ms integer, OUT generation integer, OUT protocol text, OUT topics text[],
    OUT assigned_topics text[], OUT assigned_partitions integer[])
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'mq_kafka_group_members' LANGUAGE C IMMUTABLE STRICT ROWS 5;

-- Internal (no grants; the views below read it as their owner): each
-- Kafka member mq-kafka saved, live for its session timeout after
-- mq-kafka last saved or touched its group.
CREATE VIEW mq.kafka_group_member AS
SELECT s.group_id, k.member_id, k.instance_id, k.client_id, k.client_host, k.session_timeout_ms,
       k.generation, k.protocol, k.topics, k.assigned_topics, k.assigned_partitions,
       s.saved_at AS last_seen,
       s.saved_at + k.session_timeout_ms * interval '1 millisecond' > clock_timestamp() AS active
  FROM mq.kafka_group_state s CROSS JOIN LATERAL mq._kafka_group_members(s.kafka_metadata) k;

CREATE VIEW mq.group_members WITH (security_barrier) AS
SELECT * FROM (
SELECT m.group_id, m.member_id, m.instance_id, g.generation, g.assignor,
       m.topics,
       m.session_timeout_ms, m.last_heartbeat,
       (SELECT count(*) FROM mq.group_assignment a WHERE a.group_id = m.group_id AND a.owner = m.member_id)
           AS partitions,
       -- live: its session has not timed out (maintenance removes the others)
       m.last_heartbeat + m.session_timeout_ms * interval '1 millisecond' > clock_timestamp() AS active,
       'mq'::text AS client_id, NULL::text AS client_host, false AS kafka
  FROM mq.group_member m JOIN mq.consumer_group g USING (group_id)
 WHERE mq._describable('group', m.group_id)
UNION ALL
SELECT k.group_id, k.member_id, k.instance_id, k.generation, k.protocol, k.topics, k.session_timeout_ms,
       k.last_seen, pg_catalog.cardinality(k.assigned_partitions)::bigint, k.active,
       k.client_id, k.client_host, true
  FROM mq.kafka_group_member k
 WHERE mq._describable('group', k.group_id)) v;

CREATE VIEW mq.group_assignments WITH (security_barrier) AS
SELECT * FROM (
SELECT a.group_id, t.topic_name AS topic, a.partition, a.owner, a.target,
       CASE WHEN a.revoking THEN 'revoking' WHEN a.owner IS NULL THEN 'unassigned' ELSE 'owned' END AS state
  FROM mq.group_assignment a JOIN mq.topic t USING (topic_id)
 WHERE mq._describable('group', a.group_id) AND mq._describable('topic', t.topic_name)
UNION ALL
SELECT k.group_id, u.topic, u.partition, k.member_id, k.member_id, 'owned'
  FROM mq.kafka_group_member k
 CROSS JOIN LATERAL unnest(k.assigned_topics, k.assigned_partitions) AS u(topic, partition)
 WHERE k.active AND mq._describable('group', k.group_id) AND mq._describable('topic', u.topic)) v;

CREATE VIEW mq.groups WITH (security_barrier) AS
SELECT g.group_id,
       CASE WHEN a.members = 0 THEN 'Empty'
            WHEN EXISTS (SELECT 1 FROM mq.group_assignment ga
                          WHERE ga.group_id = g.group_id AND (ga.revoking OR ga.owner IS NULL))
            THEN 'Rebalancing'
            ELSE 'Stable' END AS state,
       a.members,
       coalesce(cg.generation, k.generation) AS generation,
       coalesce(cg.assignor, k.protocol) AS assignor,
       cg.group_id IS NOT NULL AS sql_group
  FROM (SELECT group_id FROM mq.consumer_offset UNION SELECT group_id FROM mq.consumer_group
        UNION SELECT group_id FROM mq.kafka_group_state) g
  LEFT JOIN mq.consumer_group cg USING (group_id)
 CROSS JOIN LATERAL (
       SELECT count(*) AS members FROM mq.group_members m WHERE m.group_id = g.group_id AND m.active) a
  LEFT JOIN LATERAL (
       SELECT km.generation, km.protocol FROM mq.kafka_group_member km
        WHERE km.group_id = g.group_id AND km.active LIMIT 1) k ON true
 WHERE mq._describable('group', g.group_id);
