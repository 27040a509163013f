-- ---------------------------------------------------------------------------
-- Batches of migration steps (docs/migrations.md, "Batches"; SPEC 4.6)
--
-- A batch is a set of steps of one migration with the same from_shard and
-- to_shard, all slot steps or all tenant steps.  It is claimed, fenced,
-- completed or released in one transaction: one directory version for the
-- batch, one fence barrier over all its slots and tenants.  Steps stay one
-- per slot or tenant in chash_migration_step.  The lock order is the one
-- of the single-step functions: the directory row, then the steps in step
-- order.  Each function is a few statements whatever the batch's size.
--
-- They plan each statement with the batch's own array (plan_cache_mode =
-- force_custom_plan): a generic plan sees "step = ANY ($2)" as ten steps
-- of a table it thinks tiny, and tests every step of the migration
-- against the whole array, or joins the array to it in a nested loop:
-- 30-700 ms a statement for a batch of 1,600 of 5,461 steps, against a
-- fraction of a millisecond planned for the array (hashed, its length
-- known).  61_batch_leases.sql does the same.
-- ---------------------------------------------------------------------------

-- A batch's fence holds one lock per slot or tenant until it commits, in
-- the server's shared lock table; a claim returns at most this many steps,
-- a quarter of that table, so that a fence leaves room for everybody else.
CREATE FUNCTION @extschema@.chash_steps_max() RETURNS int
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT greatest(1, pg_catalog.current_setting('max_locks_per_transaction')::int
                       * pg_catalog.current_setting('max_connections')::int / 4)
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_max() IS
    'the most steps one batch holds: a quarter of the lock table (max_locks_per_transaction x max_connections / 4), since its fence locks each slot or tenant';

