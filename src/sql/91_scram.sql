-------------------------------------------------------------------------------
-- SCRAM credentials for Kafka clients of mq-kafka (SASL/SCRAM-SHA-256 and
-- SCRAM-SHA-512, RFC 5802/7677, Kafka's KIP-84; docs/kafka.md, "SCRAM").
--
-- mq.scram_credential keeps per user and mechanism only the verifier: a
-- random salt, the iteration count, StoredKey and ServerKey (src/scram.c
-- computes them), never the password.  Nobody but the extension owner
-- reads the table.  Credentials are managed by administrators (ALTER on
-- the cluster in mq's authorization, 90_acl.sql) and by a user for its
-- own name (current_user), through mq.set_scram_credential /
-- mq.drop_scram_credential; mq.scram_credentials lists them without keys
-- (all of them to DESCRIBE on the cluster, a user its own).
--
-- mq-kafka reads a verifier through mq.scram_lookup, which PUBLIC may not
-- execute: grant it to the role mq-kafka connects as.  For a user
-- without a credential it returns a fake verifier whose salt is derived
-- from mq.scram_secret, so that an exchange does not tell whether the
-- user exists.
-------------------------------------------------------------------------------

CREATE TABLE mq.scram_credential (
    user_name  text NOT NULL CHECK (user_name <> ''),
    mechanism  text NOT NULL CHECK (mechanism IN ('SCRAM-SHA-256', 'SCRAM-SHA-512')),
    iterations integer NOT NULL CHECK (iterations BETWEEN 4096 AND 16384),
    salt       bytea NOT NULL CHECK (length(salt) >= 16),
    stored_key bytea NOT NULL,
    server_key bytea NOT NULL,
    set_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_name, mechanism)
);
REVOKE ALL ON mq.scram_credential FROM PUBLIC;
-- credentials are the user's data: pg_dump keeps them
SELECT pg_catalog.pg_extension_config_dump('mq.scram_credential', '');

-- the key of the fake salts for unknown users (one row, made at install)
CREATE TABLE mq.scram_secret (
    secret bytea NOT NULL CHECK (length(secret) = 32),
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row)
);
REVOKE ALL ON mq.scram_secret FROM PUBLIC;

CREATE FUNCTION mq._scram_keys(mechanism text, secret bytea, salt bytea, iterations integer,
                               secret_is_salted boolean, OUT stored_key bytea, OUT server_key bytea)
    AS 'MODULE_PATHNAME', 'mq_scram_keys' LANGUAGE C STRICT;
CREATE FUNCTION mq._scram_random(n integer) RETURNS bytea
    AS 'MODULE_PATHNAME', 'mq_scram_random' LANGUAGE C STRICT;

-- May p_caller manage user_name's credentials?  Administrators, and the
-- user itself.
CREATE FUNCTION mq._authorize_scram(p_caller oid, p_user text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_user IS NOT NULL AND p_user OPERATOR(pg_catalog.=) (
            SELECT r.rolname::text FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) p_caller) THEN
        RETURN;
    END IF;
    IF mq._has_privilege(p_caller, 'cluster', 'kafka-cluster', 'alter') THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'permission denied to manage the scram credentials of "%"', p_user
        USING ERRCODE = '42501',
              HINT = 'Credentials are managed by an administrator (alter on the cluster) or by the user itself.';
END $$;

