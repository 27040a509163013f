CREATE OR REPLACE FUNCTION @extschema@.chash_guard_table(directory text, table_name text) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rel regclass := to_regclass(table_name);
    me text;
    col text;
    g name := @extschema@.chash_guard_name(directory);
    gt name := ('chash_guard_truncate_' || left(md5(directory), 12))::name;
    gf name := (@extschema@.chash_guard_name(directory) || '_final')::name;
    member regclass;
    final boolean;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'table_name'], ARRAY[directory IS NULL, table_name IS NULL]);
    SELECT m.shard INTO me FROM @extschema@.chash_shard_member m WHERE m.directory = chash_guard_table.directory;
    SELECT t.tenant_column INTO col FROM @extschema@.chash_table t
     WHERE t.directory = chash_guard_table.directory AND t.table_name = chash_guard_table.table_name;
    IF rel IS NULL OR me IS NULL OR col IS NULL
       OR (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
        RETURN false;
    END IF;
    -- (not DROP TRIGGER IF EXISTS: its notices would reach the DBA who joins)
    PERFORM @extschema@.chash_unguard(directory, table_name);
    final := @extschema@.chash_guard_needs_final(rel, col, g);
    -- Rows written through an inheritance child (or by an UPDATE or
    -- DELETE of the parent that reaches them) fire the child's triggers
    -- only: each child gets the guard too.
    FOR member IN SELECT * FROM @extschema@.chash_guard_tree(rel) LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
                       'EXECUTE FUNCTION @extschema@.chash_shard_row_guard(%L, %L, %L)', g, member, directory, col, me);
        IF final THEN
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH ROW '
                           'EXECUTE FUNCTION @extschema@.chash_shard_row_guard(%L, %L, %L)', gf, member, directory, col, me);
        END IF;
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION @extschema@.chash_shard_truncate_guard(%L, %L, %L)', gt, member, directory, col, me);
    END LOOP;
    RETURN true;
END
$$;
