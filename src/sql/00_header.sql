-- mq install script, built from src/sql/*.sql in name order (one file per
-- area, so that each can be edited alone).
--
-- Catalog tables, the record type, administration in PL/pgSQL and the hot
-- paths (produce, fetch, offsets) in C.  Storage tables live in schema
-- mq_log and are named from ids, never from topic names.  Upgrade scripts
-- are src/mq--OLD--NEW.sql (see docs/operations.md).

\echo Use "CREATE EXTENSION mq" to load this file. \quit

CREATE SCHEMA mq_log;
COMMENT ON SCHEMA mq_log IS 'mq storage: one partitioned table per topic, one per partition, one per segment';
REVOKE ALL ON SCHEMA mq_log FROM PUBLIC;
