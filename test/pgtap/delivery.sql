-- The delivery semantics of docs/delivery.md, each with a simulated failure.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SELECT plan(21);

SELECT mq.create_topic('orders', 1);
SELECT mq.send_batch('orders', NULL, ARRAY['o1', 'o2', 'o3']);

-- at-most-once: commit, then the client dies before processing
BEGIN;
SELECT is((SELECT count(*) FROM mq.poll('amo', 'orders', 100)), 3::bigint, 'at-most-once: poll returns the records');
SELECT is(mq.commit_polled('amo', 'orders'), 1, 'at-most-once: commit_polled commits one partition');
COMMIT;
-- (the client dies here)
SELECT is((SELECT count(*) FROM mq.poll('amo', 'orders', 100)), 0::bigint,
          'at-most-once: records are not delivered again after a failure following the commit');

-- at-least-once: the client dies after processing, before committing
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.poll('alo', 'orders', 2)), 'o1,o2',
          'at-least-once: first poll');
-- (the client dies here: no commit)
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.poll('alo', 'orders', 2)), 'o1,o2',
          'at-least-once: the same records are delivered again');
SELECT lives_ok($$SELECT mq.commit_offset('alo', 'orders', 0, 2)$$, 'at-least-once: commit after processing');
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.poll('alo', 'orders', 2)), 'o3',
          'at-least-once: the next poll continues after the commit');

-- auto-commit
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.poll('auto', 'orders', 2, auto_commit => true)),
          'o1,o2', 'auto-commit: first poll commits nothing yet');
SELECT is(mq.committed_offset('auto', 'orders', 0), NULL::bigint, 'auto-commit: no position after the first poll');
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',') FROM mq.poll('auto', 'orders', 2, auto_commit => true)),
          'o3', 'auto-commit: second poll returns the rest');
SELECT is(mq.committed_offset('auto', 'orders', 0), 2::bigint,
          'auto-commit: the second poll committed what the first returned');

-- exactly-once: a failure before COMMIT leaves no trace; then it runs once
CREATE TABLE invoices (order_id text PRIMARY KEY);
SELECT mq.create_topic('invoices', 1);
BEGIN;
CREATE TEMP TABLE batch ON COMMIT DROP AS SELECT * FROM mq.poll('billing', 'orders', 100);
INSERT INTO invoices SELECT convert_from(value, 'UTF8') FROM batch;
SELECT mq.send_batch('invoices', NULL, array_agg(value ORDER BY msg_offset)) FROM batch;
SELECT mq.commit_polled('billing', 'orders');
ROLLBACK;   -- the worker died
SELECT is((SELECT count(*) FROM invoices) + (SELECT log_end_offset FROM mq.partitions WHERE topic = 'invoices')
          + coalesce(mq.committed_offset('billing', 'orders', 0), 0), 0::bigint,
          'exactly-once: a failed transaction wrote no invoice, no output record and no position');
BEGIN;
CREATE TEMP TABLE batch ON COMMIT DROP AS SELECT * FROM mq.poll('billing', 'orders', 100);
INSERT INTO invoices SELECT convert_from(value, 'UTF8') FROM batch;
SELECT mq.send_batch('invoices', NULL, array_agg(value ORDER BY msg_offset)) FROM batch;
SELECT mq.commit_polled('billing', 'orders');
COMMIT;
SELECT is((SELECT string_agg(order_id, ',' ORDER BY order_id) FROM invoices), 'o1,o2,o3',
          'exactly-once: the retry wrote every invoice once');
SELECT is((SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.fetch('invoices', 0, 0)),
          'o1,o2,o3', 'exactly-once: and every output record once');
SELECT is((SELECT count(*) FROM mq.poll('billing', 'orders', 100)), 0::bigint,
          'exactly-once: the position moved with them');

-- exactly-once with savepoints: what a rolled-back subtransaction polled
-- or committed is taken back with it, as everything else it did
SELECT mq.create_topic('undo', 1);
SELECT mq.send_batch('undo', NULL, ARRAY['u0', 'u1', 'u2', 'u3', 'u4', 'u5']);
CREATE FUNCTION pg_temp.polled(g text, t text, n integer, auto boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $$
    SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY msg_offset) FROM mq.poll(g, t, n, auto_commit => auto)
$$;
BEGIN;
SELECT pg_temp.polled('sp', 'undo', 2);
SAVEPOINT s;
SELECT pg_temp.polled('sp', 'undo', 2);
ROLLBACK TO s;
SELECT is(pg_temp.polled('sp', 'undo', 2), 'u2,u3',
          'savepoints: after ROLLBACK TO SAVEPOINT the rolled-back poll''s records come again');
DO $$ BEGIN PERFORM mq.poll('sp', 'undo', 2); RAISE EXCEPTION 'failed'; EXCEPTION WHEN raise_exception THEN END $$;
SELECT is(pg_temp.polled('sp', 'undo', 1), 'u4', 'savepoints: so do those of a poll in a PL/pgSQL block that failed');
SAVEPOINT s2;
SELECT mq.commit_offset('sp', 'undo', 0, 1);
ROLLBACK TO s2;
SELECT is(pg_temp.polled('sp', 'undo', 1), 'u5', 'savepoints: a commit_offset rolled back does not move the position');
SELECT is(mq.commit_polled('sp', 'undo'), 1, 'savepoints: commit_polled commits the partition');
COMMIT;
SELECT is(mq.committed_offset('sp', 'undo', 0), 6::bigint, 'savepoints: at the position after u5');

-- auto-commit: a batch returned only in a rolled-back transaction is returned again
SELECT pg_temp.polled('ac', 'undo', 2, true);
BEGIN;
SELECT pg_temp.polled('ac', 'undo', 2, true);
ROLLBACK;
SELECT is(pg_temp.polled('ac', 'undo', 2, true), 'u2,u3',
          'auto-commit: the rolled-back poll''s batch comes again, not counted as delivered');

SELECT * FROM finish();
