-------------------------------------------------------------------------------
-- Update 0.1.0 -> 0.2.0, the part written by hand (scripts/update-sql.pl
-- appends every function, procedure, view, comment and grant of src/sql
-- after it, re-run as CREATE OR REPLACE; docs/operations.md, "Upgrades").
--
-- Here goes whatever src/sql changed since 0.1.0 that cannot simply be run
-- again, in this order:
--   1. DROPs that CREATE OR REPLACE cannot do: a function or procedure
--      that goes, or whose return type, OUT columns, argument names or
--      defaults change (DROP FUNCTION mq.f(argtypes)); a view whose columns
--      change or that depends on something dropped (DROP VIEW; part 2
--      creates it again, with its grants and comments)
--   2. catalog changes, written as the install script has them: CREATE
--      TABLE / TYPE / INDEX / SEQUENCE / TRIGGER, ALTER TABLE ... ADD
--      COLUMN (new columns go at the end of CREATE TABLE in src/sql too,
--      where ADD COLUMN puts them), constraints, pg_extension_config_dump
--      for new catalog tables and sequences, data fixes (UPDATE mq.topic
--      ...), and setval for identity sequences.
-- Part 2 runs after this part, so a new function may use a new column;
-- what needs part 2's functions (CREATE TRIGGER ... EXECUTE FUNCTION of a
-- new trigger function, a data fix calling a new function) goes after a
-- line "-- @definitions", where part 2 is put then.
-- test/cli/upgrade.sh compares the updated schema with a fresh install of
-- 0.2.0 and fails, naming the difference, until this part is complete.
-- What to carry: `perl scripts/update-sql.pl --changed-since
-- src/release/mq--0.1.0.sql src/sql/*.sql` prints every statement part 2
-- cannot re-run that 0.1.0 does not have word for word.
-------------------------------------------------------------------------------

-- the produce contract (31_produce_acks.sql): what mq.produce_records returns
CREATE TYPE mq.produced AS (partition integer, msg_offset bigint,
                            await_epoch integer, await_min_isr integer);

-- compaction and retention (01_catalog.sql, 72_compaction.sql): a
-- segment's last modification, its age once compaction emptied it
ALTER TABLE mq.segment ADD COLUMN last_modified timestamptz;
