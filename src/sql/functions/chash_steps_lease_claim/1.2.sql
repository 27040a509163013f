-- A new batch whose shard pair is one of (fence_from[i], fence_to[i]) is
-- claimed fenced (chash_steps_claim's fence): the mover gives the pairs it
-- has checked in this run and copies with writes blocked.
CREATE FUNCTION @extschema@.chash_steps_lease_claim(migration bigint, holder text, lease interval, max_steps int,
                                                    max_rows bigint DEFAULT NULL, max_bytes bigint DEFAULT NULL,
                                                    fence_from text[] DEFAULT NULL, fence_to text[] DEFAULT NULL)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text,
                   state text, progress text, claimed boolean)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
#variable_conflict use_column
DECLARE
    first record;
    taken int[];
    fence boolean := false;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'holder', 'lease', 'max_steps'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    IF $3 <= interval '0' THEN
        RAISE EXCEPTION 'lease must be positive' USING ERRCODE = '22023';
    END IF;
    IF $4 < 1 THEN
        RAISE EXCEPTION 'max_steps must be positive' USING ERRCODE = '22023';
    END IF;
    IF cardinality($7) IS DISTINCT FROM cardinality($8) OR array_position($7, NULL) IS NOT NULL
       OR array_position($8, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'fence_from and fence_to must name the same number of shards, none null'
            USING ERRCODE = '22023';
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
            SELECT s.step, s.slot, s.tenant, s.from_shard, s.to_shard, s.state, e.progress, false
              FROM @extschema@.chash_migration_step s
              JOIN @extschema@.chash_step_lease e ON e.migration = s.migration AND e.step = s.step
             WHERE s.migration = $1 AND s.step = ANY (taken)
             ORDER BY s.step;
        RETURN;
    END IF;
    IF cardinality($7) > 0 THEN
        -- the step chash_steps_claim starts at: the first it can lock
        SELECT EXISTS (SELECT FROM ROWS FROM (pg_catalog.unnest($7), pg_catalog.unnest($8)) f (from_shard, to_shard)
                        WHERE f.from_shard = p.from_shard AND f.to_shard = p.to_shard)
          INTO fence
          FROM @extschema@.chash_migration_step p
         WHERE p.migration = $1 AND p.state = 'pending'
         ORDER BY p.step LIMIT 1
           FOR UPDATE SKIP LOCKED;
        fence := COALESCE(fence, false);
    END IF;
    RETURN QUERY
        WITH claimed AS (
            SELECT * FROM @extschema@.chash_steps_claim($1, $4, $5, $6, fence)
        ), leased AS (
            INSERT INTO @extschema@.chash_step_lease (migration, step, holder, lease_until, progress)
            SELECT $1, c.step, $2, pg_catalog.clock_timestamp() + $3,
                   CASE WHEN fence THEN 'fenced' ELSE 'claimed' END FROM claimed c
        )
        SELECT c.step, c.slot, c.tenant, c.from_shard, c.to_shard,
               CASE WHEN fence THEN 'fenced' ELSE 'copying' END, CASE WHEN fence THEN 'fenced' ELSE 'claimed' END, true
          FROM claimed c ORDER BY c.step;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_claim(bigint, text, interval, int, bigint, bigint, text[], text[]) IS
    'takes over a batch whose leases expired (one shard pair, state and progress; claimed false), else claims a new batch (chash_steps_claim), fenced with it when its shard pair is one of fence_from/fence_to; holds its steps for lease';
