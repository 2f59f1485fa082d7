-- SCRAM credentials for Kafka clients (src/sql/91_scram.sql, src/scram.c):
-- the verifier is PostgreSQL's own SCRAM-SHA-256 verifier for the same
-- password and salt; nothing but the verifier is stored; who may set,
-- drop, list and look them up; bad input gets its own SQLSTATE and leaves
-- nothing behind; unknown users get a stable fake salt.
-- Runs as a superuser; creates its roles inside the transaction and rolls
-- everything back.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;

BEGIN;
SELECT plan(40);

CREATE ROLE mqs_alice LOGIN;
CREATE ROLE mqs_bob LOGIN;
CREATE ROLE mqs_admin LOGIN;
CREATE ROLE mqs_daemon LOGIN;
SELECT mq.grant('alter, describe', 'cluster', 'kafka-cluster', 'mqs_admin');
GRANT EXECUTE ON FUNCTION mq.scram_lookup(text, text) TO mqs_daemon;

-------------------------------------------------------------------------------
-- 1. the verifier: StoredKey and ServerKey as PostgreSQL computes them
-------------------------------------------------------------------------------
SET LOCAL password_encryption = 'scram-sha-256';
CREATE ROLE mqs_pgref PASSWORD 'pencil';
SELECT regexp_match(rolpassword, '^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$') AS v
  FROM pg_authid WHERE rolname = 'mqs_pgref' \gset
SELECT is((SELECT encode(k.stored_key, 'base64') || ':' || encode(k.server_key, 'base64')
             FROM mq._scram_keys('SCRAM-SHA-256', convert_to('pencil', 'UTF8'),
                                 decode((:'v'::text[])[2], 'base64'), (:'v'::text[])[1]::int, false) k),
          (:'v'::text[])[3] || ':' || (:'v'::text[])[4],
          'SCRAM-SHA-256 keys are PostgreSQL''s own for the same password, salt and iterations');

SELECT mq.set_scram_credential('mqs_alice', 'SCRAM-SHA-256', 'alice-secret', 8192);
SELECT mq.set_scram_credential('mqs_alice', 'scram-sha-512', 'alice-secret');
SELECT results_eq($$SELECT mechanism, iterations, length(salt), length(stored_key), length(server_key)
                      FROM mq.scram_credential WHERE user_name = 'mqs_alice' ORDER BY mechanism$$,
                  $$VALUES ('SCRAM-SHA-256', 8192, 32, 32, 32), ('SCRAM-SHA-512', 4096, 32, 64, 64)$$,
                  'one verifier per mechanism: 32-byte random salt, keys as long as the hash');
SELECT is((SELECT count(*) FROM mq.scram_credential c
            WHERE position(convert_to('alice-secret', 'UTF8') IN c.salt || c.stored_key || c.server_key) > 0),
          0::bigint, 'the password is stored nowhere');
SELECT is((SELECT k.stored_key FROM mq.scram_credential c,
                  mq._scram_keys(c.mechanism, convert_to('alice-secret', 'UTF8'), c.salt, c.iterations, false) k
            WHERE c.user_name = 'mqs_alice' AND c.mechanism = 'SCRAM-SHA-512'),
          (SELECT stored_key FROM mq.scram_credential WHERE user_name = 'mqs_alice' AND mechanism = 'SCRAM-SHA-512'),
          'the SCRAM-SHA-512 verifier is recomputed from the password and its salt');
SELECT isnt((SELECT salt FROM mq.scram_credential WHERE user_name = 'mqs_alice' AND mechanism = 'SCRAM-SHA-256'),
            (SELECT salt FROM mq.scram_credential WHERE user_name = 'mqs_alice' AND mechanism = 'SCRAM-SHA-512'),
            'each credential has its own salt');
-- the salted form (AlterUserScramCredentials): SaltedPassword of PostgreSQL's reference
SELECT mq.set_scram_credential_salted('mqs_bob', 'SCRAM-SHA-256', 4096, '\x000102030405060708090a0b0c0d0e0f'::bytea,
                                      ('\x' || repeat('ab', 32))::bytea);
SELECT is((SELECT iterations FROM mq.scram_credential WHERE user_name = 'mqs_bob'), 4096,
          'a salted password is stored as its verifier with the client''s salt');
