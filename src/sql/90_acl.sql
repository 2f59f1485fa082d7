-------------------------------------------------------------------------------
-- Authorization: Kafka's resource model on PostgreSQL roles (src/acl.c,
-- docs/operations.md).  A grant allows (or denies) one operation on a
-- topic, a group, the cluster or a Kafka transactional id, by literal name, '*' (every name), or
-- prefix, to a role or to PUBLIC; members of a role (with INHERIT) have
-- its grants.  EXECUTE on mq's functions is still needed to call them.
-------------------------------------------------------------------------------

CREATE TABLE mq.acl (
    resource_type text NOT NULL CHECK (resource_type IN ('topic', 'group', 'cluster', 'transactional_id')),
    pattern_type  text NOT NULL CHECK (pattern_type IN ('literal', 'prefixed')),
    resource_name text NOT NULL,
    grantee       regrole,              -- NULL: PUBLIC
    operation     text NOT NULL
                  CHECK (operation IN ('all', 'read', 'write', 'describe', 'create', 'alter', 'delete')),
    permission    text NOT NULL DEFAULT 'allow' CHECK (permission IN ('allow', 'deny')),
    grantor       regrole,
    granted_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (resource_type, pattern_type, resource_name, grantee, operation, permission)
);
-- No key can identify a row (grantee is NULL for PUBLIC), so the whole
-- row does: maintenance deletes the grants of dropped roles, which a
-- publication FOR ALL TABLES refuses on a table without an identity.
ALTER TABLE mq.acl REPLICA IDENTITY FULL;
-- grants are the user's data: pg_dump keeps them (regrole dumps as a name)
SELECT pg_catalog.pg_extension_config_dump('mq.acl', '');

CREATE FUNCTION mq._acl_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'mq_acl_changed' LANGUAGE C;
CREATE TRIGGER acl_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mq.acl
    FOR EACH STATEMENT EXECUTE FUNCTION mq._acl_changed();
-- topics carry their owner: a new, dropped or re-owned topic changes rights
CREATE TRIGGER acl_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mq.topic
    FOR EACH STATEMENT EXECUTE FUNCTION mq._acl_changed();

CREATE FUNCTION mq._has_privilege(role oid, resource_type text, resource_name text, operation text)
    RETURNS boolean AS 'MODULE_PATHNAME', 'mq_has_privilege_sql' LANGUAGE C STABLE STRICT;
CREATE FUNCTION mq._authorize(role oid, resource_type text, resource_name text, operation text)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_authorize_sql' LANGUAGE C STRICT;

