-- The worked example of docs/migrations.md, kept here so it cannot rot:
-- a 4-shard directory with 100,000 tenants gains a fifth shard.

-- 1. Four shards, 16,384 slots (4,096 each), 100,000 tenants.
SELECT chash_create_directory('orgs', ARRAY['pg1', 'pg2', 'pg3', 'pg4']);
CREATE TABLE accounts AS
SELECT 'org-' || i AS org_id, repeat('x', 20 + i % 50) AS payload
  FROM generate_series(1, 100000) i;
SELECT chash_measure_tenants('orgs', 'accounts', 'org_id');
CREATE TABLE routed_before AS
SELECT org_id, chash_slot('orgs', org_id) AS slot, chash_route('orgs', org_id) AS shard
  FROM accounts;
SELECT shard, count(*) AS tenants FROM routed_before GROUP BY 1 ORDER BY 1;

-- 2. A fifth shard joins; it owns nothing until the slots move.
SELECT chash_add_shard('orgs', 'pg5');
SELECT from_shard, to_shard, count(*) AS slots, sum(tenants) AS tenants
  FROM chash_plan_rebalance('orgs') GROUP BY 1, 2 ORDER BY 1, 2;

-- 3. Save the plan as a migration.
SELECT chash_migration_start('orgs') AS m \gset
SELECT summary, status FROM chash_migration_progress WHERE migration = :m;

-- 4. A worker: claim a step, copy the slot's rows, fence it, copy what
-- changed meanwhile, complete it.  Each call commits on its own, so many
-- workers can run side by side.
CREATE PROCEDURE run_worker(migration bigint, max_steps int DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n int := 0;
BEGIN
    LOOP
        EXIT WHEN n = max_steps;
        SELECT * INTO s FROM chash_step_claim(migration);
        EXIT WHEN NOT FOUND;
        COMMIT;
        -- copy the step's rows (see docs/migrations.md) from s.from_shard to s.to_shard
        PERFORM chash_step_fence(migration, s.step);
        COMMIT;
        -- copy the rows written since the first copy, then flip
        PERFORM chash_step_complete(migration, s.step);
        COMMIT;
        n := n + 1;
    END LOOP;
END
$$;
CALL run_worker(:m, 1200);
SELECT summary, percent, done, in_flight, pending, status,
       time_left IS NOT NULL AS has_estimate
  FROM chash_migration_progress WHERE migration = :m;
CALL run_worker(:m);
SELECT summary, percent, status, time_left FROM chash_migration_progress WHERE migration = :m;

-- 5. Exactly the planned fifth of the slots moved, all to pg5, and every
-- tenant routes to its slot's new owner.
SELECT shard, count(*) AS slots FROM chash_slot WHERE directory = 'orgs' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS tenants,
       count(*) FILTER (WHERE chash_route('orgs', org_id) <> shard) AS moved,
       count(*) FILTER (WHERE chash_route('orgs', org_id) <> shard
                          AND chash_route('orgs', org_id) <> 'pg5') AS moved_elsewhere
  FROM routed_before;
SELECT count(*) AS misrouted
  FROM routed_before b
  JOIN chash_migration_step s ON s.migration = :m AND s.slot = b.slot
 WHERE chash_route('orgs', b.org_id) <> s.to_shard;
SELECT count(*) AS unmoved_changed
  FROM routed_before b
 WHERE NOT EXISTS (SELECT FROM chash_migration_step s WHERE s.migration = :m AND s.slot = b.slot)
   AND chash_route('orgs', b.org_id) <> b.shard;
SELECT count(*) AS moves_left FROM chash_plan_rebalance('orgs');

DROP PROCEDURE run_worker;
DROP TABLE accounts, routed_before;
SELECT chash_drop_directory('orgs');
