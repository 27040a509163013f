-- The batch's leases extended, and set to progress when it is given.
CREATE FUNCTION @extschema@.chash_steps_lease_set(migration bigint, steps int[], lease interval,
                                                  progress text DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    UPDATE @extschema@.chash_step_lease l
       SET progress = COALESCE($4, l.progress), lease_until = pg_catalog.clock_timestamp() + $3,
           updated_at = pg_catalog.clock_timestamp()
     WHERE l.migration = $1 AND l.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_set(bigint, int[], interval, text) IS
    'internal: extends the leases of a batch and sets their progress when given';
