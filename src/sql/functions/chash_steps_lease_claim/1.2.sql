CREATE FUNCTION @extschema@.chash_steps_lease_claim(migration bigint, holder text, lease interval, max_steps int,
                                                    max_rows bigint DEFAULT NULL, max_bytes bigint DEFAULT NULL)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text,
                   state text, progress text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
#variable_conflict use_column
DECLARE
    first record;
    taken int[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'holder', 'lease', 'max_steps'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    IF $3 <= interval '0' THEN
        RAISE EXCEPTION 'lease must be positive' USING ERRCODE = '22023';
    END IF;
    IF $4 < 1 THEN
        RAISE EXCEPTION 'max_steps must be positive' USING ERRCODE = '22023';
    END IF;
    PERFORM @extschema@.chash_migration_lock($1);
    -- Expired leases of steps released by hand: claimed again below like
    -- any pending step.
    DELETE FROM @extschema@.chash_step_lease e
     USING @extschema@.chash_migration_step s
     WHERE e.migration = $1 AND e.lease_until < pg_catalog.clock_timestamp()
       AND s.migration = e.migration AND s.step = e.step AND s.state = 'pending';
    -- First the work that movers which died left: the first expired lease,
    -- and with it the expired ones left in the same place.
    SELECT e.step, e.progress, s.state, s.from_shard, s.to_shard, s.slot IS NULL AS by_tenant INTO first
      FROM @extschema@.chash_step_lease e
      JOIN @extschema@.chash_migration_step s ON s.migration = e.migration AND s.step = e.step
     WHERE e.migration = $1 AND e.lease_until < pg_catalog.clock_timestamp()
     ORDER BY e.step LIMIT 1
       FOR UPDATE OF e SKIP LOCKED;
    IF FOUND THEN
        WITH candidate AS (
            SELECT e.step FROM @extschema@.chash_step_lease e
              JOIN @extschema@.chash_migration_step s ON s.migration = e.migration AND s.step = e.step
             WHERE e.migration = $1 AND e.lease_until < pg_catalog.clock_timestamp()
               AND e.progress = first.progress AND s.state = first.state
               AND s.from_shard = first.from_shard AND s.to_shard = first.to_shard
               AND (s.slot IS NULL) = first.by_tenant
             ORDER BY e.step LIMIT least($4, @extschema@.chash_steps_max())
               FOR UPDATE OF e SKIP LOCKED)
        SELECT array_agg(c.step) INTO taken FROM candidate c;
        PERFORM @extschema@.chash_steps_lease_set($1, taken, $3);
        UPDATE @extschema@.chash_step_lease e SET holder = $2
         WHERE e.migration = $1 AND e.step = ANY (taken);
        RETURN QUERY
            SELECT s.step, s.slot, s.tenant, s.from_shard, s.to_shard, s.state, e.progress
              FROM @extschema@.chash_migration_step s
              JOIN @extschema@.chash_step_lease e ON e.migration = s.migration AND e.step = s.step
             WHERE s.migration = $1 AND s.step = ANY (taken)
             ORDER BY s.step;
        RETURN;
    END IF;
    RETURN QUERY
        WITH claimed AS (
            SELECT * FROM @extschema@.chash_steps_claim($1, $4, $5, $6)
        ), leased AS (
            INSERT INTO @extschema@.chash_step_lease (migration, step, holder, lease_until)
            SELECT $1, c.step, $2, pg_catalog.clock_timestamp() + $3 FROM claimed c
        )
        SELECT c.step, c.slot, c.tenant, c.from_shard, c.to_shard, 'copying'::text, 'claimed'::text
          FROM claimed c ORDER BY c.step;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_claim(bigint, text, interval, int, bigint, bigint) IS
    'takes over a batch whose leases expired (one shard pair, state and progress), else claims a new batch (chash_steps_claim); holds its steps for lease';