-- has_table_privilege's counterparts for topics and groups
CREATE FUNCTION mq.has_topic_privilege(role name, topic text, operation text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._has_privilege(role::regrole::oid, 'topic', topic, operation) $$;
CREATE FUNCTION mq.has_topic_privilege(topic text, operation text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._has_privilege(current_user::regrole::oid, 'topic', topic, operation) $$;
CREATE FUNCTION mq.has_group_privilege(role name, group_id text, operation text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._has_privilege(role::regrole::oid, 'group', group_id, operation) $$;
CREATE FUNCTION mq.has_group_privilege(group_id text, operation text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._has_privilege(current_user::regrole::oid, 'group', group_id, operation) $$;

-- The rows one grant()/revoke() call names: operations may be a list
-- ('read, describe'); a name ending in '*' (other than '*' alone) is a
-- prefix unless pattern_type says otherwise; the cluster has one name.
CREATE FUNCTION mq._acl_rows(p_operations text, p_resource_type text, p_resource_name text,
                             p_grantee text, p_pattern_type text, p_permission text)
RETURNS TABLE (resource_type text, pattern_type text, resource_name text,
               grantee regrole, operation text, permission text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_type text := lower(p_resource_type);
    v_name text := p_resource_name;
    v_pattern text := lower(p_pattern_type);
    v_op text;
    v_role regrole;
BEGIN
    IF p_operations IS NULL OR p_resource_type IS NULL OR p_grantee IS NULL OR p_permission IS NULL THEN
        RAISE EXCEPTION '% must not be null',
            CASE WHEN p_operations IS NULL THEN 'operations' WHEN p_resource_type IS NULL THEN 'resource_type'
                 WHEN p_grantee IS NULL THEN 'grantee' ELSE 'permission' END
            USING ERRCODE = 'MQ010';
    END IF;
    IF v_type NOT IN ('topic', 'group', 'cluster', 'transactional_id') THEN
        RAISE EXCEPTION 'unknown resource type "%"', p_resource_type
            USING ERRCODE = 'MQ010', HINT = 'Resource types are topic, group, cluster and transactional_id.';
    END IF;
    IF lower(p_permission) NOT IN ('allow', 'deny') THEN
        RAISE EXCEPTION 'unknown permission "%"', p_permission
            USING ERRCODE = 'MQ010', HINT = 'Use allow or deny.';
    END IF;
    IF upper(p_grantee) <> 'PUBLIC' THEN
        BEGIN
            v_role := p_grantee::regrole;
        EXCEPTION WHEN invalid_name THEN
            RAISE EXCEPTION 'invalid role name "%"', p_grantee
                USING ERRCODE = 'MQ010', HINT = 'Name a role, or PUBLIC.';
        END;
    END IF;
    -- Kafka's only cluster resource name (NULL names it too)
    IF v_type = 'cluster' AND v_name <> 'kafka-cluster' THEN
        RAISE EXCEPTION 'invalid cluster resource name "%"', v_name
            USING ERRCODE = 'MQ010', HINT = 'The only name of the cluster resource is kafka-cluster.';
    ELSIF v_type = 'cluster' THEN
        v_name := 'kafka-cluster';
        v_pattern := 'literal';
    ELSIF v_name IS NULL OR v_name = '' THEN
        RAISE EXCEPTION 'resource name must not be empty' USING ERRCODE = 'MQ010';
    ELSIF v_pattern IS NULL THEN
        v_pattern := CASE WHEN v_name <> '*' AND right(v_name, 1) = '*' THEN 'prefixed' ELSE 'literal' END;
        IF v_pattern = 'prefixed' THEN
            v_name := left(v_name, -1);
        END IF;
    ELSIF v_pattern NOT IN ('literal', 'prefixed') THEN
        RAISE EXCEPTION 'unknown pattern type "%"', p_pattern_type
            USING ERRCODE = 'MQ010', HINT = 'Use literal or prefixed.';
    END IF;
    FOREACH v_op IN ARRAY regexp_split_to_array(lower(trim(coalesce(p_operations, ''))), '\s*,\s*') LOOP
        IF v_op NOT IN ('all', 'read', 'write', 'describe', 'create', 'alter', 'delete') THEN
            RAISE EXCEPTION 'unknown operation "%"', v_op
                USING ERRCODE = 'MQ010',
                      HINT = 'Operations are read, write, describe, create, alter, delete and all.';
        END IF;
        RETURN QUERY SELECT v_type, v_pattern, v_name, v_role, v_op, lower(p_permission);
    END LOOP;
END $$;

-- May p_caller grant or revoke on this resource?  Administrators (ALTER on
-- the cluster, which superusers and the extension owner have), and a
-- topic's owner for literal grants on that topic.
CREATE FUNCTION mq._authorize_grant(p_caller oid, p_type text, p_pattern text, p_name text)
RETURNS void LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF mq._has_privilege(p_caller, 'cluster', 'kafka-cluster', 'alter') THEN
        RETURN;
    END IF;
    IF p_type = 'topic' AND p_pattern = 'literal' AND EXISTS (
            SELECT 1 FROM mq.topic t
             WHERE t.topic_name = p_name AND t.owner IS NOT NULL
               AND pg_has_role(p_caller, t.owner, 'USAGE')) THEN
        RETURN;
    END IF;
    -- SCHEMA and TABLE name the resource refused (docs/errors.md): the
    -- cluster, whose alter right grants
    RAISE EXCEPTION 'permission denied to grant or revoke on % "%"', p_type, p_name
        USING ERRCODE = '42501', SCHEMA = 'mq', TABLE = 'cluster',
              HINT = 'Grants are made by an administrator (alter on the cluster) or by the topic''s owner.';
END $$;

CREATE FUNCTION mq_internal.grant(operations text, resource_type text, resource_name text,
                                  grantee text, pattern_type text, permission text, p_caller oid)
RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    INSERT INTO mq.acl (resource_type, pattern_type, resource_name, grantee, operation, permission, grantor)
    SELECT r.resource_type, r.pattern_type, r.resource_name, r.grantee, r.operation, r.permission,
           p_caller::regrole
      FROM mq._acl_rows(operations, resource_type, resource_name, grantee, pattern_type, permission) r,
           LATERAL mq._authorize_grant(p_caller, r.resource_type, r.pattern_type, r.resource_name)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END $$;

-- like REVOKE ALL, 'all' takes back every operation
CREATE FUNCTION mq_internal.revoke(operations text, resource_type text, resource_name text,
                                   grantee text, pattern_type text, permission text, p_caller oid)
RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_n integer;
BEGIN
    DELETE FROM mq.acl a
     USING mq._acl_rows(revoke.operations, revoke.resource_type, revoke.resource_name, revoke.grantee,
                        revoke.pattern_type, revoke.permission) r,
           LATERAL mq._authorize_grant(p_caller, r.resource_type, r.pattern_type, r.resource_name)
     WHERE a.resource_type = r.resource_type AND a.pattern_type = r.pattern_type
       AND a.resource_name = r.resource_name AND a.grantee IS NOT DISTINCT FROM r.grantee
       AND a.permission = r.permission AND (r.operation = 'all' OR a.operation = r.operation);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END $$;

CREATE FUNCTION mq.grant(operations text, resource_type text, resource_name text, grantee text,
                         pattern_type text DEFAULT NULL, permission text DEFAULT 'allow')
    RETURNS integer AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
CREATE FUNCTION mq.revoke(operations text, resource_type text, resource_name text, grantee text,
                          pattern_type text DEFAULT NULL, permission text DEFAULT 'allow')
    RETURNS integer AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

-- May a role that is not an administrator see a grant that applies to it?
-- Not one naming a topic or group it may not describe.
CREATE FUNCTION mq._grant_shown(p_type text, p_pattern text, p_name text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT p_type = 'cluster' OR p_pattern = 'prefixed' OR p_name = '*' OR mq._describable(p_type, p_name) $$;

-- Grants as made; a role sees those that apply to it (directly, through
-- membership or PUBLIC) on resources it may describe, a topic's owner the
-- literal grants on its topic (which it may revoke), administrators
-- (describe on the cluster) all.  security_barrier: the filter runs before
-- any condition of the caller's (which could print the rows it is shown).
CREATE VIEW mq.grants WITH (security_barrier) AS
SELECT a.resource_type, a.pattern_type, a.resource_name,
       coalesce(a.grantee::text, 'PUBLIC') AS grantee, a.operation, a.permission,
       a.grantor::text AS grantor, a.granted_at
  FROM mq.acl a
 WHERE mq._has_privilege(current_user::regrole::oid, 'cluster', 'kafka-cluster', 'describe')
    OR ((a.grantee IS NULL OR pg_has_role(current_user, a.grantee, 'USAGE'))
        AND mq._grant_shown(a.resource_type, a.pattern_type, a.resource_name))
    OR (a.resource_type = 'topic' AND a.pattern_type = 'literal'
        AND EXISTS (SELECT 1 FROM mq.topic t
                     WHERE t.topic_name = a.resource_name AND t.owner IS NOT NULL
                       AND pg_has_role(current_user, t.owner, 'USAGE')));

-- Effective grants: each role with each grant it has, and through which
-- grantee (itself, a role it inherits from, or PUBLIC).
CREATE VIEW mq.effective_grants WITH (security_barrier) AS
SELECT r.rolname AS role, a.resource_type, a.pattern_type, a.resource_name, a.operation,
       a.permission, coalesce(a.grantee::text, 'PUBLIC') AS via
  FROM pg_roles r
  JOIN mq.acl a ON a.grantee IS NULL OR pg_has_role(r.oid, a.grantee, 'USAGE')
 WHERE r.rolname !~ '^pg_'
   AND (mq._has_privilege(current_user::regrole::oid, 'cluster', 'kafka-cluster', 'describe')
        OR (pg_has_role(current_user, r.oid, 'USAGE')
            AND mq._grant_shown(a.resource_type, a.pattern_type, a.resource_name)));
