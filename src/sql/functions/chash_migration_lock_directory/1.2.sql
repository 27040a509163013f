CREATE OR REPLACE FUNCTION @extschema@.chash_migration_lock_directory(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_directory_row($1);
END
$$;
