CREATE FUNCTION @extschema@.chash_steps_lease_finish(migration bigint, steps int[], holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
BEGIN
    -- its argument checks are this function's too
    PERFORM @extschema@.chash_steps_lease_check($1, $2, $3);
    SELECT s.step, s.state INTO bad FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state NOT IN ('done', 'cancelled')
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'step % of migration % is not finished', bad.step, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s".', bad.state);
    END IF;
    DELETE FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_finish(bigint, int[], text) IS
    'drops the leases of a done (or cancelled) batch once the holder has left its rows on one shard only';