-- the verifier form (mqctl scram set, mq-kafka): keys computed by the client
SELECT mq.set_scram_keys('mqs_carol', 'scram-sha-512', 4096, '\x101112131415161718191a1b1c1d1e1f'::bytea,
                         k.stored_key, k.server_key)
  FROM mq._scram_keys('SCRAM-SHA-512', convert_to('carol-secret', 'UTF8'),
                      '\x101112131415161718191a1b1c1d1e1f'::bytea, 4096, false) k;
SELECT is((SELECT c.mechanism || ':' || c.iterations || ':' || (c.stored_key = k.stored_key AND c.server_key = k.server_key)
             FROM mq.scram_credential c,
                  mq._scram_keys(c.mechanism, convert_to('carol-secret', 'UTF8'), c.salt, c.iterations, false) k
            WHERE c.user_name = 'mqs_carol'),
          'SCRAM-SHA-512:4096:true', 'a verifier is stored as given, under the canonical mechanism name');
SELECT throws_ok($$SELECT mq.set_scram_keys('mqs_carol', 'SCRAM-SHA-256', 4096, '\x101112131415161718191a1b1c1d1e1f',
                                            ('\x' || repeat('ab', 64))::bytea, ('\x' || repeat('ab', 64))::bytea)$$,
                 'MQ060', 'stored and server keys must be 32 bytes each for SCRAM-SHA-256',
                 'keys of another mechanism''s length');
SELECT throws_ok($$SELECT mq.set_scram_keys('mqs_carol', 'SCRAM-SHA-256', 4096, '\x00', '\x00', '\x00')$$,
                 'MQ060', 'salt must be at least 16 bytes', 'the verifier form checks what the others check');
SELECT mq.drop_scram_credential('mqs_carol');
SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', 'again', 5000);
SELECT is((SELECT iterations || ':' || length(salt) FROM mq.scram_credential WHERE user_name = 'mqs_bob'),
          '5000:32', 'setting again replaces the credential');

-------------------------------------------------------------------------------
-- 2. bad input: its own SQLSTATE, nothing stored
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-1', 'pw')$$, 'MQ061', NULL,
                 'an unknown mechanism is MQ061');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', 'pw', 4095)$$, 'MQ060', NULL,
                 'fewer than 4096 iterations is MQ060');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', 'pw', 16385)$$, 'MQ060', NULL,
                 'more than 16384 iterations is MQ060');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', '')$$, 'MQ060', NULL,
                 'an empty password is MQ060');
SELECT throws_ok($$SELECT mq.set_scram_credential('', 'SCRAM-SHA-256', 'pw')$$, 'MQ060', NULL,
                 'an empty user name is MQ060');
SELECT throws_ok($$SELECT mq.set_scram_credential_salted('mqs_bob', 'SCRAM-SHA-512', 4096,
                   '\x000102030405060708090a0b0c0d0e0f', '\x00')$$, 'MQ060', NULL,
                 'a salted password of the wrong length is MQ060');
SELECT throws_ok($$SELECT mq.set_scram_credential_salted('mqs_bob', 'SCRAM-SHA-512', 4096, '\x00',
                   ('\x' || repeat('ab', 64))::bytea)$$, 'MQ060', NULL, 'a salt under 16 bytes is MQ060');
SELECT throws_ok($$SELECT mq.drop_scram_credential('nobody')$$, 'MQ062', NULL,
                 'dropping a credential that does not exist is MQ062');
SELECT throws_ok($$SELECT mq.drop_scram_credential('mqs_bob', 'SCRAM-SHA-512')$$, 'MQ062', NULL,
                 'dropping a mechanism the user does not have is MQ062');
SELECT throws_ok($$SELECT mq.drop_scram_credential(NULL)$$, 'MQ010', 'user_name must not be null',
                 'a null user name is MQ010, not a user "<NULL>" without credential');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', NULL, 'pw')$$, 'MQ010', 'mechanism must not be null',
                 'a null mechanism is MQ010, not an unsupported mechanism');
