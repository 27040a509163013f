-- Locks the leases of the steps (in step order) when holder holds them
-- all (55006 for the first that it does not) and returns their progress,
-- one entry per distinct value.
CREATE FUNCTION @extschema@.chash_steps_lease_check(migration bigint, steps int[], holder text) RETURNS text[]
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
    progress text[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    IF cardinality($2) = 0 THEN
        RAISE EXCEPTION 'steps must not be empty' USING ERRCODE = '22023';
    END IF;
    PERFORM FROM @extschema@.chash_step_lease l
     WHERE l.migration = $1 AND l.step = ANY ($2) ORDER BY l.step FOR UPDATE;
    SELECT x.step, l.holder INTO bad
      FROM (SELECT DISTINCT x AS step FROM pg_catalog.unnest($2) x) x
      LEFT JOIN @extschema@.chash_step_lease l ON l.migration = $1 AND l.step = x.step
     WHERE l.holder IS DISTINCT FROM $3
     ORDER BY x.step LIMIT 1;
    IF FOUND AND bad.holder IS NULL THEN
        RAISE EXCEPTION 'step % of migration % has no lease', bad.step, $1
            USING ERRCODE = '55006',
                  DETAIL = 'It was released, or finished by another mover.';
    ELSIF FOUND THEN
        RAISE EXCEPTION 'step % of migration % is held by another mover', bad.step, $1
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Its lease is held by "%s".', bad.holder),
                  HINT = 'The lease expired and another mover took the step over.';
    END IF;
    SELECT array_agg(DISTINCT l.progress ORDER BY l.progress) INTO progress
      FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = ANY ($2);
    RETURN progress;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_check(bigint, int[], text) IS
    'internal: locks the leases of steps and returns their distinct progress values; 55006 unless holder holds them all';
