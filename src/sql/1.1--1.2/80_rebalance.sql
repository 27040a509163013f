-- ---------------------------------------------------------------------------
-- Background rebalancing (docs/shards.md, "Background rebalancing")
--
-- chash_rebalance_start plans a migration (or takes over the running one)
-- and starts a background worker on the directory server that moves it
-- with chash_move's engine (src/rebalance_worker.c).  chash_rebalance has
-- one row per directory, the last rebalance: the worker's state and
-- figures, written by the worker and by the internal C functions below,
-- which write it as the extension's owner (no role writes it directly: the
-- workers connect as the role it names).  run counts the starts; a worker
-- works for one run and stops when a later start takes over.
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_rebalance (
    directory text PRIMARY KEY REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    migration bigint NOT NULL REFERENCES @extschema@.chash_migration (id) ON DELETE CASCADE,
    run int NOT NULL DEFAULT 1,
    state text NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'stopping', 'stopped', 'failed', 'done')),
    max_parallel int NOT NULL CHECK (max_parallel > 0),
    max_rate bigint CHECK (max_rate > 0),
    role name NOT NULL,
    worker_pid int,
    jobs int,
    rows_moved bigint NOT NULL DEFAULT 0 CHECK (rows_moved >= 0),
    rows_per_second float8,
    started_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_error text,
    last_error_steps int[]
);
COMMENT ON TABLE @extschema@.chash_rebalance IS
    'the last background rebalance of each directory: its migration, state, the role its workers connect as, and its figures; not routing state';
COMMENT ON COLUMN @extschema@.chash_rebalance.jobs IS
    'the batches the worker moves at once: max_parallel, or fewer when chash.max_rebalance_jobs leaves fewer free';

CREATE FUNCTION @extschema@.chash_rebalance_launch(directory text, migration bigint, max_parallel int,
                                                   max_rate bigint)
    RETURNS void
    AS 'MODULE_PATHNAME', 'chash_rebalance_launch'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_rebalance_launch(text, bigint, int, bigint) IS
    'internal: records a run of the rebalance of directory for the current role and starts its worker when the transaction commits; needs shared_preload_libraries = ''chash'' and membership in chash_mover';

CREATE FUNCTION @extschema@.chash_rebalance_request_stop(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_rebalance_request_stop'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_rebalance_request_stop(text) IS
    'internal: signals the live worker of the rebalance of directory to stop and returns stopping, or records the rebalance stopped when no worker of it runs; returns its state';

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

CREATE VIEW @extschema@.chash_rebalance_status WITH (security_invoker = true) AS
SELECT r.directory, r.migration,
       r.state,     -- done once the worker has finished: the source rows deleted, the leases gone
       p.done AS steps_done, p.total AS steps_total,
       r.rows_moved,
       r.rows_per_second,
       CASE WHEN r.state IN ('running', 'stopping') THEN p.time_left ELSE NULL END AS time_left,
       (SELECT pg_catalog.array_agg(pg_catalog.format('%s: steps %s (%s)', h.holder, h.steps, h.progress)
                                    ORDER BY h.holder, h.progress)
          FROM (SELECT l.holder, l.progress,
                       pg_catalog.string_agg(l.step::text, ',' ORDER BY l.step) AS steps
                  FROM @extschema@.chash_step_lease l
                 WHERE l.migration = r.migration
                 GROUP BY l.holder, l.progress) h) AS in_flight,
       r.last_error, r.last_error_steps,
       r.max_parallel, r.jobs, r.max_rate, r.role, r.worker_pid, r.started_at, r.updated_at
  FROM @extschema@.chash_rebalance r
  JOIN @extschema@.chash_migration_progress p ON p.migration = r.migration;
COMMENT ON VIEW @extschema@.chash_rebalance_status IS
    'per directory, its last background rebalance: state, steps done of all, rows moved and their pace, the time left, the steps in flight per lease holder, and the last error with its steps';

CREATE FUNCTION @extschema@.chash_rebalance_wait(directory text, timeout interval DEFAULT NULL) RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s record;
    until timestamptz := pg_catalog.clock_timestamp() + $2;
    said bigint := -1;
    said_at timestamptz;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    IF EXISTS (SELECT FROM @extschema@.chash_rebalance r
                WHERE r.directory = $1 AND r.xmin = pg_catalog.pg_current_xact_id_if_assigned()::xid) THEN
        RAISE EXCEPTION 'the rebalance of directory "%" starts when this transaction commits', $1
            USING ERRCODE = '25000', HINT = 'Wait for it in a later transaction.';
    END IF;
    LOOP
        SELECT * INTO s FROM @extschema@.chash_rebalance_status r WHERE r.directory = $1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'directory "%" has no rebalance', $1
                USING ERRCODE = '42704', HINT = 'Start one with chash_rebalance_start().';
        END IF;
        IF s.state NOT IN ('running', 'stopping') THEN
            RETURN s.state;
        END IF;
        IF until IS NOT NULL AND pg_catalog.clock_timestamp() >= until THEN
            RETURN s.state;
        END IF;
        IF s.steps_done <> said AND (said_at IS NULL OR pg_catalog.clock_timestamp() >= said_at + interval '1 second') THEN
            RAISE NOTICE 'rebalance of directory "%": % of % steps, % rows moved%', $1,
                s.steps_done, s.steps_total, s.rows_moved,
                CASE WHEN s.time_left IS NOT NULL
                     THEN pg_catalog.format(', %s left', pg_catalog.date_trunc('second', s.time_left)) ELSE '' END;
            said := s.steps_done;
            said_at := pg_catalog.clock_timestamp();
        END IF;
        PERFORM pg_catalog.pg_sleep(0.2);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_rebalance_wait(text, interval) IS
    'waits until the rebalance of directory has ended (or timeout has passed), with its progress as NOTICEs; returns its state';

CREATE FUNCTION @extschema@.chash_rebalance_stop(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    -- the worker is signalled and records its state itself; this waits
    -- until its process has ended
    WHILE @extschema@.chash_rebalance_request_stop($1) = 'stopping' LOOP
        PERFORM pg_catalog.pg_sleep(0.1);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_rebalance_stop(text) IS
    'stops the background rebalance of directory: its worker gives back or finishes its batches, releases its leases and exits before this returns; a later chash_rebalance_start resumes';
