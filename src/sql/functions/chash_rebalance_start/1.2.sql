CREATE FUNCTION @extschema@.chash_rebalance_start(directory text, mode text DEFAULT 'slots',
                                                  max_parallel int DEFAULT 1, max_rate bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    mig bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'mode', 'max_parallel'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    IF $3 < 1 OR $3 > 64 THEN
        RAISE EXCEPTION 'max_parallel must be between 1 and 64' USING ERRCODE = '22023';
    END IF;
    IF $4 <= 0 THEN
        RAISE EXCEPTION 'max_rate must be positive' USING ERRCODE = '22023',
              HINT = 'Pass NULL for no limit.';
    END IF;
    -- before anything is planned: chash_rebalance_launch checks it again
    IF NOT pg_catalog.pg_has_role('chash_mover', 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied to run a background rebalance'
            USING ERRCODE = '42501',
                  DETAIL = pg_catalog.format('Its workers connect to the directory database and the shards as role "%s", which is not a member of chash_mover.', current_user),
                  HINT = 'Grant chash_mover to the role, or start the rebalance as one that has it.';
    END IF;
    PERFORM @extschema@.chash_migration_lock_directory($1);
    -- the running migration, taken over, or a new one of the plan
    SELECT m.id INTO mig FROM @extschema@.chash_migration m
     WHERE m.directory = $1 AND m.status = 'running';
    IF mig IS NULL THEN
        mig := @extschema@.chash_migration_start($1, $2);
    END IF;
    IF (SELECT m.status FROM @extschema@.chash_migration m WHERE m.id = mig) = 'done' THEN
        RETURN mig;          -- the plan was empty: nothing to move
    END IF;
    PERFORM @extschema@.chash_rebalance_launch($1, mig, $3, $4);
    RETURN mig;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_rebalance_start(text, text, int, bigint) IS
    'plans a migration of directory (mode: the planner''s strategy) or takes over the running one, and moves it in the background with max_parallel batches at once; returns the migration';
