-- ---------------------------------------------------------------------------
-- Background rebalancing (docs/shards.md, "Background rebalancing")
--
-- chash_rebalance_start plans a migration (or takes over the running one)
-- and starts a background worker on the directory server that moves it
-- with chash_move's engine (src/rebalance_worker.c).  chash_rebalance has
-- one row per directory, the last rebalance: the worker's state and
-- figures, written by the worker and by chash_rebalance_start and
-- chash_rebalance_stop (C), which write it as the extension's owner with
-- search_path pinned (no role writes it directly: the workers connect as
-- the role it names).  run counts the starts; a worker
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

\ir ../functions/chash_rebalance_start/1.2.sql

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

\ir ../functions/chash_rebalance_wait/1.2.sql

\ir ../functions/chash_rebalance_stop/1.2.sql
