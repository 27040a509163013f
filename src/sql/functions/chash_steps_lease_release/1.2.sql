CREATE FUNCTION @extschema@.chash_steps_lease_release(migration bigint, steps int[], holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    done_step int;
    in_flight int[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_steps_lease_check($1, $2, $3);
    SELECT min(s.step) FILTER (WHERE s.state = 'done'),
           array_agg(s.step) FILTER (WHERE s.state IN ('copying', 'fenced'))
      INTO done_step, in_flight
      FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = ANY ($2);
    IF done_step IS NOT NULL THEN
        RAISE EXCEPTION 'step % of migration % is done', done_step, $1
            USING ERRCODE = '55000',
                  DETAIL = 'Its rows are still to be deleted on the source; finish it with chash_steps_lease_finish().';
    END IF;
    IF in_flight IS NOT NULL THEN
        PERFORM @extschema@.chash_steps_release($1, in_flight);     -- deletes the leases too
    END IF;
    DELETE FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_release(bigint, int[], text) IS
    'chash_steps_release for the holder of the batch''s leases (the caller has removed its copy from the target), dropping the leases';
