CREATE FUNCTION @extschema@.chash_steps_complete(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    dir text;
    bad record;
    t record;
BEGIN
    dir := @extschema@.chash_steps_lock_claimed($1, $2, '{copying,fenced,done}', true,
               'step %s of migration %s is not in flight',
               'Its state is "%s"; only a claimed ("copying" or "fenced") step can complete.');

    -- Slot steps: every slot still owned by from_shard, then all moved at once.
    SELECT s.step, s.slot, s.from_shard, o.shard AS owner INTO bad
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_slot o ON o.directory = dir AND o.slot = s.slot
     WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state IN ('copying', 'fenced')
       AND o.shard <> s.from_shard
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'slot % of directory "%" is no longer owned by shard "%"',
                bad.slot, dir, bad.from_shard
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its owner is now "%s".', bad.owner),
                  HINT = 'Release the step or cancel the migration.';
    END IF;
    UPDATE @extschema@.chash_slot o SET shard = s.to_shard
      FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state IN ('copying', 'fenced')
       AND s.slot IS NOT NULL AND o.directory = dir AND o.slot = s.slot;

    -- Tenant steps (a migration has one, or a revert of one): each as
    -- chash_step_complete does it, in step order, in this transaction.
    FOR t IN SELECT s.step FROM @extschema@.chash_migration_step s
              WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state IN ('copying', 'fenced')
                AND s.tenant IS NOT NULL
              ORDER BY s.step
    LOOP
        PERFORM @extschema@.chash_step_complete($1, t.step);
    END LOOP;

    UPDATE @extschema@.chash_migration_step s
       SET state = 'done', finished_at = pg_catalog.now()
     WHERE s.migration = $1 AND s.step = ANY ($2) AND s.state IN ('copying', 'fenced');
    -- LIMIT 1: PERFORM runs its query to the end
    PERFORM FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.state IN ('pending', 'copying', 'fenced') LIMIT 1;
    IF NOT FOUND THEN
        UPDATE @extschema@.chash_migration m
           SET status = 'done', finished_at = pg_catalog.now()
         WHERE m.id = $1 AND m.status = 'running';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_complete(bigint, int[]) IS
    'chash_step_complete of a batch in one transaction: every slot (or tenant) of the steps flips to its to_shard in one directory version';
