-- The guards of a table go with its inheritance children; clones on
-- partitions go with the partitioned table's trigger.  Only chash's
-- guards: a trigger of another function is not dropped for its name.
CREATE OR REPLACE FUNCTION @extschema@.chash_unguard(directory text, table_name text DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    n bigint := 0;
    rel regclass := to_regclass(table_name);
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[directory IS NULL]);
    IF table_name IS NOT NULL AND rel IS NULL THEN
        RETURN 0;
    END IF;
    FOR t IN SELECT tg.tgname, tg.tgrelid::regclass AS rel FROM pg_trigger tg
              WHERE tg.tgname IN (@extschema@.chash_guard_name(directory),
                                  (@extschema@.chash_guard_name(directory) || '_final')::name,
                                  ('chash_guard_truncate_' || left(md5(directory), 12))::name)
                AND tg.tgfoid IN ('@extschema@.chash_shard_row_guard()'::regprocedure,
                                  '@extschema@.chash_shard_truncate_guard()'::regprocedure)
                AND tg.tgparentid = 0
                AND (table_name IS NULL OR tg.tgrelid IN (SELECT * FROM @extschema@.chash_guard_tree(rel)))
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