CREATE FUNCTION @extschema@.chash_fence_barrier(directory text, slots int[] DEFAULT NULL, tenants text[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'chash_steps_fence_barrier'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_fence_barrier(text, int[], text[]) IS
    'internal: chash_step_fence_barrier over a batch''s slots and tenants (waits for the writers admitted for any of them and holds later ones until the transaction ends); needs UPDATE on chash_migration_step';

CREATE FUNCTION @extschema@.chash_shard_wait_fence(directory text, migration bigint, steps int[]) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_wait_fence_steps'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_wait_fence(text, bigint, int[]) IS
    'on a batch''s source shard: returns once every step of the batch has been applied here fenced (or done) and every write the guard admitted for their slots or tenants before has ended';

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

-- Claims a batch: the first pending step, and after it, in step order,
-- pending steps of the same shard pair and kind, up to max_steps (and
-- chash_steps_max()).  With max_rows or max_bytes, the steps' sizes are
-- estimated from chash_tenant_size (tenants without a size count as
-- nothing; a slot step's pinned tenants do not move with it) and the batch
-- ends before the step that would exceed a bound; the first step is
-- claimed whatever its size.
CREATE FUNCTION @extschema@.chash_steps_claim(migration bigint, max_steps int,
                                              max_rows bigint DEFAULT NULL, max_bytes bigint DEFAULT NULL)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
#variable_conflict use_column
DECLARE
    dir text;
    st text;
    first record;
    chosen int[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'max_steps'], ARRAY[$1 IS NULL, $2 IS NULL]);
    IF $2 < 1 OR $3 < 1 OR $4 < 1 THEN
        RAISE EXCEPTION '% must be positive',
                CASE WHEN $2 < 1 THEN 'max_steps' WHEN $3 < 1 THEN 'max_rows' ELSE 'max_bytes' END
            USING ERRCODE = '22023';
    END IF;
    dir := @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR KEY SHARE;
    IF st <> 'running' THEN
        RETURN;                 -- nothing left to claim: the worker stops
    END IF;
    SELECT p.step, p.from_shard, p.to_shard, p.slot IS NULL AS by_tenant INTO first
      FROM @extschema@.chash_migration_step p
     WHERE p.migration = $1 AND p.state = 'pending'
     ORDER BY p.step LIMIT 1
       FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    WITH candidate AS MATERIALIZED (
        SELECT p.step, p.slot, p.tenant FROM @extschema@.chash_migration_step p
         WHERE p.migration = $1 AND p.state = 'pending' AND p.step >= first.step
           AND p.from_shard = first.from_shard AND p.to_shard = first.to_shard
           AND (p.slot IS NULL) = first.by_tenant
         ORDER BY p.step LIMIT least($2, @extschema@.chash_steps_max())
           FOR UPDATE SKIP LOCKED
    ), slot_size AS (
        -- the sizes only when a bound asks for them: one pass over the
        -- directory's sized tenants
        SELECT @extschema@.chash_slot(dir, t.tenant) AS slot,
               pg_catalog.sum(t.rows) AS rows, pg_catalog.sum(t.bytes) AS bytes
          FROM @extschema@.chash_tenant_size t
         WHERE ($3 IS NOT NULL OR $4 IS NOT NULL) AND NOT first.by_tenant AND t.directory = dir
           AND NOT EXISTS (SELECT FROM @extschema@.chash_override o
                            WHERE o.directory = dir AND o.tenant = t.tenant)
         GROUP BY 1
    ), estimate AS (
        SELECT c.step,
               pg_catalog.sum(COALESCE(z.rows, y.rows, 0)) OVER w AS rows_so_far,
               pg_catalog.sum(COALESCE(z.bytes, y.bytes, 0)) OVER w AS bytes_so_far,
               pg_catalog.row_number() OVER w AS n
          FROM candidate c
          LEFT JOIN slot_size z ON z.slot = c.slot
          LEFT JOIN @extschema@.chash_tenant_size y
                 ON ($3 IS NOT NULL OR $4 IS NOT NULL) AND y.directory = dir AND y.tenant = c.tenant
        WINDOW w AS (ORDER BY c.step)
    )
    SELECT array_agg(e.step ORDER BY e.step) INTO chosen FROM estimate e
     WHERE e.n = 1 OR ((e.rows_so_far <= $3 OR $3 IS NULL) AND (e.bytes_so_far <= $4 OR $4 IS NULL));
    RETURN QUERY
        UPDATE @extschema@.chash_migration_step s
           SET state = 'copying', started_at = pg_catalog.now(),
               claimed_by = pg_catalog.concat_ws(' ',
                   NULLIF(pg_catalog.current_setting('application_name'), ''),
                   'pid ' || pg_catalog.pg_backend_pid())
         WHERE s.migration = $1 AND s.step = ANY (chosen)
        RETURNING s.step, s.slot, s.tenant, s.from_shard, s.to_shard;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_claim(bigint, int, bigint, bigint) IS
    'claims a batch: the next pending step and the pending steps after it with the same shards, up to max_steps (and max_rows / max_bytes by chash_tenant_size); pending -> copying';

CREATE FUNCTION @extschema@.chash_steps_fence(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    dir text;
    bad record;
    fence_slots int[];
    fence_tenants text[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps'], ARRAY[$1 IS NULL, $2 IS NULL]);
    SELECT l.step, l.state, l.directory INTO bad
      FROM @extschema@.chash_steps_lock($1, $2) l
     ORDER BY l.state NOT IN ('copying', 'fenced') DESC, l.step LIMIT 1;
    IF bad.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not being copied', bad.step, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying") step can be fenced.', bad.state);
    END IF;
    dir := bad.directory;
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

CREATE FUNCTION @extschema@.chash_steps_complete(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    dir text;
    bad record;
    t record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps'], ARRAY[$1 IS NULL, $2 IS NULL]);
    SELECT l.step, l.state, l.directory INTO bad
      FROM @extschema@.chash_steps_lock($1, $2) l
     ORDER BY l.state NOT IN ('copying', 'fenced', 'done') DESC, l.step LIMIT 1;
    IF bad.state NOT IN ('copying', 'fenced', 'done') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', bad.step, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can complete.', bad.state);
    END IF;
    dir := bad.directory;

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

CREATE FUNCTION @extschema@.chash_steps_release(migration bigint, steps int[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps'], ARRAY[$1 IS NULL, $2 IS NULL]);
    SELECT l.step, l.state INTO bad
      FROM @extschema@.chash_steps_lock($1, $2, false) l
     ORDER BY l.state NOT IN ('copying', 'fenced') DESC, l.step LIMIT 1;
    IF bad.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', bad.step, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can be released.', bad.state);
    END IF;
    -- the leases go with a trigger (chash_step_lease_forget), as for one step
    UPDATE @extschema@.chash_migration_step s
       SET state = 'pending', claimed_by = NULL, started_at = NULL
     WHERE s.migration = $1 AND s.step = ANY ($2);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_release(bigint, int[]) IS
    'chash_step_release of a batch: its steps go back to pending, nothing else changes';
