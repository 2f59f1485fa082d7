-- Exactly-once across nodes, the SQL side (src/sql/64_twophase.sql,
-- src/twophase.c): mq.txn_finish finishes mq's own prepared transactions
-- only, never inside a transaction block; the decisions on the
-- coordinator move only forward (an abort where no decision exists, a
-- commit refused after an abort); recovery's rules; a decision's output
-- records and their redo by recovery (64_twophase_redo.sql); a new epoch
-- of a pipeline refused while its decided step is open; privileges.
BEGIN;
SELECT plan(81);

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

-- the decision stores the output records; recovery sends them again on
-- the new leader of a partition whose leader changed
SELECT throws_ok($$SELECT mq_coord.txn_decide('t6', 'p', '[{"gid": "mq:t6:1", "kind": "output"}]', NULL,
                   '[{"gid": "mq:t6:1", "topic": "o", "partition": 0, "producer_id": 7, "producer_epoch": 0,
                      "base_sequence": 0, "count": 2}]', ARRAY['\x01']::bytea[], ARRAY['\x02']::bytea[])$$,
                 'MQ055', NULL, 'output counts that do not add up to the records are refused');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t6', 'p', '[{"gid": "mq:t6:1", "kind": "output"}]', NULL,
                   '[{"gid": "mq:t6:9", "topic": "o", "partition": 0, "producer_id": 7, "producer_epoch": 0,
                      "base_sequence": 0, "count": 1}]', ARRAY['\x01']::bytea[], ARRAY['\x02']::bytea[])$$,
                 'MQ055', NULL, 'outputs of a part the decision does not list are refused');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t6', 'p', '[{"gid": "mq:t6:1", "kind": "output"}]', NULL,
                   '[{"gid": "mq:t6:1", "topic": "o", "partition": 0, "producer_id": 7, "producer_epoch": 0,
                      "base_sequence": 0, "count": 1},
                     {"gid": "mq:t6:1", "topic": "o", "partition": 0, "producer_id": 7, "producer_epoch": 0,
                      "base_sequence": 1, "count": 1}]',
                   ARRAY['\x01', '\x03']::bytea[], ARRAY['\x02', '\x04']::bytea[])$$,
                 'MQ055', NULL, 'a partition given twice is refused');
SELECT is(mq_coord.txn_state('t6'), NULL, 'nothing was decided');
INSERT INTO mq_coord.topic (topic, partitions) VALUES ('o2', 2);
INSERT INTO mq_coord.partition (topic, partition, replicas, leader, leader_epoch, isr)
VALUES ('o2', 0, '{2,1}', 2, 3, '{2,1}'), ('o2', 1, '{2,1}', 2, 3, '{2,1}');
SELECT mq_coord.init_producer('pipe-y');
SELECT is(mq_coord.txn_decide('t7', 'pipe-y',
          '[{"gid": "mq:t7:0", "kind": "offsets", "broker": 1, "partitions": []},
            {"gid": "mq:t7:1", "kind": "output", "broker": 2,
             "partitions": [{"topic": "o2", "partition": 0, "epoch": 3, "records_end": 2},
                            {"topic": "o2", "partition": 1, "epoch": 3, "records_end": 1}]}]', 0,
          '[{"gid": "mq:t7:1", "topic": "o2", "partition": 0, "producer_id": 7, "producer_epoch": 0,
             "base_sequence": 5, "count": 2},
            {"gid": "mq:t7:1", "topic": "o2", "partition": 1, "producer_id": 7, "producer_epoch": 0,
             "base_sequence": 9, "count": 1}]',
          ARRAY['\x6b31', NULL, '\x6b33']::bytea[], ARRAY['\x7631', '\x7632', '\x7633']::bytea[],
          ARRAY['[["h", "a"]]', NULL, '[["bin", {"base64": "AP8="}], ["none", null]]']::jsonb[],
          ARRAY['2020-01-02 03:04:05.006+00', '2020-01-02 03:04:05.007+00', NULL]::timestamptz[]),
          'commit', 'a decision with output records, their headers and CreateTimes');
