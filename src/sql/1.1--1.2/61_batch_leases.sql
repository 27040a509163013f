-- ---------------------------------------------------------------------------
-- The mover's leases over batches (docs/migrations.md, "Batches";
-- 95_mover.sql of 1.1 for one step)
--
-- A batch's steps are leased, fenced, recorded, completed, released and
-- finished together, so they share one progress.  A takeover takes a dead
-- mover's expired leases of one shard pair, kind, state and progress
-- together: the batch (or part of it) as it was left.
-- ---------------------------------------------------------------------------

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

-- The batch's leases extended, and set to progress when it is given.
CREATE FUNCTION @extschema@.chash_steps_lease_set(migration bigint, steps int[], lease interval,
                                                  progress text DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    UPDATE @extschema@.chash_step_lease l
       SET progress = COALESCE($4, l.progress), lease_until = pg_catalog.clock_timestamp() + $3,
           updated_at = pg_catalog.clock_timestamp()
     WHERE l.migration = $1 AND l.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_set(bigint, int[], interval, text) IS
    'internal: extends the leases of a batch and sets their progress when given';

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

CREATE FUNCTION @extschema@.chash_steps_lease_fence(migration bigint, steps int[], holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_steps_lease_check($1, $2, $3);
    PERFORM @extschema@.chash_steps_fence($1, $2);
    PERFORM @extschema@.chash_steps_lease_set($1, $2, $4, 'fenced');
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_fence(bigint, int[], text, interval) IS
    'chash_steps_fence for the holder of the batch''s leases, recording the progress';

CREATE FUNCTION @extschema@.chash_steps_lease_record(migration bigint, steps int[], holder text, progress text,
                                                     lease interval, rows bigint[] DEFAULT NULL,
                                                     bytes bigint[] DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    held text[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'progress', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL]);
    IF $4 NOT IN ('subscribed', 'copied') THEN
        -- the other states change with the steps' own state, in their functions
        RAISE EXCEPTION 'invalid progress "%"', $4
            USING ERRCODE = '22023', DETAIL = 'Only "subscribed" and "copied" are recorded on their own.';
    END IF;
    IF cardinality($6) IS DISTINCT FROM cardinality($2) AND $6 IS NOT NULL
       OR cardinality($7) IS DISTINCT FROM cardinality($2) AND $7 IS NOT NULL THEN
        RAISE EXCEPTION '% must have one entry per step', CASE WHEN $6 IS NOT NULL
                   AND cardinality($6) IS DISTINCT FROM cardinality($2) THEN 'rows' ELSE 'bytes' END
            USING ERRCODE = '22023';
    END IF;
    held := @extschema@.chash_steps_lease_check($1, $2, $3);
    IF $4 = 'subscribed' AND NOT held <@ ARRAY['claimed', 'subscribed'] THEN
        RAISE EXCEPTION 'steps of migration % are past their subscription', $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only claimed steps, not yet fenced, are copied by a subscription.';
    END IF;
    PERFORM @extschema@.chash_steps_lease_set($1, $2, $5, $4);
    IF $6 IS NOT NULL OR $7 IS NOT NULL THEN
        UPDATE @extschema@.chash_step_lease l
           SET rows = COALESCE(x.rows, l.rows), bytes = COALESCE(x.bytes, l.bytes)
          FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($6), pg_catalog.unnest($7)) x (step, rows, bytes)
         WHERE l.migration = $1 AND l.step = x.step;
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_record(bigint, int[], text, text, interval, bigint[], bigint[]) IS
    'records that the holder of a batch''s leases has subscribed the target to its rows, or copied and verified them there (rows and bytes: per step, in the order of steps)';

CREATE FUNCTION @extschema@.chash_steps_lease_complete(migration bigint, steps int[], holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    IF NOT @extschema@.chash_steps_lease_check($1, $2, $3) <@ ARRAY['copied', 'completed'] THEN
        RAISE EXCEPTION 'steps of migration % have not been copied', $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only steps whose rows are on the target, verified, can complete.';
    END IF;
    PERFORM @extschema@.chash_steps_complete($1, $2);
    PERFORM @extschema@.chash_steps_lease_set($1, $2, $4, 'completed');
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_complete(bigint, int[], text, interval) IS
    'chash_steps_complete for the holder of the batch''s leases once its rows are copied, recording the progress';

CREATE FUNCTION @extschema@.chash_steps_lease_release(migration bigint, steps int[], holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    done_step int;
    in_flight int[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_steps_lease_check($1, $2, $3);
    SELECT min(s.step) FILTER (WHERE s.state = 'done'),
           array_agg(s.step) FILTER (WHERE s.state IN ('copying', 'fenced'))
      INTO done_step, in_flight
      FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = ANY ($2);
    IF done_step IS NOT NULL THEN
        RAISE EXCEPTION 'step % of migration % is done', done_step, $1
            USING ERRCODE = '55000',
                  DETAIL = 'Its rows are still to be deleted on the source; finish it with chash_steps_lease_finish().';
    END IF;
    IF in_flight IS NOT NULL THEN
        PERFORM @extschema@.chash_steps_release($1, in_flight);     -- deletes the leases too
    END IF;
    DELETE FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_release(bigint, int[], text) IS
    'chash_steps_release for the holder of the batch''s leases (the caller has removed its copy from the target), dropping the leases';

CREATE FUNCTION @extschema@.chash_steps_lease_finish(migration bigint, steps int[], holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
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
