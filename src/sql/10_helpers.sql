-------------------------------------------------------------------------------
-- C helpers
-------------------------------------------------------------------------------

-- cleanup.policy ("delete", "compact", or both as a comma-separated list
-- or a JSON array, in either order; stored as "delete", "compact" or
-- "compact,delete") and
-- min.cleanable.dirty.ratio (a fraction from 0 to 1), for validate_config.
CREATE FUNCTION mq._validate_compaction_config(p_key text, p_val jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_parts text[];
    v_num numeric;
BEGIN
    IF p_key = 'min.cleanable.dirty.ratio' THEN
        IF jsonb_typeof(p_val) NOT IN ('number', 'string')
           OR (p_val #>> '{}') !~ '^\s*[0-9]+(\.[0-9]+)?([eE]-?[0-9]+)?\s*$' THEN
            RAISE EXCEPTION 'invalid value % for "%"', p_val, p_key
                USING ERRCODE = 'MQ004', HINT = 'Give a fraction from 0 to 1, for example 0.5.';
        END IF;
        v_num := (p_val #>> '{}')::numeric;
        IF v_num > 1 THEN
            RAISE EXCEPTION 'invalid value % for "%": the maximum is 1', p_val, p_key
                USING ERRCODE = 'MQ004', HINT = 'Give a fraction from 0 to 1, for example 0.5.';
        END IF;
        RETURN jsonb_build_object(p_key, v_num);
    END IF;
    IF jsonb_typeof(p_val) = 'string' THEN
        SELECT array_agg(DISTINCT trim(x) ORDER BY trim(x))
          INTO v_parts FROM regexp_split_to_table(p_val #>> '{}', ',') AS x;
    ELSIF jsonb_typeof(p_val) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_val) e WHERE jsonb_typeof(e) <> 'string') THEN
        SELECT array_agg(DISTINCT trim(x) ORDER BY trim(x))
          INTO v_parts FROM jsonb_array_elements_text(p_val) AS x;
    END IF;
    IF v_parts IS NULL OR NOT v_parts <@ ARRAY['compact', 'delete'] OR cardinality(v_parts) = 0 THEN
        RAISE EXCEPTION 'invalid value % for "cleanup.policy"', p_val
            USING ERRCODE = 'MQ004', HINT = 'Use "delete", "compact" or "compact,delete".';
    END IF;
    RETURN jsonb_build_object(p_key, array_to_string(v_parts, ','));
END $$;
COMMENT ON FUNCTION mq._validate_compaction_config(text, jsonb) IS
    'validate_config''s checks of cleanup.policy and min.cleanable.dirty.ratio';

-- A topic config key's kind (ms, bytes, count, bool, policy, tstype,
-- compression, version, replicas) and its numbers' range, for
-- validate_config; an unknown key is an MQ004 error.  The ranges are
-- Kafka's (sizes and counts Kafka keeps in an int as int4, longs as
-- int8); times beyond what an interval holds mean no limit where they
-- are used (mq._config_ms).  The keys after the first group are Kafka's
-- that mq keeps and reports but does not act on: its records are stored
-- uncompressed, PostgreSQL flushes, indexes and allocates by itself, and
-- there is no tiered storage or replication throttle (docs/sql.md).
CREATE FUNCTION mq._config_key(p_key text, OUT kind text, OUT min numeric, OUT max numeric)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SELECT s.kind, s.min, s.max INTO kind, min, max FROM (VALUES
        ('retention.ms', 'ms', -1, 9223372036854775807),
        ('retention.bytes', 'bytes', -1, 9223372036854775807),
        -- Kafka's minimum (a legacy record's overhead); mq's segments hold at
        -- least 1,000 records whatever it says (mq._segment_span)
        ('segment.bytes', 'bytes', 14, 2147483647),
        ('segment.ms', 'ms', 1, 9223372036854775807),
        ('segment.records', 'count', 1, 2147483647),
        ('max.message.bytes', 'bytes', 0, 2147483647),
        ('min.insync.replicas', 'count', 1, 2147483647),
        ('replication.factor', 'count', 1, 2147483647),
        ('unclean.leader.election.enable', 'bool', NULL, NULL),
        ('cleanup.policy', 'policy', NULL, NULL),
        ('message.timestamp.type', 'tstype', NULL, NULL),
        ('message.timestamp.difference.max.ms', 'ms', 0, 9223372036854775807),
        -- Kafka 3.6+ (KIP-937): the CreateTime window's two sides
        ('message.timestamp.before.max.ms', 'ms', 0, 9223372036854775807),
        ('message.timestamp.after.max.ms', 'ms', 0, 9223372036854775807),
        ('min.cleanable.dirty.ratio', 'policy', 0, 1),
        ('min.compaction.lag.ms', 'ms', 0, 9223372036854775807),
        -- KIP-354; Kafka's default (no limit) is the int8 maximum
        ('max.compaction.lag.ms', 'ms', 1, 9223372036854775807),
        ('delete.retention.ms', 'ms', 0, 9223372036854775807),
        -- kept and reported, not acted on
        ('compression.type', 'compression', NULL, NULL),
        ('compression.gzip.level', 'count', -1, 9),
        ('compression.lz4.level', 'count', 1, 17),
        ('compression.zstd.level', 'count', -131072, 22),
        ('file.delete.delay.ms', 'ms', 0, 9223372036854775807),
        ('flush.messages', 'count', 1, 9223372036854775807),
        ('flush.ms', 'ms', 0, 9223372036854775807),
        ('index.interval.bytes', 'bytes', 0, 2147483647),
        ('segment.index.bytes', 'bytes', 4, 2147483647),
        ('segment.jitter.ms', 'ms', 0, 9223372036854775807),
        ('preallocate', 'bool', NULL, NULL),
        ('message.downconversion.enable', 'bool', NULL, NULL),
        ('message.format.version', 'version', NULL, NULL),
        ('leader.replication.throttled.replicas', 'replicas', NULL, NULL),
        ('follower.replication.throttled.replicas', 'replicas', NULL, NULL),
        ('local.retention.ms', 'ms', -2, 9223372036854775807),
        ('local.retention.bytes', 'bytes', -2, 9223372036854775807),
        ('remote.storage.enable', 'bool', NULL, NULL),     -- only false (validate_config)
        ('remote.log.copy.disable', 'bool', NULL, NULL),
        ('remote.log.delete.on.disable', 'bool', NULL, NULL)) AS s(key, kind, min, max)
     WHERE s.key = p_key;
    IF kind IS NULL THEN
        RAISE EXCEPTION 'unknown topic config key "%"', p_key
            USING ERRCODE = 'MQ004',
                  HINT = 'The keys are Kafka''s topic configs (docs/sql.md#configuration lists them).';
    END IF;