SELECT results_eq($$SELECT gid, topic, partition, producer_id, producer_epoch, base_sequence, keys, vals,
                           headers, timestamps
                      FROM mq_coord.txn_output WHERE txn_id = 't7' ORDER BY partition$$,
                  $$VALUES ('mq:t7:1', 'o2', 0, 7::bigint, 0, 5, ARRAY['\x6b31', NULL]::bytea[],
                            ARRAY['\x7631', '\x7632']::bytea[], ARRAY['[["h", "a"]]', NULL]::jsonb[],
                            ARRAY['2020-01-02 03:04:05.006+00', '2020-01-02 03:04:05.007+00']::timestamptz[]),
                           ('mq:t7:1', 'o2', 1, 7::bigint, 0, 9, ARRAY['\x6b33']::bytea[],
                            ARRAY['\x7633']::bytea[],
                            ARRAY['[["bin", {"base64": "AP8="}], ["none", null]]']::jsonb[],
                            ARRAY[NULL]::timestamptz[])$$,
                  'the records of each output partition are stored with the decision, headers and CreateTimes too');
SELECT throws_ok($$SELECT mq_coord.txn_decide('t6', 'p', '[{"gid": "mq:t6:1", "kind": "output"}]', NULL,
                   '[{"gid": "mq:t6:1", "topic": "o", "partition": 0, "producer_id": 7, "producer_epoch": 0,
                      "base_sequence": 0, "count": 1}]', ARRAY['\x01']::bytea[], ARRAY['\x02']::bytea[],
                   ARRAY[NULL, NULL]::jsonb[])$$,
                 'MQ055', NULL, 'headers that are not one per record are refused');
SELECT throws_ok($$SELECT mq_coord.init_producer('pipe-y')$$, 'MQ056', NULL,
                 'a new epoch of the owner is refused while its decided step is open');
SELECT is((SELECT count(*) FROM mq_coord.txn_outputs_moved(1)), 0::bigint,
          'nothing to send again while the part''s broker leads its partitions in their epoch');
UPDATE mq_coord.partition SET leader = 1, leader_epoch = 4 WHERE topic = 'o2' AND partition = 0;
SELECT results_eq($$SELECT topic, partition, epoch, headers, timestamps FROM mq_coord.txn_outputs_moved(1)$$,
                  $$VALUES ('o2', 0, 4, ARRAY['[["h", "a"]]', NULL]::jsonb[],
                            ARRAY['2020-01-02 03:04:05.006+00', '2020-01-02 03:04:05.007+00']::timestamptz[])$$,
                  'the new leader of a moved partition sends its records again, with their headers and CreateTimes');
SELECT results_eq($$SELECT topic, partition, epoch FROM mq_coord.txn_outputs_moved(2)$$,
                  $$VALUES ('o2', 1, 3)$$,
                  '... and so does the old leader for the part''s partition it kept (the part rolls back)');
SELECT is(mq_coord.txn_output_redone('t7', 'o2', 0, 1, 3), 'commit',
          'a report in an epoch that is not the leader''s does not count');
SELECT is(mq_coord.txn_output_redone('t7', 'o2', 0, 1, 4), 'commit',
          'one partition durable: the part is not yet');
SELECT is(mq_coord.txn_output_redone('t7', 'o2', 1, 2, 3), 'outputs_durable',
          'every partition of the part durable: the outputs are');
SELECT is((SELECT count(*) FROM mq_coord.txn_output WHERE txn_id = 't7'), 0::bigint,
          'the records are deleted once every output is durable');
SELECT throws_ok($$SELECT mq_coord.init_producer('pipe-y')$$, 'MQ056', NULL,
                 'a new epoch is still refused while the offsets part is not committed');
SELECT results_eq($$SELECT txn_id, gid FROM mq_coord.txn_offsets_pending(1) WHERE txn_id = 't7'$$,
                  $$VALUES ('t7', 'mq:t7:0')$$,
                  'the offsets part''s broker is asked to report it once committed');
SELECT is(mq_coord.txn_part_committed('mq:t7:1', 2), 'outputs_durable', 'an output part does not end the step');
SELECT is(mq_coord.txn_part_committed('mq:t7:0', 1), 'done', 'committing the offsets part does');
SELECT lives_ok($$SELECT mq_coord.init_producer('pipe-y')$$, 'then the owner gets a new epoch');

