-- Exactly-once across nodes, the SQL side (src/sql/64_twophase.sql,
-- src/twophase.c): mq.txn_finish finishes mq's own prepared transactions
-- only, never inside a transaction block; the decisions on the
-- coordinator move only forward (an abort where no decision exists, a
-- commit refused after an abort); recovery's rules; privileges.
BEGIN;
SELECT plan(34);

-- mq.txn_finish
SELECT throws_ok($$SELECT mq.txn_finish('app-gid-1', true)$$, 'MQ050', NULL,
                 'a gid that is not mq''s is refused');
SELECT throws_ok($$SELECT mq.txn_finish('mq:t:0', true)$$, 'MQ052', NULL,
                 'inside a transaction block it is refused, like COMMIT PREPARED');
SELECT throws_ok($$SELECT mq.txn_finish(NULL, true)$$, 'MQ010', NULL, 'a null gid is refused');
SELECT is((SELECT prosecdef FROM pg_proc WHERE oid = 'mq.txn_finish(text, boolean)'::regprocedure),
          true, 'mq.txn_finish is SECURITY DEFINER');
SELECT ok((SELECT proconfig FROM pg_proc WHERE oid = 'mq.txn_finish(text, boolean)'::regprocedure)
          @> ARRAY['search_path=pg_catalog, pg_temp'], 'with a pinned search_path');
SELECT is(mq.txn_notes(), '[]'::jsonb, 'a transaction that wrote nothing replicated has no notes');

-- decisions
SELECT throws_ok($$SELECT mq_coord.txn_decide('a:b', 'p', '[]')$$, 'MQ050', NULL,
                 'a transaction id holding ":" is refused');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t1', 'p', '[{"gid": "mq:other:0", "kind": "output"}]')$$,
                 'MQ054', NULL, 'a participant of another transaction is refused');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t1', 'p', '[{"gid": "mq:t1:0", "kind": "x"}]')$$,
                 'MQ054', NULL, 'a participant of no known kind is refused');
SELECT is(mq_coord.txn_decide('t1', 'p',
          '[{"gid": "mq:t1:0", "kind": "offsets", "broker": 1, "partitions": []},
            {"gid": "mq:t1:1", "kind": "output", "broker": 2,
             "partitions": [{"topic": "o", "partition": 0, "epoch": 3, "records_end": 10}]}]'),
          'commit', 'a decision is recorded');
SELECT is(mq_coord.txn_decide('t1', 'p', '[]'), 'commit', 'deciding again is a retry');
SELECT is(mq_coord.txn_abort('t1'), 'commit', 'an abort after the decision does not take');
SELECT throws_ok($$SELECT mq_coord.txn_done('t1')$$, 'MQ054', NULL,
                 'not done while an output is not durable');
SELECT throws_ok($$SELECT mq_coord.txn_done('nope')$$, 'MQ053', NULL, 'no decision, nothing to finish');
SELECT is(mq_coord.txn_abort('t2', 'test'), 'abort', 'an abort where no decision exists takes');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t2', 'p', '[]')$$, 'MQ051', NULL,
                 'a decision after an abort is refused');

-- a newer run of the same transactional id fences the older one's decisions
SELECT mq_coord.init_producer('pipe-x');
SELECT mq_coord.init_producer('pipe-x');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t4', 'pipe-x', '[]', 0)$$, 'MQ012', NULL,
                 'a decision of an older epoch of the owner is fenced');
SELECT is(mq_coord.txn_decide('t5', 'pipe-x', '[]', 1), 'commit', 'the current epoch decides');

-- recovery's rules (broker 2 leads o/0 in epoch 3 on the coordinator)
INSERT INTO mq_coord.topic (topic, partitions) VALUES ('o', 1);
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('o', 0, '{2,1}', 2, 3, '{2,1}');
SELECT is(mq_coord.txn_resolve('mq:t3:0', 1, 10, 3000), 'wait', 'undecided and young: wait');
SELECT is(mq_coord.txn_resolve('mq:t3:0', 1, 5000, 3000), 'rollback',
          'undecided past txn.timeout.ms: roll back');
SELECT is(mq_coord.txn_state('t3'), 'abort', '... after recording the abort');
SELECT is(mq_coord.txn_resolve('mq:t2:0', 1, 10, 3000), 'rollback', 'aborted: roll back');
SELECT is(mq_coord.txn_resolve('mq:t1:1', 2, 10, 3000), 'commit',
          'a decided output still led in its epoch: commit');
SELECT is(mq_coord.txn_resolve('mq:t1:1', 1, 10, 3000), 'rollback',
          'a decided output on a node that no longer leads: roll back (the client sends it again)');
SELECT is(mq_coord.txn_resolve('mq:t1:0', 1, 10, 3000), 'wait',
          'the offsets part waits for the outputs');
SELECT is(mq_coord.txn_resolve('mq:t1:7', 1, 10, 3000), 'rollback', 'a gid the decision does not list: roll back');
SELECT is(mq_coord.txn_output_durable('t1', 'mq:t1:1', 1), 'commit',
          'a broker that does not lead the output cannot report it durable');
SELECT is(mq_coord.txn_output_durable('t1', 'mq:t1:1', 2), 'outputs_durable',
          'its leader can: every output is durable');
SELECT is(mq_coord.txn_resolve('mq:t1:0', 1, 10, 3000), 'commit', 'then the offsets part commits');

-- privileges
SELECT ok(NOT has_function_privilege('public', 'mq.txn_finish(text, boolean)', 'EXECUTE'),
          'PUBLIC cannot finish prepared transactions');
SELECT ok(NOT has_function_privilege('public', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'mq_coord.txn_decide(text, text, jsonb, integer)', 'EXECUTE'),
          'nor decide or resolve');
CREATE ROLE mq_twophase_test_broker;
SELECT mq.grant_broker('mq_twophase_test_broker');
SELECT mq_coord.grant_broker('mq_twophase_test_broker');
SELECT ok(has_function_privilege('mq_twophase_test_broker', 'mq.txn_finish(text, boolean)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_broker', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE')
          AND NOT has_function_privilege('mq_twophase_test_broker', 'mq_coord.txn_decide(text, text, jsonb, integer)', 'EXECUTE'),
          'a broker may finish and resolve, not decide');

CREATE ROLE mq_twophase_test_client;
SELECT ok(NOT has_function_privilege('mq_twophase_test_client', 'mq.txn_notes()', 'EXECUTE'),
          'a role without the grant cannot read notes or finish');
SELECT mq.grant_pipeline('mq_twophase_test_client');
SELECT mq_coord.grant_pipeline('mq_twophase_test_client');
SELECT ok(has_function_privilege('mq_twophase_test_client', 'mq.txn_finish(text, boolean)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq.txn_notes()', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq_coord.txn_decide(text, text, jsonb, integer)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq_coord.init_producer(text)', 'EXECUTE')
          AND NOT has_function_privilege('mq_twophase_test_client', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE'),
          'a pipeline client may finish, read its notes and decide, not resolve');

SELECT * FROM finish();
ROLLBACK;
