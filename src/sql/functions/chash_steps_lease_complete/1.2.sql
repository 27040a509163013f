CREATE FUNCTION @extschema@.chash_steps_lease_complete(migration bigint, steps int[], holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    IF NOT @extschema@.chash_steps_lease_check($1, $2, $3) <@ ARRAY['copied', 'completed'] THEN
        RAISE EXCEPTION 'steps of migration % have not been copied', $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only steps whose rows are on the target, verified, can complete.';
    END IF;
    PERFORM @extschema@.chash_steps_complete($1, $2);
    PERFORM @extschema@.chash_steps_lease_set($1, $2, $4, 'completed');
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_complete(bigint, int[], text, interval) IS
    'chash_steps_complete for the holder of the batch''s leases once its rows are copied, recording the progress';
