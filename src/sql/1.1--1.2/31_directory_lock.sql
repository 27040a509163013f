-- ---------------------------------------------------------------------------
-- The directory-row lock, said once: chash_directory_row (1.0) locks the
-- row FOR NO KEY UPDATE and raises 22004 and 42704; the migration
-- functions' chash_migration_lock_directory is that lock, not a copy of it.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_lock_directory(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_directory_row($1);
END
$$;
