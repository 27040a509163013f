-- CREATE EXTENSION in another schema, and DROP EXTENSION removes everything.
-- (pg_regress created chash in public for every test; we restore it at the end.)
CREATE FUNCTION pg_temp.extension_objects() RETURNS TABLE(kind text, schema name, n bigint)
LANGUAGE sql AS $$
    SELECT 'function', n.nspname, count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE p.proname LIKE 'chash\_%' GROUP BY 2
    UNION ALL
    SELECT 'relation', n.nspname, count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relname LIKE 'chash\_%' GROUP BY 2
    UNION ALL
    SELECT 'type', n.nspname, count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE t.typname LIKE 'chash\_%' AND t.typname NOT LIKE '\_%' GROUP BY 2
$$;

SELECT count(*) > 0 AS objects_in_public FROM pg_temp.extension_objects() WHERE schema = 'public';
DROP EXTENSION chash;
SELECT count(*) AS left_after_drop FROM pg_temp.extension_objects();

CREATE SCHEMA routing;
CREATE EXTENSION chash SCHEMA routing;
SELECT DISTINCT schema FROM pg_temp.extension_objects();
-- Works with routing off the search_path, through qualified names.
SET search_path = pg_catalog;
SELECT routing.chash_jump('tenant-42', 16), routing.chash_redis_slot('{user1000}.following');
RESET search_path;
SELECT extnamespace::regnamespace AS schema, extrelocatable FROM pg_extension WHERE extname = 'chash';
DROP EXTENSION chash;
SELECT count(*) AS left_after_drop FROM pg_temp.extension_objects();
DROP SCHEMA routing;

CREATE EXTENSION chash;
