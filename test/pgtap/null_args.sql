-- Bad input gets mq's own error: every public routine of mq and mq_coord
-- (names not starting with an underscore) that takes arguments, called
-- with all of them NULL, either answers (a STRICT function returns NULL)
-- or raises an MQ SQLSTATE, never a PostgreSQL one from deeper down (a
-- not-null violation of a table it writes, an array function's error).
-- Each call runs in its own subtransaction, so nothing it might have
-- changed stays.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
SELECT plan(2);

CREATE TEMP TABLE null_call (routine text, sqlstate text, message text);

DO $$
DECLARE
    r record;
    v_state text;
    v_msg text;
BEGIN
    FOR r IN
        SELECT p.oid::regprocedure::text AS routine, p.prokind,
               format('%I.%I(%s)', n.nspname, p.proname,
                      (SELECT string_agg(format('NULL::%s', format_type(t, NULL)), ', ' ORDER BY i)
                         FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i))) AS call
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname IN ('mq', 'mq_coord') AND p.proname !~ '^_'
           AND p.prokind IN ('f', 'p') AND p.pronargs > 0
           AND p.prorettype <> 'pg_catalog.trigger'::regtype
         ORDER BY 1
    LOOP
        BEGIN
            IF r.prokind = 'p' THEN
                EXECUTE 'CALL ' || r.call;
            ELSE
                EXECUTE 'SELECT * FROM ' || r.call;
            END IF;
            INSERT INTO null_call VALUES (r.routine, NULL, NULL);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            INSERT INTO null_call VALUES (r.routine, v_state, v_msg);
        END;
    END LOOP;
END $$;

SELECT cmp_ok((SELECT count(*) FROM null_call), '>', 100::bigint,
              'the public routines were called with NULL arguments');

SELECT is_empty($$SELECT routine, sqlstate, message FROM null_call
                   WHERE sqlstate IS NOT NULL AND sqlstate !~ '^MQ'$$,
                'each routine given only NULLs answers or raises an MQ SQLSTATE');

SELECT * FROM finish();
ROLLBACK;