END $$;

-- A config value as messages quote it: at most 40 characters (a JSON
-- 1e400 is 401 digits).
CREATE FUNCTION mq._config_shown(p_val jsonb) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN length(p_val::text) > 40 THEN left(p_val::text, 40) || '...' ELSE p_val::text END
$$;

-- A value of a key kept but not acted on that is no number: compression
-- (Kafka's compression.type values), version (message.format.version,
-- deprecated and ignored by Kafka 3), replicas (a throttled replica list:
-- "*" or partition:broker pairs).  Returns the value as stored.
CREATE FUNCTION mq._config_text(p_key text, p_val jsonb, p_kind text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v text := CASE WHEN jsonb_typeof(p_val) = 'string' THEN p_val #>> '{}' END;
    v_shown text := mq._config_shown(p_val);
BEGIN
    IF (p_kind = 'compression' AND v IN ('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'))
       OR (p_kind = 'version' AND v ~ '^[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?$')
       OR (p_kind = 'replicas' AND v ~ '^\s*(\*|[0-9]+\s*:\s*[0-9]+(\s*,\s*[0-9]+\s*:\s*[0-9]+)*)?\s*$') THEN
        RETURN to_jsonb(v);
    END IF;
    RAISE EXCEPTION 'invalid value % for "%"', v_shown, p_key
        USING ERRCODE = 'MQ004',
              HINT = CASE p_kind WHEN 'compression' THEN 'Use uncompressed, zstd, lz4, snappy, gzip or producer.'
                                 WHEN 'version' THEN 'Give a Kafka version, for example "3.0-IV1".'
                                 ELSE 'Give "*" or partition:broker pairs, for example "0:1,1:2".' END;
END $$;

-- A time limit of config as mq computes with it: the number, at most
-- 1,000 years (an interval's range; Kafka's "no limit" is the int8
-- maximum), NULL when not set.
CREATE FUNCTION mq._config_ms(config jsonb, key text) RETURNS bigint
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT least(v, 31557600000000)     -- least() alone would make NULL the maximum
      FROM (SELECT (config OPERATOR(pg_catalog.->>) key)::bigint) s(v) WHERE v IS NOT NULL
$$;

-- A number-valued config key's value, for validate_config: a JSON number,
-- or a string holding a number and a unit of the key's kind ('7d',
-- '512MB'); a whole number within [p_min, p_max] once the unit is
-- resolved, else an MQ004 error.
CREATE FUNCTION mq._config_number(p_key text, p_val jsonb, p_kind text, p_min numeric, p_max numeric)
    RETURNS bigint
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_num numeric;
    v_unit text;
    v_mult numeric;
    v_m text[];
    v_shown text := mq._config_shown(p_val);
