-- The extension's own SQL never resolves through the caller's search_path
-- (docs/directory.md, "Privileges"): an "=" operator planted in a schema
-- placed before pg_catalog would otherwise run with the caller's rights.
-- The spy counts its calls; every management, planning and routing
-- function runs with it first on the path, and the count must stay 0.
CREATE SCHEMA planted;
CREATE TABLE planted.calls (n int);
INSERT INTO planted.calls VALUES (0);
-- The spy "=" for text and for int: planted.text_eq and planted.int_eq.
DO $do$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['text', 'int'] LOOP
        EXECUTE format($f$
            CREATE FUNCTION planted.%1$s_eq(a %1$s, b %1$s) RETURNS boolean LANGUAGE plpgsql AS $spy$
            BEGIN
                UPDATE planted.calls SET n = n + 1;
                RETURN a OPERATOR(pg_catalog.=) b;
            END
            $spy$$f$, t);
        EXECUTE format('CREATE OPERATOR planted.= (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = planted.%1$s_eq,
                            COMMUTATOR = OPERATOR(planted.=))', t);
    END LOOP;
END
$do$;
CREATE TABLE planted.sizes (org text, payload text);
INSERT INTO planted.sizes SELECT 'org-' || i % 50, repeat('x', i) FROM generate_series(1, 500) i;

-- Rows for the planted operator to be called on.
SELECT chash_create_directory('other', ARRAY['x', 'y'], 64);
SELECT chash_pin('other', 'org-' || i, 'y') FROM generate_series(1, 20) i;

-- The spy works when the path reaches it.
SET search_path = planted, pg_catalog, public;
SELECT 'a'::text = 'a'::text AS spy_answers;
SELECT n AS spy_calls FROM planted.calls;
UPDATE planted.calls SET n = 0;

SELECT chash_create_directory('sp', ARRAY['a', 'b', 'c'], 4096, weights => ARRAY[2, 1, 1]);
SELECT chash_add_shard('sp', 'd');
SELECT chash_set_shard('sp', 'c', weight => 2);
SELECT chash_pin('sp', 'org-1', 'd');
SELECT chash_pin('sp', 'org-2', 'd');
SELECT chash_unpin('sp', 'org-2');
SELECT chash_measure_tenants('sp', 'planted.sizes', 'org');
SELECT count(*) FROM chash_whales('sp');
SELECT count(*) FROM chash_plan_rebalance('sp');
SELECT count(*) FROM chash_plan_rebalance('sp', 'bytes');
SELECT chash_migration_start('sp', max_moves => 3) AS m \gset
SELECT slot IS NOT NULL AS claimed FROM chash_step_claim(:m);
SELECT chash_step_fence(:m, 1);
SELECT chash_step_complete(:m, 1);
SELECT slot IS NOT NULL AS claimed FROM chash_step_claim(:m);
SELECT chash_step_release(:m, 2);
SELECT chash_migration_cancel(:m);
SELECT chash_migration_revert(:m) > :m AS reverted;
SELECT chash_route('sp', 'org-1'), chash_route('sp', 42::bigint) IS NOT NULL AS routed,
       chash_slot('sp', 'org-3') >= 0 AS slotted;
SELECT chash_route_for_write('sp', 'org-7') IS NOT NULL AS write_routed;
SELECT shard, source FROM chash_route_explain('sp', 'org-1');
SELECT chash_directory_snapshot('sp') ->> 'name' AS snapshot;
SELECT count(*) FROM chash_shard_load WHERE directory OPERATOR(pg_catalog.=) 'sp';
SELECT count(*) FROM chash_migration_progress WHERE directory OPERATOR(pg_catalog.=) 'sp';
SELECT chash_drop_directory('sp');

SELECT n AS spy_calls FROM planted.calls;
RESET search_path;
SELECT chash_drop_directory('other');
DROP SCHEMA planted CASCADE;