SELECT throws_ok($$SELECT mq.set_scram_credential(NULL, 'SCRAM-SHA-256', 'pw')$$, 'MQ010', 'user_name must not be null',
                 'a null user name when setting is MQ010');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', NULL)$$, 'MQ010', 'password must not be null',
                 'a null password is MQ010');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-256', 'pw', NULL)$$, 'MQ010',
                 'iterations must not be null', 'null iterations are MQ010');
SELECT throws_ok($$SELECT mq.set_scram_keys('mqs_bob', 'SCRAM-SHA-256', 4096, '\x101112131415161718191a1b1c1d1e1f', NULL,
                                            ('\x' || repeat('ab', 32))::bytea)$$,
                 'MQ010', 'stored_key must not be null', 'a null key is MQ010');
SELECT is((SELECT string_agg(user_name || '/' || mechanism || '/' || iterations, ',' ORDER BY 1)
             FROM mq.scram_credential),
          'mqs_alice/SCRAM-SHA-256/8192,mqs_alice/SCRAM-SHA-512/4096,mqs_bob/SCRAM-SHA-256/5000',
          'none of the refused calls changed anything');

-------------------------------------------------------------------------------
-- 3. who may do what
-------------------------------------------------------------------------------
SET ROLE mqs_bob;
SELECT throws_ok($$SELECT * FROM mq.scram_credential$$, '42501', NULL,
                 'an ordinary role cannot read the verifiers');
SELECT throws_ok($$SELECT * FROM mq.scram_secret$$, '42501', NULL,
                 'nor the fake-salt secret');
SELECT throws_ok($$SELECT * FROM mq.scram_lookup('mqs_alice', 'SCRAM-SHA-256')$$, '42501', NULL,
                 'nor look a verifier up');
SELECT throws_ok($$SELECT mq.set_scram_credential('mqs_alice', 'SCRAM-SHA-256', 'stolen')$$, '42501', NULL,
                 'nor set another user''s credential');
SELECT throws_ok($$SELECT mq.drop_scram_credential('mqs_alice')$$, '42501', NULL,
                 'nor drop it');
SELECT lives_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-512', 'bobs-own')$$,
                'a user sets its own credential');
SELECT is((SELECT string_agg(user_name || '/' || mechanism, ',' ORDER BY 1) FROM mq.scram_credentials),
          'mqs_bob/SCRAM-SHA-256,mqs_bob/SCRAM-SHA-512', 'and lists only its own, without keys');
SELECT is((SELECT count(*) FROM information_schema.columns
            WHERE table_schema = 'mq' AND table_name = 'scram_credentials'
              AND column_name IN ('salt', 'stored_key', 'server_key')), 0::bigint,
          'the view has no salt or key column');
SELECT lives_ok($$SELECT mq.drop_scram_credential('mqs_bob', 'SCRAM-SHA-512')$$, 'and drops it');
RESET ROLE;

SET ROLE mqs_admin;
SELECT lives_ok($$SELECT mq.set_scram_credential('mqs_bob', 'SCRAM-SHA-512', 'by-admin')$$,
                'an administrator (alter on the cluster) sets anyone''s credential');
SELECT is((SELECT count(*) FROM mq.scram_credentials), 4::bigint,
          'and lists all of them (describe on the cluster)');
RESET ROLE;

-------------------------------------------------------------------------------
-- 4. mq-kafka's lookup: a known user's verifier; an unknown user's fake
--    verifier is shaped the same and its salt stable
-------------------------------------------------------------------------------
SELECT encode(stored_key, 'hex') AS alice_key FROM mq.scram_credential
 WHERE user_name = 'mqs_alice' AND mechanism = 'SCRAM-SHA-512' \gset
SET ROLE mqs_daemon;
SELECT is((SELECT encode(l.stored_key, 'hex') FROM mq.scram_lookup('mqs_alice', 'SCRAM-SHA-512') l), :'alice_key',
          'the daemon''s role looks a verifier up');
SELECT is((SELECT length(salt) || ':' || iterations || ':' || length(stored_key) FROM mq.scram_lookup('ghost', 'SCRAM-SHA-512')),
          '32:4096:64', 'an unknown user gets a verifier of the same shape');
SELECT is((SELECT salt FROM mq.scram_lookup('ghost', 'SCRAM-SHA-256')),
          (SELECT salt FROM mq.scram_lookup('ghost', 'SCRAM-SHA-256')),
          'with the same salt each time');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
