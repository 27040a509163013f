CREATE FUNCTION @extschema@.chash_steps_release(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_steps_lock_claimed($1, $2, '{copying,fenced}', false,
                'step %s of migration %s is not in flight',
                'Its state is "%s"; only a claimed ("copying" or "fenced") step can be released.');
    -- the leases go with a trigger (chash_step_lease_forget), as for one step
    UPDATE @extschema@.chash_migration_step s
       SET state = 'pending', claimed_by = NULL, started_at = NULL
     WHERE s.migration = $1 AND s.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_release(bigint, int[]) IS
    'chash_step_release of a batch: its steps go back to pending, nothing else changes';
