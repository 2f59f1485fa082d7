-- mq's settings (src/mq.c): mq.producer_id_expiration_ms takes a time
-- with a unit, like mq's other time settings ('1d', '30min'; a plain
-- number is milliseconds), and shows as the plain number of milliseconds,
-- which the maintenance SQL of every installed extension version reads
-- with current_setting(...)::bigint.
BEGIN;
SELECT plan(8);

LOAD 'mq';

SELECT is((SELECT unit FROM pg_settings WHERE name = 'mq.producer_id_expiration_ms'), 'ms',
          'mq.producer_id_expiration_ms is in milliseconds (pg_settings.unit)');
SELECT is(current_setting('mq.producer_id_expiration_ms'), '86400000', 'the default is a day, shown in ms');

SELECT lives_ok($$SET LOCAL mq.producer_id_expiration_ms = '1d'$$, 'a time with a unit is accepted');
SELECT is(current_setting('mq.producer_id_expiration_ms'), '86400000', '1d shows as 86400000');

SET LOCAL mq.producer_id_expiration_ms = '30min';
SELECT is((SELECT setting FROM pg_settings WHERE name = 'mq.producer_id_expiration_ms'), '1800000',
          '30min is 1800000 in pg_settings');
SELECT lives_ok($$SELECT mq.run_maintenance()$$, 'maintenance reads a setting given with a unit');

SET LOCAL mq.producer_id_expiration_ms = 250;
SELECT is(current_setting('mq.producer_id_expiration_ms'), '250', 'a plain number is milliseconds');

SELECT throws_ok($$SET LOCAL mq.producer_id_expiration_ms = '0'$$, '22023', NULL,
                 'below 1 ms is refused');

SELECT * FROM finish();
ROLLBACK;
