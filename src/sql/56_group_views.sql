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
-------------------------------------------------------------------------------
CREATE VIEW mq.group_members WITH (security_barrier) AS
SELECT m.group_id, m.member_id, m.instance_id, g.generation, g.assignor,
       ARRAY(SELECT t.topic_name FROM mq.topic t WHERE t.topic_id = ANY (m.topics) ORDER BY 1) AS topics,
       m.session_timeout_ms, m.last_heartbeat,
       (SELECT count(*) FROM mq.group_assignment a WHERE a.group_id = m.group_id AND a.owner = m.member_id)
           AS partitions,
       -- live: its session has not timed out (maintenance removes the others)
       m.last_heartbeat + m.session_timeout_ms * interval '1 millisecond' > clock_timestamp() AS active
  FROM mq.group_member m JOIN mq.consumer_group g USING (group_id)
 WHERE mq._describable('group', m.group_id);

CREATE VIEW mq.group_assignments WITH (security_barrier) AS
SELECT a.group_id, t.topic_name AS topic, a.partition, a.owner, a.target,
       CASE WHEN a.revoking THEN 'revoking' WHEN a.owner IS NULL THEN 'unassigned' ELSE 'owned' END AS state
  FROM mq.group_assignment a JOIN mq.topic t USING (topic_id)
 WHERE mq._describable('group', a.group_id) AND mq._describable('topic', t.topic_name);

CREATE VIEW mq.groups WITH (security_barrier) AS
SELECT g.group_id,
       CASE WHEN a.members = 0 THEN 'Empty'
            WHEN EXISTS (SELECT 1 FROM mq.group_assignment ga
                          WHERE ga.group_id = g.group_id AND (ga.revoking OR ga.owner IS NULL))
            THEN 'Rebalancing'
            ELSE 'Stable' END AS state,
       a.members,
       cg.generation,
       cg.assignor,
       cg.group_id IS NOT NULL AS sql_group
  FROM (SELECT group_id FROM mq.consumer_offset UNION SELECT group_id FROM mq.consumer_group) g
  LEFT JOIN mq.consumer_group cg USING (group_id)
 CROSS JOIN LATERAL (
       SELECT count(*) AS members FROM mq.group_members m WHERE m.group_id = g.group_id AND m.active) a
 WHERE mq._describable('group', g.group_id);