-- an offsets part committed on a node that no longer leads the input
-- partition: its current leader commits the offset again
SELECT is(mq_coord.txn_decide('t8', 'p',
          '[{"gid": "mq:t8:0", "kind": "offsets", "broker": 1,
             "partitions": [{"topic": "o", "partition": 0, "epoch": 2, "records_end": -1}],
             "offsets": [{"group": "g", "topic": "o", "partition": 0, "next": 5}]},
            {"gid": "mq:t8:1", "kind": "output", "broker": 2, "partitions": []}]'),
          'commit', 'a step whose input partition (o/0) is led by broker 2 in epoch 3 now');
SELECT is(mq_coord.txn_output_durable('t8', 'mq:t8:1'), 'outputs_durable', 'its outputs are durable');
SELECT is(mq_coord.txn_part_committed('mq:t8:0', 1), 'outputs_durable',
          'its offsets part committed on the old leader does not complete it');
SELECT results_eq($$SELECT txn_id, group_id, topic, partition, next_offset, epoch FROM mq_coord.txn_offsets_moved(2)$$,
                  $$VALUES ('t8', 'g', 'o', 0, 5::bigint, 3)$$,
                  'the input''s leader is told to commit the offset again');
SELECT is(mq_coord.txn_offsets_redone('t8', 'g', 'o', 0, 2, 3), 'done', 'once it has, the step is done');

-- a step whose offsets have several leaders (o/0: broker 2 in epoch 3;
-- o2/0: broker 1 in epoch 4), its offsets part of no broker (a Kafka
-- transaction's): done only once each leader has reported its own
SELECT is(mq_coord.txn_decide('t9', 'p',
          '[{"gid": "mq:t9:0", "kind": "offsets", "broker": -1, "partitions": [],
             "offsets": [{"group": "g", "topic": "o", "partition": 0, "next": 7},
                         {"group": "g", "topic": "o2", "partition": 0, "next": 8}]},
            {"gid": "mq:t9:1", "kind": "output", "broker": -1, "partitions": []}]'),
          'commit', 'a step with offsets on two leaders');
SELECT is(mq_coord.txn_output_durable('t9', 'mq:t9:1'), 'outputs_durable', 'its outputs are durable');
SELECT results_eq($$SELECT b, group_id, topic, partition, next_offset, epoch
                      FROM unnest(ARRAY[1, 2]) b, mq_coord.txn_offsets_moved(b) WHERE txn_id = 't9' ORDER BY b$$,
                  $$VALUES (1, 'g', 'o2', 0, 8::bigint, 4), (2, 'g', 'o', 0, 7::bigint, 3)$$,
                  'each leader is told to commit its offset');
SELECT results_eq($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, $$VALUES ('o', 0), ('o2', 0)$$,
                  'OffsetFetch with require_stable finds both offsets on their way');
SELECT is(mq_coord.txn_offsets_redone('t9', 'g', 'o', 0, 2, 3), 'outputs_durable',
          'one leader''s report does not complete the step');
SELECT results_eq($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, $$VALUES ('o2', 0)$$,
                  '... and then only the one not committed yet');
SELECT is((SELECT count(*) FROM mq_coord.txn_offsets_moved(2) WHERE txn_id = 't9'), 0::bigint,
          'that leader is not told again');
SELECT is(mq_coord.txn_offsets_redone('t9', 'g', 'o2', 0, 1, 3), 'outputs_durable',
          'a report in an epoch that is not the leader''s does not count');
SELECT is(mq_coord.txn_offsets_redone('t9', 'g', 'o2', 0, 2, 4), 'outputs_durable',
          'nor one of a broker that does not lead the partition');
SELECT is(mq_coord.txn_offsets_redone('t9', 'g', 'o2', 0, 1, 4), 'done',
          'the other leader''s report completes it');
SELECT is_empty($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, 'then no offset of the group is on its way');

-- offsets open Kafka transactions staged on their nodes, noted here by
-- mq-kafka (68_kafka_txn_cluster.sql): seen while their node is down
SELECT lives_ok($$SELECT mq_coord.kafka_txn_note_offsets('k1', 'g', '{o, o2}', '{0, 1}', now() + interval '1 minute')$$,
                'an open transaction''s staged offsets are noted');
