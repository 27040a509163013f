CREATE FUNCTION @extschema@.chash_steps_release(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps'], ARRAY[$1 IS NULL, $2 IS NULL]);
    SELECT l.step, l.state INTO bad
      FROM @extschema@.chash_steps_lock($1, $2, false) l
     ORDER BY l.state NOT IN ('copying', 'fenced') DESC, l.step LIMIT 1;
    IF bad.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', bad.step, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can be released.', bad.state);
    END IF;
    -- the leases go with a trigger (chash_step_lease_forget), as for one step
    UPDATE @extschema@.chash_migration_step s
       SET state = 'pending', claimed_by = NULL, started_at = NULL
     WHERE s.migration = $1 AND s.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_release(bigint, int[]) IS
    'chash_step_release of a batch: its steps go back to pending, nothing else changes';
