CREATE FUNCTION @extschema@.chash_steps_fence(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    dir text;
    fence_slots int[];
    fence_tenants text[];
BEGIN
    dir := @extschema@.chash_steps_lock_claimed($1, $2, '{copying,fenced}', true,
               'step %s of migration %s is not being copied',
               'Its state is "%s"; only a claimed ("copying") step can be fenced.');
    -- the steps fenced already were fenced by a transaction that ended:
    -- a worker retrying after a lost connection
    WITH fenced AS (
        UPDATE @extschema@.chash_migration_step s SET state = 'fenced'
         WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state = 'copying'
        RETURNING s.slot, s.tenant)
    -- in slot (tenant) order: the order the barrier takes its locks in
    SELECT array_agg(f.slot ORDER BY f.slot) FILTER (WHERE f.slot IS NOT NULL),
           array_agg(f.tenant ORDER BY f.tenant) FILTER (WHERE f.tenant IS NOT NULL)
      INTO fence_slots, fence_tenants FROM fenced f;
    IF fence_slots IS NOT NULL OR fence_tenants IS NOT NULL THEN
        -- The barrier (src/fence.c) over all of them at once.
        PERFORM @extschema@.chash_fence_barrier(dir, fence_slots, fence_tenants);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_fence(bigint, int[]) IS
    'chash_step_fence of a batch in one transaction: one directory version, one barrier over every slot and tenant of the steps';
