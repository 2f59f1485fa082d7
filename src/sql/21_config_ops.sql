-------------------------------------------------------------------------------
-- Kafka's two ways of altering a topic's configuration, as the change
-- mq.alter_topic merges (a key given as JSON null returns to its
-- default); mq-kafka's AlterConfigs and IncrementalAlterConfigs call
-- mq.alter_topic with them, so mq's validation and rights apply.  Pure
-- functions of their arguments: they read no table.
-------------------------------------------------------------------------------

-- AlterConfigs: the given keys replace the whole configuration; every
-- other key returns to its default.  replication.factor is not a
-- configuration in Kafka and is kept (given unchanged, it is ignored).
CREATE FUNCTION mq._config_replace(p_config jsonb, p_keys text[], p_vals text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT jsonb_object_agg(k, NULL) FROM jsonb_object_keys(coalesce(p_config, '{}')) k
                      WHERE k <> 'replication.factor'), '{}')
           || coalesce((SELECT jsonb_object_agg(k, v) FROM unnest(p_keys, p_vals) u(k, v)
                         WHERE NOT (k = 'replication.factor' AND v = p_config->>'replication.factor')), '{}')
$$;

-- IncrementalAlterConfigs: per key an operation, 0 SET, 1 DELETE (back
-- to the default), 2 APPEND and 3 SUBTRACT, which only list keys take
-- (cleanup.policy, whose default is delete); MQ010 otherwise.
CREATE FUNCTION mq._config_incremental(p_config jsonb, p_keys text[], p_ops integer[], p_vals text[])
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_out jsonb := '{}';
    v_old text[];
    v_arg text[];
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
        IF p_ops[i] IN (2, 3) AND coalesce(p_keys[i] <> ALL (ARRAY['cleanup.policy',
                'leader.replication.throttled.replicas', 'follower.replication.throttled.replicas']), true) THEN
            -- Kafka's INVALID_CONFIG: "Can't APPEND to key ... because its type is not LIST."
            RAISE EXCEPTION 'config "%" is not a list: it can only be set or deleted', p_keys[i]
                USING ERRCODE = 'MQ004',
                      HINT = 'Kafka''s list configs, which take APPEND and SUBTRACT, are cleanup.policy and the throttled replica lists.';
        ELSIF p_ops[i] IS NULL OR p_ops[i] NOT IN (0, 1, 2, 3) THEN
            RAISE EXCEPTION 'unknown config operation %', coalesce(p_ops[i]::text, 'NULL')
                USING ERRCODE = 'MQ010', HINT = 'Operations are 0 SET, 1 DELETE, 2 APPEND and 3 SUBTRACT.';
        ELSIF p_ops[i] IN (0, 1) THEN
            v_out := v_out || jsonb_build_object(p_keys[i], CASE WHEN p_ops[i] = 0 THEN p_vals[i] END);
            CONTINUE;
        END IF;
        v_old := ARRAY(SELECT trim(x) FROM unnest(string_to_array(coalesce(v_out->>p_keys[i], p_config->>p_keys[i],
                                   CASE WHEN p_keys[i] = 'cleanup.policy' THEN 'delete' END), ',')) x
                        WHERE trim(x) <> '');
        v_arg := ARRAY(SELECT trim(x) FROM unnest(string_to_array(coalesce(p_vals[i], ''), ',')) x
                        WHERE trim(x) <> '');
        -- as Kafka: APPEND adds what is not there yet at the end, SUBTRACT removes
        v_out := v_out || jsonb_build_object(p_keys[i], array_to_string(ARRAY(
            SELECT u.x FROM unnest(v_old || CASE WHEN p_ops[i] = 2 THEN v_arg END) WITH ORDINALITY u(x, n)
             WHERE p_ops[i] = 2 OR u.x <> ALL (v_arg) GROUP BY u.x ORDER BY min(u.n)), ','));
    END LOOP;
    RETURN v_out;
END $$;
