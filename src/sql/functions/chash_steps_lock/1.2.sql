-- Locks the directory of the migration, then the steps (in step order),
-- and returns them; 42704 for a step that does not exist, 22023 for an
-- empty set or, with one_pair, steps of several shard pairs or kinds.
CREATE FUNCTION @extschema@.chash_steps_lock(migration bigint, steps int[], one_pair boolean DEFAULT true)
    RETURNS TABLE (step int, state text, slot int, tenant text, from_shard text, to_shard text,
                   directory text, kind text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
#variable_conflict use_column
DECLARE
    missing int;
    pairs bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'one_pair'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    IF cardinality($2) = 0 THEN
        RAISE EXCEPTION 'steps must not be empty' USING ERRCODE = '22023';
    END IF;
    IF array_position($2, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'steps must not contain nulls' USING ERRCODE = '22004';
    END IF;
    -- the directory row first (one lock order), then the steps' rows
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.step = ANY ($2) ORDER BY s.step FOR UPDATE;
    SELECT x INTO missing FROM pg_catalog.unnest($2) x
     WHERE NOT EXISTS (SELECT FROM @extschema@.chash_migration_step s
                        WHERE s.migration = $1 AND s.step = x)
     ORDER BY x LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'step % of migration % does not exist', missing, $1 USING ERRCODE = '42704';
    END IF;
    IF $3 THEN
        SELECT count(DISTINCT (s.from_shard, s.to_shard, s.slot IS NULL)) INTO pairs
          FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = ANY ($2);
        IF pairs > 1 THEN
            RAISE EXCEPTION 'the steps of a batch must move from one shard to one shard'
                USING ERRCODE = '22023',
                      DETAIL = pg_catalog.format('Steps of migration %s move between %s pairs of shards, or are slot and tenant steps both.', $1, pairs),
                      HINT = 'Claim batches with chash_steps_claim().';
        END IF;
    END IF;
    RETURN QUERY
        SELECT s.step, s.state, s.slot, s.tenant, s.from_shard, s.to_shard, m.directory, m.kind
          FROM @extschema@.chash_migration_step s
          JOIN @extschema@.chash_migration m ON m.id = s.migration
         WHERE s.migration = $1 AND s.step = ANY ($2)
         ORDER BY s.step;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lock(bigint, int[], boolean) IS
    'internal: locks the directory of the migration, then the steps in step order, and returns them (one pair of shards unless one_pair is false)';
