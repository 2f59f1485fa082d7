-------------------------------------------------------------------------------
-- Client quotas for Kafka clients of mq-kafka (Kafka's quotas, KIP-13,
-- KIP-55 and KIP-546; docs/kafka.md, "Client quotas").
--
-- mq.client_quota keeps one row per quota entity and key.  An entity is a
-- user (the principal's name, User:NAME, or ANONYMOUS), a client id, or
-- both; either part may be its default (default_user, default_client:
-- every user, or client id, without a quota of its own).  The keys are
-- the three mq-kafka enforces: producer_byte_rate and consumer_byte_rate
-- in bytes a second, request_percentage in percent of one thread (Kafka's
-- controller_mutation_rate and its ip quotas are refused: nothing here
-- would enforce them).  Administrators (ALTER on the cluster) set them with
-- mq.set_client_quota; mq.list_client_quotas shows them to DESCRIBE on
-- the cluster, as Kafka's AlterClientQuotas and DescribeClientQuotas
-- require ALTER_CONFIGS and DESCRIBE_CONFIGS on the cluster.  mq-kafka
-- reads them through mq.client_quota_lookup, which PUBLIC may not
-- execute: grant it to the role mq-kafka connects as.
-------------------------------------------------------------------------------

CREATE TABLE mq.client_quota (
    user_name      text,
    default_user   boolean NOT NULL DEFAULT false,
    client_id      text,
    default_client boolean NOT NULL DEFAULT false,
    quota_key      text NOT NULL
                   CHECK (quota_key IN ('producer_byte_rate', 'consumer_byte_rate', 'request_percentage')),
    quota_value    double precision NOT NULL CHECK (quota_value > 0 AND quota_value < 'Infinity'),
    set_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (NOT (default_user AND user_name IS NOT NULL)),
    CHECK (NOT (default_client AND client_id IS NOT NULL)),
    CHECK (user_name IS NOT NULL OR default_user OR client_id IS NOT NULL OR default_client),
    UNIQUE NULLS NOT DISTINCT (user_name, default_user, client_id, default_client, quota_key)
);
REVOKE ALL ON mq.client_quota FROM PUBLIC;
-- no key can identify a row (names are NULL for defaults), so the whole
-- row does, as for mq.acl: a publication FOR ALL TABLES needs one
ALTER TABLE mq.client_quota REPLICA IDENTITY FULL;
-- quotas are the user's configuration: pg_dump keeps them
SELECT pg_catalog.pg_extension_config_dump('mq.client_quota', '');

-- the entity and key checked, or MQ063 (Kafka's INVALID_REQUEST)
CREATE FUNCTION mq._client_quota_check(p_user text, p_default_user boolean, p_client text,
                                       p_default_client boolean, p_key text, p_value double precision)
RETURNS void LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_user IS NOT NULL AND p_default_user OR p_client IS NOT NULL AND p_default_client THEN
        RAISE EXCEPTION 'a quota entity names a user or client id, or its default, not both'
            USING ERRCODE = 'MQ063';
    END IF;
    IF p_user IS NULL AND NOT p_default_user AND p_client IS NULL AND NOT p_default_client THEN
        RAISE EXCEPTION 'a quota entity needs a user, a client id, or a default of either'
            USING ERRCODE = 'MQ063';
    END IF;
    IF p_user = '' OR p_client = '' THEN
        RAISE EXCEPTION 'an empty % is not a quota entity', CASE WHEN p_user = '' THEN 'user' ELSE 'client id' END
            USING ERRCODE = 'MQ063', HINT = 'The default is default_user or default_client.';
    END IF;
    IF p_key IS NULL OR p_key NOT IN ('producer_byte_rate', 'consumer_byte_rate', 'request_percentage') THEN
        RAISE EXCEPTION 'unknown quota key "%"', p_key
            USING ERRCODE = 'MQ063',
                  HINT = 'mq-kafka enforces producer_byte_rate, consumer_byte_rate and request_percentage.';
    END IF;
    IF p_value IS NOT NULL AND NOT (p_value > 0 AND p_value < 'Infinity') THEN
        RAISE EXCEPTION 'quota % must be a positive number, not %', p_key, p_value
            USING ERRCODE = 'MQ063';
    END IF;
    -- Kafka's tolerance for a whole number sent as a double
    IF p_value IS NOT NULL AND p_key <> 'request_percentage' AND abs(p_value - trunc(p_value)) > 1e-6 THEN
        RAISE EXCEPTION 'quota % must be a whole number of bytes a second, not %', p_key, p_value
            USING ERRCODE = 'MQ063';
    END IF;
END $$;

CREATE FUNCTION mq_internal.set_client_quota(quota_key text, quota_value double precision,
                                             user_name text, client_id text,
                                             default_user boolean, default_client boolean, p_caller oid)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    p_key ALIAS FOR $1;
    p_value ALIAS FOR $2;
    p_user ALIAS FOR $3;
    p_client ALIAS FOR $4;
    p_default_user boolean := coalesce($5, false);
    p_default_client boolean := coalesce($6, false);
BEGIN
    IF NOT mq._has_privilege(p_caller, 'cluster', 'kafka-cluster', 'alter') THEN
        RAISE EXCEPTION 'permission denied to set client quotas'
            USING ERRCODE = '42501',
                  HINT = 'Client quotas are set by an administrator (alter on the cluster).';
    END IF;
    PERFORM mq._client_quota_check(p_user, p_default_user, p_client, p_default_client, p_key, p_value);
    IF p_value IS NULL THEN
        DELETE FROM mq.client_quota q
         WHERE q.user_name IS NOT DISTINCT FROM p_user AND q.default_user OPERATOR(pg_catalog.=) p_default_user
           AND q.client_id IS NOT DISTINCT FROM p_client AND q.default_client OPERATOR(pg_catalog.=) p_default_client
           AND q.quota_key OPERATOR(pg_catalog.=) p_key;
        RETURN;
    END IF;
    INSERT INTO mq.client_quota AS q (user_name, default_user, client_id, default_client, quota_key, quota_value)
    VALUES (p_user, p_default_user, p_client, p_default_client, p_key, p_value)
    ON CONFLICT (user_name, default_user, client_id, default_client, quota_key)
    DO UPDATE SET quota_value = EXCLUDED.quota_value, set_at = now();
END $$;

-- set quota_key of an entity to quota_value (NULL: remove it); the entity
-- is user_name or default_user, and/or client_id or default_client
CREATE FUNCTION mq.set_client_quota(quota_key text, quota_value double precision,
                                    user_name text DEFAULT NULL, client_id text DEFAULT NULL,
                                    default_user boolean DEFAULT false, default_client boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

CREATE FUNCTION mq_internal.list_client_quotas(p_caller oid)
RETURNS TABLE (user_name text, default_user boolean, client_id text, default_client boolean,
               quota_key text, quota_value double precision, set_at timestamptz)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT mq._has_privilege(p_caller, 'cluster', 'kafka-cluster', 'describe') THEN
        RAISE EXCEPTION 'permission denied to describe client quotas'
            USING ERRCODE = '42501',
                  HINT = 'Client quotas are shown to describe on the cluster.';
    END IF;
    RETURN QUERY SELECT q.user_name, q.default_user, q.client_id, q.default_client,
                        q.quota_key, q.quota_value, q.set_at
                   FROM mq.client_quota q
                  ORDER BY q.user_name NULLS FIRST, q.default_user, q.client_id NULLS FIRST,
                           q.default_client, q.quota_key;
END $$;
CREATE FUNCTION mq.list_client_quotas()
RETURNS TABLE (user_name text, default_user boolean, client_id text, default_client boolean,
               quota_key text, quota_value double precision, set_at timestamptz)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;

-- mq-kafka's read of every quota, to enforce them (PUBLIC may not execute it)
CREATE FUNCTION mq.client_quota_lookup()
RETURNS TABLE (user_name text, default_user boolean, client_id text, default_client boolean,
               quota_key text, quota_value double precision)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
SELECT q.user_name, q.default_user, q.client_id, q.default_client, q.quota_key, q.quota_value
  FROM mq.client_quota q
$$;
REVOKE ALL ON FUNCTION mq.client_quota_lookup() FROM PUBLIC;
