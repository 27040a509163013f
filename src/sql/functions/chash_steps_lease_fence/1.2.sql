CREATE FUNCTION @extschema@.chash_steps_lease_fence(migration bigint, steps int[], holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_steps_lease_check($1, $2, $3);
    PERFORM @extschema@.chash_steps_fence($1, $2);
    PERFORM @extschema@.chash_steps_lease_set($1, $2, $4, 'fenced');
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_fence(bigint, int[], text, interval) IS
    'chash_steps_fence for the holder of the batch''s leases, recording the progress';