BEGIN
    IF jsonb_typeof(p_val) = 'number' THEN
        v_num := (p_val #>> '{}')::numeric;
        v_mult := 1;
    ELSIF jsonb_typeof(p_val) = 'string' THEN
        v_m := regexp_match(p_val #>> '{}', '^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$');
        IF v_m IS NULL THEN
            RAISE EXCEPTION 'invalid value % for "%"', v_shown, p_key
                USING ERRCODE = 'MQ004', HINT = 'Give a number, optionally followed by a unit.';
        END IF;
        v_num := v_m[1]::numeric;
        v_unit := v_m[2];
        v_mult := CASE
            WHEN v_unit = '' THEN 1
            WHEN p_kind = 'ms' THEN CASE v_unit WHEN 'ms' THEN 1 WHEN 's' THEN 1000 WHEN 'min' THEN 60000
                                     WHEN 'h' THEN 3600000 WHEN 'd' THEN 86400000 END
            WHEN p_kind = 'bytes' THEN CASE v_unit WHEN 'B' THEN 1 WHEN 'kB' THEN 1024 WHEN 'MB' THEN 1048576
                                     WHEN 'GB' THEN 1073741824 WHEN 'TB' THEN 1099511627776 END
            END;
        IF v_mult IS NULL THEN
            RAISE EXCEPTION 'invalid unit "%" for "%"', v_unit, p_key
                USING ERRCODE = 'MQ004',
                      HINT = CASE p_kind WHEN 'ms' THEN 'Valid units for this key are ms, s, min, h and d.'
                                         WHEN 'bytes' THEN 'Valid units for this key are B, kB, MB, GB and TB.'
                                         ELSE 'This key takes a plain number.' END;
        END IF;
    ELSE
        RAISE EXCEPTION 'invalid value % for "%"', v_shown, p_key
            USING ERRCODE = 'MQ004', HINT = 'Give a number, optionally followed by a unit.';
    END IF;
    v_num := v_num * v_mult;
    IF v_num <> trunc(v_num) OR v_num > 9223372036854775807 THEN
        RAISE EXCEPTION 'invalid value % for "%": not a whole number in range', v_shown, p_key
            USING ERRCODE = 'MQ004';
    END IF;
    IF v_num > p_max THEN
        RAISE EXCEPTION 'invalid value % for "%": the maximum is %', v_shown, p_key, p_max
            USING ERRCODE = 'MQ004',
                  HINT = CASE WHEN p_key = 'compression.gzip.level' THEN 'Use 1 to 9, or -1 for gzip''s default level.'
                              WHEN p_min = -1 THEN 'Use -1 for no limit.'
                              ELSE 'Give a smaller value.' END;
    END IF;
    IF p_key = 'compression.gzip.level' AND v_num = 0 THEN     -- Kafka: [1,...,9] or -1
        RAISE EXCEPTION 'invalid value % for "%": not a gzip level', v_shown, p_key
            USING ERRCODE = 'MQ004', HINT = 'Use 1 to 9, or -1 for gzip''s default level.';
    END IF;
    IF v_num < p_min THEN
        RAISE EXCEPTION 'invalid value % for "%": the minimum is %', v_shown, p_key, p_min
            USING ERRCODE = 'MQ004',
                  HINT = CASE WHEN p_key = 'compression.gzip.level' THEN 'Use 1 to 9, or -1 for gzip''s default level.'
                              WHEN p_min = -1 THEN 'Use -1 for no limit.'
                              ELSE format('Give at least %s.', p_min) END;
    END IF;
    RETURN v_num::bigint;
END $$;

-- Topic configuration: Kafka's key names, values as JSON numbers or as
-- strings with a unit ('7d', '512MB').  Returns the config normalised to
-- plain numbers and booleans; any bad key or value is an MQ004 error.
CREATE FUNCTION mq.validate_config(config jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_key text;
    v_val jsonb;
    v_kind text;
    v_min numeric;
    v_max numeric;
    v_out jsonb := '{}';
BEGIN
    IF config IS NULL OR jsonb_typeof(config) <> 'object' THEN
        RAISE EXCEPTION 'topic config must be a JSON object'
            USING ERRCODE = 'MQ004', HINT = 'For example ''{"retention.ms": "7d", "segment.bytes": "256MB"}''.';
    END IF;
    FOR v_key, v_val IN SELECT * FROM jsonb_each(config) LOOP
        SELECT k.kind, k.min, k.max INTO v_kind, v_min, v_max FROM mq._config_key(v_key) k;
        IF v_kind = 'bool' THEN
            IF jsonb_typeof(v_val) = 'boolean' THEN
                v_out := v_out || jsonb_build_object(v_key, v_val);
            ELSIF jsonb_typeof(v_val) = 'string' AND lower(v_val #>> '{}') IN ('true', 'false') THEN
                v_out := v_out || jsonb_build_object(v_key, lower(v_val #>> '{}')::boolean);
            ELSE
                RAISE EXCEPTION 'invalid value % for "%"', mq._config_shown(v_val), v_key
                    USING ERRCODE = 'MQ004', HINT = 'Use true or false.';
            END IF;
        ELSIF v_kind = 'tstype' THEN
            IF v_val NOT IN ('"CreateTime"'::jsonb, '"LogAppendTime"'::jsonb) THEN
                RAISE EXCEPTION 'invalid value % for "message.timestamp.type"', mq._config_shown(v_val)
                    USING ERRCODE = 'MQ004', HINT = 'Use "CreateTime" or "LogAppendTime".';
            END IF;
            v_out := v_out || jsonb_build_object(v_key, v_val);
        ELSIF v_kind = 'policy' THEN
            v_out := v_out || mq._validate_compaction_config(v_key, v_val);
        ELSIF v_kind IN ('compression', 'version', 'replicas') THEN
            v_out := v_out || jsonb_build_object(v_key, mq._config_text(v_key, v_val, v_kind));
        ELSE
            v_out := v_out || jsonb_build_object(v_key, mq._config_number(v_key, v_val, v_kind, v_min, v_max));
        END IF;
    END LOOP;
    -- mq has no tiered storage: as a Kafka broker without it
    IF (v_out->>'remote.storage.enable')::boolean THEN
        RAISE EXCEPTION 'tiered storage is not supported: "remote.storage.enable" must be false'
            USING ERRCODE = 'MQ004', HINT = 'mq keeps every segment in PostgreSQL.';
    END IF;
    -- Kafka's LogConfig.validateValues
    IF coalesce((v_out->>'min.compaction.lag.ms')::bigint, 0)
       > coalesce((v_out->>'max.compaction.lag.ms')::bigint, 9223372036854775807) THEN
        RAISE EXCEPTION 'min.compaction.lag.ms (%) is larger than max.compaction.lag.ms (%)',
            v_out->>'min.compaction.lag.ms', v_out->>'max.compaction.lag.ms'
            USING ERRCODE = 'MQ004', HINT = 'A record must be allowed to wait the minimum before it must be compacted.';
    END IF;
    RETURN v_out;
END $$;
COMMENT ON FUNCTION mq.validate_config(jsonb) IS
    'checks topic config keys and values; returns them normalised (units resolved)';

CREATE FUNCTION mq.murmur2(data bytea) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_murmur2_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mq.murmur2(bytea) IS 'Kafka''s murmur2 hash (seed 0x9747b28c)';

CREATE FUNCTION mq.partition_for(topic text, key bytea) RETURNS integer
    AS 'MODULE_PATHNAME', 'mq_partition_for' LANGUAGE C STABLE;
CREATE FUNCTION mq.partition_for(topic text, key text) RETURNS integer
    AS 'SELECT mq.partition_for($1, pg_catalog.convert_to($2, ''UTF8''))'
    LANGUAGE SQL STABLE;

-- May the current user DESCRIBE this topic or group (src/acl.c)?  The
-- views show only what it may.  COST 10: a call (about 0.7 us, a lookup
-- in the rights cache) costs as much as ten operators, and at the default
-- 1 the planner read a view's few hundred topics whole, this filter on
-- each, rather than probe the name's index (docs/design.md, "Views joined
-- by their keys").
CREATE FUNCTION mq._describable(resource_type text, resource_name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_describable_sql' LANGUAGE C STABLE STRICT COST 10;

CREATE FUNCTION mq._refuse_log_change() RETURNS trigger
    AS 'MODULE_PATHNAME', 'mq_refuse_log_change' LANGUAGE C;

CREATE FUNCTION mq._invalidate(rel regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_invalidate' LANGUAGE C STRICT;

CREATE FUNCTION mq._lock_partition(topic_id integer, partition integer) RETURNS void
    AS 'MODULE_PATHNAME', 'mq_lock_partition_sql' LANGUAGE C STRICT;
CREATE FUNCTION mq._try_lock_partition(topic_id integer, partition integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'mq_try_lock_partition_sql' LANGUAGE C STRICT;

CREATE FUNCTION mq._log_end_offset(topic_id integer, partition integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'mq_log_end_offset_sql' LANGUAGE C STRICT;

