-- Locks the step (a claim of a step given back waits until the cleaner's
-- transaction ends) and, when forget, deletes its records; true when the
-- step's objects may be dropped.
CREATE FUNCTION @extschema@.chash_replication_object_take(migration bigint, step int, forget boolean)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'forget'], ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = $2 FOR UPDATE;
    IF NOT @extschema@.chash_replication_object_orphan($1, $2) THEN
        RETURN false;
    END IF;
    IF $3 THEN
        DELETE FROM @extschema@.chash_replication_object o WHERE o.migration = $1 AND o.step = $2;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_take(bigint, int, boolean) IS
    'internal: locks a step for the cleaner and tells whether its replication objects may be dropped; with forget, deletes their records';
