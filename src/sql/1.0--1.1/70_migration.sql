-- ---------------------------------------------------------------------------
-- Migrations: functions, 1.1 (docs/migrations.md)
--
-- As in 1.0, with these changes:
-- - a NULL required argument is 22004 naming it (1.0's STRICT functions
--   returned NULL and did nothing), checked before anything else;
-- - a new migration goes in through chash_migration_insert, which turns
--   the unique index "one running migration per directory"
--   (71_migration_integrity.sql) into 55006 should a direct INSERT with
--   triggers off race the check made under the directory lock (with
--   triggers on, its version bump waits for that lock);
-- - chash_step_release drops the step's lease (95_mover.sql).
-- The lock order is the one of docs/directory.md: the directory row, the
-- migration, its steps (in step order), shard rows, slots and overrides.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_lock_directory(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1 FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_lock(migration bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dir text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration'], ARRAY[$1 IS NULL]);
    SELECT m.directory INTO dir FROM @extschema@.chash_migration m WHERE m.id = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'migration % does not exist', $1 USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@.chash_migration_lock_directory(dir);
    RETURN dir;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_check_none_running(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    running bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    SELECT m.id INTO running FROM @extschema@.chash_migration m
     WHERE m.directory = $1 AND m.status = 'running' ORDER BY m.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'directory "%" already has an unfinished migration', $1
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Migration %s is running.', running),
                  HINT = 'Finish its steps, or cancel it with chash_migration_cancel().';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_finish_if_empty(migration bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration'], ARRAY[$1 IS NULL]);
    -- LIMIT 1: PERFORM runs its query to the end
    PERFORM FROM @extschema@.chash_migration_step s WHERE s.migration = $1 LIMIT 1;
    IF NOT FOUND THEN
        UPDATE @extschema@.chash_migration m
           SET status = 'done', finished_at = pg_catalog.now() WHERE m.id = $1;
        RAISE NOTICE 'nothing to move: the migration is done at once';
    END IF;
END
$$;

-- A new running migration of a directory whose row the caller has locked
-- and checked (chash_migration_check_none_running); 55006 also when a
-- direct INSERT got in between.  ON CONFLICT on the unique index rather
-- than an exception block: a subtransaction would make the next change of
-- the transaction bump the version a second time (chash_directory_bump
-- compares the row's xmin with the top transaction's id).
CREATE FUNCTION @extschema@.chash_migration_insert(directory text, kind text,
                                                   strategy text DEFAULT NULL, reverts bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    id bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'kind'], ARRAY[$1 IS NULL, $2 IS NULL]);
    INSERT INTO @extschema@.chash_migration AS m (directory, kind, strategy, reverts)
         VALUES ($1, $2, $3, $4)
    ON CONFLICT (directory) WHERE status = 'running' DO NOTHING
    RETURNING m.id INTO id;
    IF id IS NULL THEN
        PERFORM @extschema@.chash_migration_check_none_running($1);
        RAISE EXCEPTION 'directory "%" already has an unfinished migration', $1
            USING ERRCODE = '55006',
                  DETAIL = 'Another migration of the directory started at the same time.',
                  HINT = 'Finish its steps, or cancel it with chash_migration_cancel().';
    END IF;
    RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_insert(text, text, text, bigint) IS
    'internal: inserts a running migration (55006 when the directory has one already) and returns its id';

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_start(directory text, strategy text DEFAULT 'slots',
                                                             max_moves int DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'strategy'], ARRAY[$1 IS NULL, $2 IS NULL]);
    PERFORM @extschema@.chash_migration_lock_directory($1);
    PERFORM @extschema@.chash_migration_check_none_running($1);
    id := @extschema@.chash_migration_insert($1, 'rebalance', $2);
    INSERT INTO @extschema@.chash_migration_step (migration, step, slot, from_shard, to_shard)
         SELECT id, p.step, p.slot, p.from_shard, p.to_shard
           FROM @extschema@.chash_plan_rebalance($1, $2, $3) p;
    PERFORM @extschema@.chash_migration_finish_if_empty(id);
    RETURN id;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_move_tenant(directory text, tenant text, to_shard text)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id bigint;
    canonical text;
    from_shard text;
    target_state text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'tenant', 'to_shard'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM @extschema@.chash_migration_lock_directory($1);
    PERFORM @extschema@.chash_migration_check_none_running($1);
    SELECT s.state INTO target_state FROM @extschema@.chash_shard s
     WHERE s.directory = $1 AND s.shard = $3;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"', $3, $1
            USING ERRCODE = '42704';
    END IF;
    IF target_state <> 'active' THEN
        RAISE EXCEPTION 'shard "%" is not active', $3
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; tenants can only move to an active shard.', target_state);
    END IF;
    -- canonical form (22P02 for a tenant that is not of the key type)
    SELECT e.tenant, e.shard INTO canonical, from_shard FROM @extschema@.chash_route_explain($1, $2) e;
    IF from_shard = $3 THEN
        RAISE EXCEPTION 'tenant "%" already routes to shard "%"', canonical, $3
            USING ERRCODE = '22023';
    END IF;
    id := @extschema@.chash_migration_insert($1, 'move_tenant');
    INSERT INTO @extschema@.chash_migration_step (migration, step, tenant, from_shard, to_shard)
         VALUES (id, 1, canonical, from_shard, $3);
    RETURN id;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_step_claim(migration bigint)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration'], ARRAY[$1 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR KEY SHARE;
    IF st <> 'running' THEN
        RETURN;                 -- nothing left to claim: the worker stops
    END IF;
    RETURN QUERY
        WITH claimed AS (
        UPDATE @extschema@.chash_migration_step s
           SET state = 'copying', started_at = pg_catalog.now(),
               claimed_by = pg_catalog.concat_ws(' ',
                   NULLIF(pg_catalog.current_setting('application_name'), ''),
                   'pid ' || pg_catalog.pg_backend_pid())
         -- a scalar subquery runs once (an InitPlan); a joined one may be
         -- rescanned and, with SKIP LOCKED, claim a second step
         WHERE s.migration = $1
           AND s.step = (SELECT p.step FROM @extschema@.chash_migration_step p
                          WHERE p.migration = $1 AND p.state = 'pending'
                          ORDER BY p.step LIMIT 1
                            FOR UPDATE SKIP LOCKED)
        RETURNING s.step, s.slot, s.tenant, s.from_shard, s.to_shard)
        SELECT * FROM claimed;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_step_lock(migration bigint, step int,
                                                       OUT state text, OUT slot int, OUT tenant text,
                                                       OUT from_shard text, OUT to_shard text,
                                                       OUT directory text, OUT kind text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step'], ARRAY[$1 IS NULL, $2 IS NULL]);
    -- the directory row first (one lock order), then the step's row
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT s.state, s.slot, s.tenant, s.from_shard, s.to_shard, m.directory, m.kind
      INTO state, slot, tenant, from_shard, to_shard, directory, kind
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_migration m ON m.id = s.migration
     WHERE s.migration = $1 AND s.step = $2
       FOR UPDATE OF s;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'step % of migration % does not exist', $2, $1 USING ERRCODE = '42704';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lock(bigint, int) IS
    'internal: locks the directory of the migration, then the step, and returns the step';

CREATE OR REPLACE FUNCTION @extschema@.chash_step_fence(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state = 'fenced' THEN
        RETURN;                 -- a worker retrying after a lost connection
    END IF;
    IF r.state <> 'copying' THEN
        RAISE EXCEPTION 'step % of migration % is not being copied', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying") step can be fenced.', r.state);
    END IF;
    UPDATE @extschema@.chash_migration_step s SET state = 'fenced'
     WHERE s.migration = $1 AND s.step = $2;
    -- The barrier (src/fence.c): wait for the writers admitted before, and
    -- keep the ones that come now waiting until the fence commits.
    PERFORM @extschema@.chash_step_fence_barrier(r.directory, r.slot, r.tenant);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_step_complete(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
    owner text;
    slot_owner text;
BEGIN
    -- Completes of one directory take turns (the lock chash_step_lock
    -- takes), so the last one sees every other step done.
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state = 'done' THEN
        RETURN;                 -- a worker retrying after a lost connection
    END IF;
    IF r.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can complete.', r.state);
    END IF;

    IF r.slot IS NOT NULL THEN
        UPDATE @extschema@.chash_slot s SET shard = r.to_shard
         WHERE s.directory = r.directory AND s.slot = r.slot AND s.shard = r.from_shard;
        IF NOT FOUND THEN
            SELECT s.shard INTO owner FROM @extschema@.chash_slot s
             WHERE s.directory = r.directory AND s.slot = r.slot;
            RAISE EXCEPTION 'slot % of directory "%" is no longer owned by shard "%"',
                    r.slot, r.directory, r.from_shard
                USING ERRCODE = '55000',
                      DETAIL = pg_catalog.format('Its owner is now "%s".', owner),
                      HINT = 'Release the step or cancel the migration.';
        END IF;
    ELSE
        SELECT o.shard INTO owner FROM @extschema@.chash_override o
         WHERE o.directory = r.directory AND o.tenant = r.tenant FOR UPDATE;
        SELECT s.shard INTO slot_owner FROM @extschema@.chash_slot s
         WHERE s.directory = r.directory AND s.slot = @extschema@.chash_slot(r.directory, r.tenant);
        IF COALESCE(owner, slot_owner) IS DISTINCT FROM r.from_shard THEN
            RAISE EXCEPTION 'tenant "%" of directory "%" no longer routes to shard "%"',
                    r.tenant, r.directory, r.from_shard
                USING ERRCODE = '55000',
                      DETAIL = pg_catalog.format('It routes to "%s".', COALESCE(owner, slot_owner)),
                      HINT = 'Release the step or cancel the migration.';
        END IF;
        IF r.kind = 'revert' AND r.to_shard = slot_owner THEN
            -- undoing a move: the tenant follows its slot again
            DELETE FROM @extschema@.chash_override o
             WHERE o.directory = r.directory AND o.tenant = r.tenant;
        ELSE
            INSERT INTO @extschema@.chash_override AS o (directory, tenant, shard, note)
                 VALUES (r.directory, r.tenant, r.to_shard,
                         pg_catalog.format('moved by migration %s', $1))
            ON CONFLICT (directory, tenant) DO UPDATE
                 SET shard = excluded.shard, note = excluded.note;
        END IF;
    END IF;

    UPDATE @extschema@.chash_migration_step s
       SET state = 'done', finished_at = pg_catalog.now()
     WHERE s.migration = $1 AND s.step = $2;
    -- LIMIT 1: PERFORM runs its query to the end, and this must not cost
    -- more the more steps are left
    PERFORM FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.state IN ('pending', 'copying', 'fenced') LIMIT 1;
    IF NOT FOUND THEN
        UPDATE @extschema@.chash_migration m
           SET status = 'done', finished_at = pg_catalog.now()
         WHERE m.id = $1 AND m.status = 'running';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_step_release(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can be released.', r.state);
    END IF;
    UPDATE @extschema@.chash_migration_step s
       SET state = 'pending', claimed_by = NULL, started_at = NULL
     WHERE s.migration = $1 AND s.step = $2;
    -- A mover holding the step loses its lease (trigger
    -- chash_step_lease_forget; its next call says so); the rows it may have
    -- left on the target are deleted by the next claim's copy.
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_cancel(migration bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration'], ARRAY[$1 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR UPDATE;
    IF st <> 'running' THEN
        RAISE EXCEPTION 'migration % is not running', $1
            USING ERRCODE = '55000', DETAIL = pg_catalog.format('Its status is "%s".', st);
    END IF;
    -- Steps in flight are cancelled too: their owner never changed, and a
    -- worker's fence or complete now fails instead of racing the cancel.
    UPDATE @extschema@.chash_migration_step s
       SET state = 'cancelled', finished_at = pg_catalog.now()
     WHERE s.migration = $1 AND s.state IN ('pending', 'copying', 'fenced');
    UPDATE @extschema@.chash_migration m
       SET status = 'cancelled', finished_at = pg_catalog.now() WHERE m.id = $1;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_migration_revert(migration bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dir text;
    st text;
    id bigint;
    bad record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration'], ARRAY[$1 IS NULL]);
    dir := @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR UPDATE;
    IF st = 'running' THEN
        PERFORM @extschema@.chash_migration_cancel($1);
    END IF;
    PERFORM @extschema@.chash_migration_check_none_running(dir);

    -- Every done step must still hold: its slot or tenant on its to_shard,
    -- and its from_shard able to take it back.
    SELECT s.step, s.slot, s.tenant, s.to_shard, o.shard AS owner INTO bad
      FROM @extschema@.chash_migration_step s
      LEFT JOIN @extschema@.chash_slot o
             ON s.slot IS NOT NULL AND o.directory = dir AND o.slot = s.slot
     WHERE s.migration = $1 AND s.state = 'done'
       AND (CASE WHEN s.slot IS NOT NULL THEN o.shard
                 ELSE @extschema@.chash_route(dir, s.tenant) END) IS DISTINCT FROM s.to_shard
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'migration % cannot be reverted: % has moved since',
                $1, CASE WHEN bad.slot IS NOT NULL THEN 'slot ' || bad.slot
                         ELSE pg_catalog.format('tenant "%s"', bad.tenant) END
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Step %s moved it to "%s"; it is on "%s" now.',
                                             bad.step, bad.to_shard,
                                             COALESCE(bad.owner, @extschema@.chash_route(dir, bad.tenant)));
    END IF;
    SELECT s.step, s.from_shard INTO bad
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_shard sh ON sh.directory = dir AND sh.shard = s.from_shard
     WHERE s.migration = $1 AND s.state = 'done' AND sh.state = 'retired'
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'migration % cannot be reverted: shard "%" is retired', $1, bad.from_shard
            USING ERRCODE = '55000',
                  HINT = 'Set the shard back to "active" or "draining" first.';
    END IF;

    id := @extschema@.chash_migration_insert(dir, 'revert', NULL, $1);
    -- the moves undone in the reverse order of the plan
    INSERT INTO @extschema@.chash_migration_step (migration, step, slot, tenant, from_shard, to_shard)
         SELECT id, pg_catalog.row_number() OVER (ORDER BY s.step DESC),
                s.slot, s.tenant, s.to_shard, s.from_shard
           FROM @extschema@.chash_migration_step s
          WHERE s.migration = $1 AND s.state = 'done';
    PERFORM @extschema@.chash_migration_finish_if_empty(id);
    RETURN id;
END
$$;