SELECT lives_ok($$SELECT mq_coord.kafka_txn_note_offsets('k2', 'g', '{o3}', '{0}', now() - interval '1 second')$$,
                'and another''s, past its deadline');
SELECT results_eq($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, $$VALUES ('o', 0), ('o2', 1)$$,
                  'require_stable counts the first, not the one past its deadline (it can only abort)');
SELECT lives_ok($$SELECT mq_coord.kafka_txn_note_offsets('k3', 'g', '{o4}', '{0}', now() + interval '1 minute')$$,
                'a third transaction''s');
SELECT is((SELECT string_agg(DISTINCT transactional_id, ',' ORDER BY transactional_id) FROM mq_coord.kafka_txn_staged_offset),
          'k1,k3', 'a note drops its group''s notes past their deadline');
SELECT throws_ok($$SELECT mq_coord.kafka_txn_note_offsets('k1', 'g', '{o}', '{0, 1}', now())$$, 'MQ010', NULL,
                 'topics and partitions of different lengths are refused');
SELECT is(mq_coord.kafka_txn_abort('t10', 'k1'), 'abort', 'EndTxn abort across nodes is recorded');
SELECT results_eq($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, $$VALUES ('o4', 0)$$,
                  '... and drops the aborted transaction''s notes');
SELECT lives_ok($$SELECT mq_coord.init_producer('k3')$$, 'a new InitProducerId fences the third');
SELECT is_empty($$SELECT * FROM mq_coord.txn_offsets_unstable('g')$$, '... and drops its notes');
SELECT ok(NOT has_function_privilege('public', 'mq_coord.kafka_txn_note_offsets(text, text, text[], integer[], timestamptz)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'mq_coord.kafka_txn_abort(text, text)', 'EXECUTE'),
          'PUBLIC can neither note offsets nor abort');

-- privileges
SELECT ok(NOT has_function_privilege('public', 'mq.txn_finish(text, boolean)', 'EXECUTE'),
          'PUBLIC cannot finish prepared transactions');
SELECT ok(NOT has_function_privilege('public', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[])', 'EXECUTE')
          AND NOT has_function_privilege('public', 'mq.txn_redo_output(text, integer, integer, bigint, integer, integer, bytea[], bytea[], jsonb[], timestamptz[])', 'EXECUTE'),
          'nor decide, resolve or send a step''s records again');
CREATE ROLE mq_twophase_test_broker;
SELECT mq.grant_broker('mq_twophase_test_broker');
SELECT mq_coord.grant_broker('mq_twophase_test_broker');
SELECT ok(has_function_privilege('mq_twophase_test_broker', 'mq.txn_finish(text, boolean)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_broker', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_broker', 'mq_coord.txn_outputs_moved(integer)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_broker',
                                     'mq.txn_redo_output(text, integer, integer, bigint, integer, integer, bytea[], bytea[], jsonb[], timestamptz[])', 'EXECUTE')
          AND NOT has_function_privilege('mq_twophase_test_broker', 'mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[])', 'EXECUTE'),
          'a broker may finish and resolve, not decide');

CREATE ROLE mq_twophase_test_client;
SELECT ok(NOT has_function_privilege('mq_twophase_test_client', 'mq.txn_notes()', 'EXECUTE'),
          'a role without the grant cannot read notes or finish');
SELECT mq.grant_pipeline('mq_twophase_test_client');
SELECT mq_coord.grant_pipeline('mq_twophase_test_client');
SELECT ok(has_function_privilege('mq_twophase_test_client', 'mq.txn_finish(text, boolean)', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq.txn_notes()', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq_coord.txn_decide(text, text, jsonb, integer, jsonb, bytea[], bytea[], jsonb[], timestamptz[])', 'EXECUTE')
          AND has_function_privilege('mq_twophase_test_client', 'mq_coord.init_producer(text)', 'EXECUTE')
          AND NOT has_function_privilege('mq_twophase_test_client', 'mq_coord.txn_resolve(text, integer, bigint, integer)', 'EXECUTE'),
          'a pipeline client may finish, read its notes and decide, not resolve');

SELECT * FROM finish();
ROLLBACK;