-- the mechanism's canonical name, or MQ061
CREATE FUNCTION mq._scram_mechanism(p_mechanism text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF upper(p_mechanism) IN ('SCRAM-SHA-256', 'SCRAM-SHA-512') THEN
        RETURN upper(p_mechanism);
    END IF;
    RAISE EXCEPTION 'unsupported scram mechanism "%"', p_mechanism
        USING ERRCODE = 'MQ061', HINT = 'Use SCRAM-SHA-256 or SCRAM-SHA-512.';
END $$;

-- What every way of setting a credential checks first (the caller's
-- right, then the parameters, each with its SQLSTATE); returns the
-- mechanism's canonical name.
CREATE FUNCTION mq._scram_check(p_caller oid, p_user text, p_mechanism text, p_iterations integer,
                                p_salt bytea) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_mech text;
BEGIN
    IF p_user IS NULL OR p_mechanism IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN p_user IS NULL THEN 'user_name' ELSE 'mechanism' END
            USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._authorize_scram(p_caller, p_user);
    v_mech := mq._scram_mechanism(p_mechanism);
    IF p_user = '' THEN
        RAISE EXCEPTION 'user name must not be empty' USING ERRCODE = 'MQ060';
    END IF;
    IF p_iterations IS NULL OR p_salt IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN p_iterations IS NULL THEN 'iterations' ELSE 'salt' END
            USING ERRCODE = 'MQ010';
    END IF;
    IF p_iterations NOT BETWEEN 4096 AND 16384 THEN
        RAISE EXCEPTION 'iterations must be from 4096 to 16384, not %', p_iterations
            USING ERRCODE = 'MQ060', HINT = 'Kafka takes 4096 to 16384 iterations.';
    END IF;
    IF length(p_salt) < 16 THEN
        RAISE EXCEPTION 'salt must be at least 16 bytes' USING ERRCODE = 'MQ060';
    END IF;
    RETURN v_mech;
END $$;

-- Store a checked verifier, replacing the user's credential for that
-- mechanism.
CREATE FUNCTION mq._scram_store(p_user text, p_mechanism text, p_iterations integer, p_salt bytea,
                                p_stored_key bytea, p_server_key bytea) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_len integer := CASE p_mechanism WHEN 'SCRAM-SHA-512' THEN 64 ELSE 32 END;
BEGIN
    IF p_stored_key IS NULL OR p_server_key IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN p_stored_key IS NULL THEN 'stored_key' ELSE 'server_key' END
            USING ERRCODE = 'MQ010';
    END IF;
    IF length(p_stored_key) <> v_len OR length(p_server_key) <> v_len THEN
        RAISE EXCEPTION 'stored and server keys must be % bytes each for %', v_len, p_mechanism
            USING ERRCODE = 'MQ060';
    END IF;
    INSERT INTO mq.scram_credential AS c (user_name, mechanism, iterations, salt, stored_key, server_key)
    VALUES (p_user, p_mechanism, p_iterations, p_salt, p_stored_key, p_server_key)
    ON CONFLICT (user_name, mechanism) DO UPDATE
       SET iterations = excluded.iterations, salt = excluded.salt, stored_key = excluded.stored_key,
           server_key = excluded.server_key, set_at = excluded.set_at;
END $$;

-- Store the verifier of a password (p_salted false) or of Kafka's
-- SaltedPassword, its parameters checked (the mechanism's canonical name).
CREATE FUNCTION mq._scram_store_secret(p_user text, p_mechanism text, p_iterations integer, p_salt bytea,
                                       p_secret bytea, p_salted boolean) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_keys record;
BEGIN
    IF p_secret IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN p_salted THEN 'salted_password' ELSE 'password' END
            USING ERRCODE = 'MQ010';
    END IF;
    IF length(p_secret) = 0 THEN
        RAISE EXCEPTION 'password must not be empty' USING ERRCODE = 'MQ060';
    END IF;
    v_keys := mq._scram_keys(p_mechanism, p_secret, p_salt, p_iterations, p_salted);
    PERFORM mq._scram_store(p_user, p_mechanism, p_iterations, p_salt, v_keys.stored_key, v_keys.server_key);
END $$;

CREATE FUNCTION mq_internal.set_scram_credential(user_name text, mechanism text, password text,
                                                 iterations integer, p_caller oid)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_salt bytea := mq._scram_random(32);
BEGIN
    PERFORM mq._scram_store_secret(user_name, mq._scram_check(p_caller, user_name, mechanism, iterations, v_salt),
                                   iterations, v_salt, convert_to(password, 'UTF8'), false);
END $$;

CREATE FUNCTION mq_internal.set_scram_credential_salted(user_name text, mechanism text,
                                                        iterations integer, salt bytea,
                                                        salted_password bytea, p_caller oid)
RETURNS void LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._scram_store_secret(user_name, mq._scram_check(p_caller, user_name, mechanism, iterations, salt),
                                    iterations, salt, salted_password, true) $$;

CREATE FUNCTION mq_internal.set_scram_keys(user_name text, mechanism text, iterations integer,
                                           salt bytea, stored_key bytea, server_key bytea,
                                           p_caller oid)
RETURNS void LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT mq._scram_store(user_name, mq._scram_check(p_caller, user_name, mechanism, iterations, salt),
                             iterations, salt, stored_key, server_key) $$;

CREATE FUNCTION mq_internal.drop_scram_credential(user_name text, mechanism text, p_caller oid)
RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_mech text;
    v_n integer;
BEGIN
    IF drop_scram_credential.user_name IS NULL THEN
        RAISE EXCEPTION 'user_name must not be null' USING ERRCODE = 'MQ010';
    END IF;
    PERFORM mq._authorize_scram(p_caller, user_name);
    IF mechanism IS NOT NULL THEN
        v_mech := mq._scram_mechanism(mechanism);
    END IF;
    DELETE FROM mq.scram_credential c
     WHERE c.user_name OPERATOR(pg_catalog.=) drop_scram_credential.user_name
       AND (v_mech IS NULL OR c.mechanism OPERATOR(pg_catalog.=) v_mech);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = 0 THEN
        RAISE EXCEPTION 'user "%" has no % scram credential', user_name, coalesce(v_mech, 'such')
            USING ERRCODE = 'MQ062';
    END IF;
    RETURN v_n;
END $$;

-- set (or replace) user_name's credential for mechanism from a password;
-- iterations from 4096 (Kafka's minimum and default) to 16384
CREATE FUNCTION mq.set_scram_credential(user_name text, mechanism text, password text,
                                        iterations integer DEFAULT 4096)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
-- the same from Kafka's SaltedPassword (AlterUserScramCredentials)
CREATE FUNCTION mq.set_scram_credential_salted(user_name text, mechanism text, iterations integer,
                                               salt bytea, salted_password bytea)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
-- the same from the verifier itself (StoredKey and ServerKey), computed by
-- the client so that neither the password nor anything that logs in with
-- it reaches the server or its log (mqctl scram set, mq-kafka)
CREATE FUNCTION mq.set_scram_keys(user_name text, mechanism text, iterations integer,
                                  salt bytea, stored_key bytea, server_key bytea)
    RETURNS void AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;
-- drop the credential for mechanism (NULL: both); returns how many went
CREATE FUNCTION mq.drop_scram_credential(user_name text, mechanism text DEFAULT NULL)
    RETURNS integer AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C VOLATILE;

CREATE FUNCTION mq_internal.list_scram_credentials(p_caller oid)
RETURNS TABLE (user_name text, mechanism text, iterations integer, set_at timestamptz)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT c.user_name, c.mechanism, c.iterations, c.set_at
  FROM mq.scram_credential c
 WHERE mq._has_privilege(p_caller, 'cluster', 'kafka-cluster', 'describe')
    OR c.user_name OPERATOR(pg_catalog.=) (
           SELECT r.rolname::text FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) p_caller)
$$;
CREATE FUNCTION mq.list_scram_credentials()
RETURNS TABLE (user_name text, mechanism text, iterations integer, set_at timestamptz)
    AS 'MODULE_PATHNAME', 'mq_call_as_owner' LANGUAGE C STABLE;
-- without salts or keys; security_barrier, as the other filtered views
CREATE VIEW mq.scram_credentials WITH (security_barrier) AS
SELECT user_name, mechanism, iterations, set_at FROM mq.list_scram_credentials();

-- mq-kafka's read of a verifier (PUBLIC may not execute it).  Unknown
-- users get a salt derived from mq.scram_secret (stable per user and
-- mechanism) and keys that no proof matches.
CREATE FUNCTION mq.scram_lookup(user_name text, mechanism text,
                                OUT salt bytea, OUT iterations integer,
                                OUT stored_key bytea, OUT server_key bytea)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_len integer := CASE upper(mechanism) WHEN 'SCRAM-SHA-512' THEN 64 ELSE 32 END;
BEGIN
    SELECT c.salt, c.iterations, c.stored_key, c.server_key
      INTO salt, iterations, stored_key, server_key
      FROM mq.scram_credential c
     WHERE c.user_name OPERATOR(pg_catalog.=) scram_lookup.user_name
       AND c.mechanism OPERATOR(pg_catalog.=) upper(scram_lookup.mechanism);
    IF NOT FOUND THEN
        SELECT substr(pg_catalog.sha256(s.secret OPERATOR(pg_catalog.||)
                                        convert_to(upper(scram_lookup.mechanism) || ':' || scram_lookup.user_name, 'UTF8')), 1, 32)
          INTO salt FROM mq.scram_secret s;
        iterations := 4096;
        stored_key := mq._scram_random(v_len);
        server_key := mq._scram_random(v_len);
    END IF;
END $$;
REVOKE ALL ON FUNCTION mq.scram_lookup(text, text) FROM PUBLIC;

INSERT INTO mq.scram_secret (secret) VALUES (mq._scram_random(32));
