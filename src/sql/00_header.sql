-- mq install script, built from src/sql/*.sql in name order (one file per
-- area, so that each can be edited alone).
--
-- Catalog tables, the record type, administration in PL/pgSQL and the hot
-- paths (produce, fetch, offsets) in C.  Storage tables live in schema
-- mq_log and are named from ids, never from topic names.  The update
-- script from the previous release is built from src/update/ and these
-- files by scripts/update-sql.pl (docs/operations.md, "Upgrades").

\echo Use "CREATE EXTENSION mq" to load this file. \quit

-- CREATE EXTENSION (schema = mq in mq.control) reuses a schema mq that
-- already exists.  Whoever owns such a schema, or put objects in it,
-- would control what superusers and the maintenance worker run (the
-- CVE-2022-2625 class): install only into a schema that the installing
-- role owns and that holds nothing yet.
DO $$
DECLARE
    v_nsp oid := (SELECT n.oid FROM pg_catalog.pg_namespace n
                   WHERE n.nspname OPERATOR(pg_catalog.=) 'mq');
BEGIN
    IF (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) v_nsp)
       OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
                                 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION 'schema "mq" exists and is owned by another role'
            USING ERRCODE = '42501',
                  HINT = 'Drop the schema, or have its owner install the extension; mq creates its own schema.';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) v_nsp)
       OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) v_nsp)
       OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.typnamespace OPERATOR(pg_catalog.=) v_nsp)
       OR EXISTS (SELECT 1 FROM pg_catalog.pg_operator o WHERE o.oprnamespace OPERATOR(pg_catalog.=) v_nsp) THEN
        RAISE EXCEPTION 'schema "mq" exists and is not empty'
            USING ERRCODE = '42501',
                  HINT = 'mq installs only into a schema of its own.';
    END IF;
END $$;

CREATE SCHEMA mq_log;
COMMENT ON SCHEMA mq_log IS 'mq storage: one partitioned table per topic, one per partition, one per segment';
REVOKE ALL ON SCHEMA mq_log FROM PUBLIC;

-- Implementations that run as the owner behind the C wrappers of
-- src/owner.c: nobody else may use the schema, so their checks cannot be
-- bypassed by calling them directly.
CREATE SCHEMA mq_internal;
COMMENT ON SCHEMA mq_internal IS 'mq: implementations of checked administration and group functions (owner only)';
REVOKE ALL ON SCHEMA mq_internal FROM PUBLIC;
