-- Batches of migration steps (docs/migrations.md, "Batches"): claimed,
-- fenced, completed and released together, one directory version each;
-- the mover's leases over a batch.  Concurrency (writers of a fenced
-- batch) is in specs/batch_fence.spec.

\i sql/include/bad.sql
CREATE FUNCTION bad_migration(statement text) RETURNS text LANGUAGE sql AS
$$ SELECT regexp_replace(bad(statement), '([Mm]igration) [0-9]+', '\1 N', 'g') $$;

SELECT chash_create_directory('bat', ARRAY['s1', 's2'], 64);
SELECT chash_add_shard('bat', 's3');
SELECT chash_migration_start('bat') AS m \gset
SELECT from_shard, to_shard, count(*), min(step), max(step)
  FROM chash_migration_step WHERE migration = :m GROUP BY 1, 2 ORDER BY 4;

-- tenants of every slot, to watch their routes
CREATE TABLE bat_tenants AS
SELECT t, chash_slot('bat', t) AS slot FROM (SELECT 'tenant' || i AS t FROM generate_series(1, 2000) i) x;
SELECT count(DISTINCT slot) AS slots_with_tenants FROM bat_tenants;
-- routes as this session's cache has them, against a read of the tables
CREATE FUNCTION bat_misrouted() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM bat_tenants b JOIN chash_slot s ON s.directory = 'bat' AND s.slot = b.slot
     WHERE chash_route('bat', b.t) IS DISTINCT FROM s.shard
$$;
SELECT bat_misrouted();

-- claim: the next pending step and the steps after it with the same pair
SELECT * FROM chash_steps_claim(:m, 5);
SELECT step, state FROM chash_migration_step WHERE migration = :m AND state <> 'pending' ORDER BY step;
-- a batch never crosses into another shard pair: the s1 steps left are fewer than 100
SELECT count(*), min(step), max(step), min(from_shard), max(from_shard) FROM chash_steps_claim(:m, 100);
SELECT count(*) FILTER (WHERE state = 'copying') AS copying FROM chash_migration_step WHERE migration = :m;

-- fence: one transaction, one version, every slot of the batch refused for writes
SELECT version AS v0 FROM chash_directory WHERE name = 'bat' \gset
SELECT array_agg(step ORDER BY step) AS batch FROM chash_migration_step
 WHERE migration = :m AND state = 'copying' AND from_shard = 's1' \gset
SELECT chash_steps_fence(:m, :'batch');
SELECT version - :v0 AS versions FROM chash_directory WHERE name = 'bat';
SELECT chash_steps_fence(:m, :'batch');   -- again: a retrying worker is fine, no new version
SELECT version - :v0 AS versions FROM chash_directory WHERE name = 'bat';
SELECT count(*) AS fenced FROM chash_migration_step WHERE migration = :m AND state = 'fenced';
-- every tenant of every fenced slot is refused, no other tenant is
SELECT count(*) FILTER (WHERE bad(format('SELECT chash_route_for_write(%L, %L)', 'bat', b.t)) LIKE '40001:%') AS refused,
       count(*) FILTER (WHERE s.state = 'fenced') AS of_fenced_slots
  FROM bat_tenants b
  LEFT JOIN chash_migration_step s ON s.migration = :m AND s.slot = b.slot AND s.state = 'fenced';
SELECT bad_migration(format('SELECT chash_route_for_write(%L, %L)', 'bat',
                            (SELECT t FROM bat_tenants WHERE slot = 0 ORDER BY t LIMIT 1)));
-- reads still route to the old shard, and the catch-up followed the version
SELECT bat_misrouted();
SELECT count(*) AS moving FROM bat_tenants b, chash_route_explain('bat', b.t) e
 WHERE e.slot_state = 'fenced' AND e.moving_to = 's3';
-- the shard's wait over the batch (here: the directory database itself)
SELECT chash_shard_wait_fence('bat', :m, :'batch'::int[]);

-- complete: every slot flips in one version
SELECT version AS v1 FROM chash_directory WHERE name = 'bat' \gset
SELECT chash_steps_complete(:m, :'batch');
SELECT version - :v1 AS versions FROM chash_directory WHERE name = 'bat';
SELECT chash_steps_complete(:m, :'batch');   -- again: a no-op
SELECT version - :v1 AS versions FROM chash_directory WHERE name = 'bat';
SELECT count(*) AS owned_by_s3 FROM chash_slot WHERE directory = 'bat' AND shard = 's3';
SELECT bat_misrouted();
SELECT count(*) AS refused FROM bat_tenants b
 WHERE bad(format('SELECT chash_route_for_write(%L, %L)', 'bat', b.t)) LIKE '40001:%';
-- the history names each slot of the version, and the batch's steps as one
-- key, their migration (63_batch_history.sql)
SELECT kind, count(*) FROM chash_directory_change
 WHERE directory = 'bat' AND version = :v1 + 1 GROUP BY kind ORDER BY kind;
SELECT jsonb_array_length(chash_directory_changes('bat', :v1) -> 'slots') AS slot_runs,
       jsonb_array_length(chash_directory_changes('bat', :v1) -> 'steps') AS steps_in_flight;

-- release: the other claimed batch (s2 -> s3) goes back to pending
SELECT array_agg(step ORDER BY step) AS batch2 FROM chash_migration_step
 WHERE migration = :m AND state = 'copying' \gset
SELECT chash_steps_release(:m, :'batch2');
SELECT count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'done') AS done
  FROM chash_migration_step WHERE migration = :m;

-- bad batches
SELECT bad_migration(format('SELECT chash_steps_fence(%s, %L)', :m, '{}'));
SELECT bad_migration(format('SELECT chash_steps_fence(%s, %L)', :m, '{1,NULL}'));
SELECT bad_migration(format('SELECT chash_steps_fence(%s, %L)', :m, '{1,999}'));
SELECT bad_migration(format('SELECT chash_steps_fence(%s, %L)', :m, '{1}'));                  -- done
SELECT bad_migration(format('SELECT chash_steps_complete(%s, %L)', :m, :'batch2'));           -- pending
SELECT bad_migration(format('SELECT chash_steps_release(%s, %L)', :m, :'batch2'));            -- pending
SELECT bad_migration(format('SELECT chash_steps_claim(%s, 0)', :m));
SELECT bad_migration(format('SELECT chash_steps_claim(%s, 1, 0)', :m));
SELECT bad_migration('SELECT chash_steps_fence(-1, ''{1}'')');
SELECT bad_migration('SELECT chash_shard_wait_fence(''bat'', 1, ''{}''::int[])');
-- steps of two shard pairs are not one batch
SELECT step AS s2_first FROM chash_steps_claim(:m, 1) \gset
SELECT bad_migration(format('SELECT chash_steps_complete(%s, ARRAY[2, %s])', :m, :s2_first));   -- s1 and s2
-- a batch whose slot has moved meanwhile changes nothing
UPDATE chash_slot SET shard = 's1' WHERE directory = 'bat'
   AND slot = (SELECT slot FROM chash_migration_step WHERE migration = :m AND step = :s2_first);
SELECT version AS v2 FROM chash_directory WHERE name = 'bat' \gset
SELECT bad_migration(format('SELECT chash_steps_complete(%s, ARRAY[%s])', :m, :s2_first));
SELECT version = :v2 AS unchanged FROM chash_directory WHERE name = 'bat';
SELECT chash_steps_release(:m, ARRAY[:s2_first]);
UPDATE chash_slot SET shard = 's2' WHERE directory = 'bat'
   AND slot = (SELECT slot FROM chash_migration_step WHERE migration = :m AND step = :s2_first);

-- bounds by size: chash_tenant_size gives each tenant 10 rows; the batch
-- ends before the step that would pass 1,000 rows (the first step is
-- taken whatever its size)
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows)
SELECT 'bat', t, 1000, 10 FROM bat_tenants;
CREATE TEMP TABLE slot_rows AS
SELECT s.step, count(b.t) * 10 AS rows FROM chash_migration_step s
  LEFT JOIN bat_tenants b ON b.slot = s.slot
 WHERE s.migration = :m AND s.state = 'pending' GROUP BY s.step;
SELECT array_agg(c.step ORDER BY c.step) = (
         SELECT array_agg(x.step ORDER BY x.step) FROM (
           SELECT r.step, sum(r.rows) OVER (ORDER BY r.step) AS so_far, row_number() OVER (ORDER BY r.step) AS n
             FROM slot_rows r) x WHERE x.n = 1 OR x.so_far <= 1000) AS bounded_by_rows,
       count(*) AS steps
  FROM chash_steps_claim(:m, 1000, max_rows => 1000) c;
SELECT array_agg(step) AS batch3 FROM chash_migration_step WHERE migration = :m AND state = 'copying' \gset
SELECT chash_steps_release(:m, :'batch3');
SELECT count(*) AS steps FROM chash_steps_claim(:m, 1000, max_bytes => 1);   -- the first step alone
SELECT array_agg(step) AS batch3 FROM chash_migration_step WHERE migration = :m AND state = 'copying' \gset
SELECT chash_steps_release(:m, :'batch3');
-- a pinned tenant does not move with its slot, so it does not count
DO $$ BEGIN
    PERFORM chash_pin('bat', t, 's2') FROM bat_tenants
      WHERE slot IN (SELECT slot FROM chash_migration_step
                      WHERE migration = currval('chash_migration_id_seq') AND state = 'pending');
END $$;
SELECT count(*) = (SELECT count(*) FROM chash_migration_step WHERE migration = :m AND state = 'pending') AS all_claimed
  FROM chash_steps_claim(:m, 1000, max_rows => 1);
DO $$ BEGIN
    PERFORM chash_unpin('bat', tenant) FROM chash_override WHERE directory = 'bat';
END $$;
SELECT array_agg(step) AS batch3 FROM chash_migration_step WHERE migration = :m AND state = 'copying' \gset
SELECT chash_steps_release(:m, :'batch3');
-- at most chash_steps_max() steps, however many are asked for
SELECT chash_steps_max() = current_setting('max_locks_per_transaction')::int
                         * current_setting('max_connections')::int / 4 AS quarter_of_lock_table;

-- leases over a batch
SELECT step, state, progress FROM chash_steps_lease_claim(:m, 'mover-a', '1 hour', 3);
SELECT array_agg(step ORDER BY step) AS lb FROM chash_step_lease WHERE migration = :m \gset
SELECT bad_migration($$SELECT chash_add_table('bat', 'public.bat_late', 'tenant')$$);   -- copying
SELECT bad_migration(format('SELECT chash_steps_lease_fence(%s, %L, %L, %L)', :m, :'lb', 'mover-b', '1 hour'));
SELECT bad_migration(format('SELECT chash_steps_lease_complete(%s, %L, %L, %L)', :m, :'lb', 'mover-a', '1 hour'));
SELECT chash_steps_lease_fence(:m, :'lb', 'mover-a', '1 hour');
SELECT bad_migration($$SELECT chash_add_table('bat', 'public.bat_late', 'tenant')$$);   -- fenced
SELECT bad_migration(format('SELECT chash_steps_lease_record(%s, %L, %L, %L, %L)', :m, :'lb', 'mover-a', 'subscribed', '1 hour'));
SELECT bad_migration(format('SELECT chash_steps_lease_record(%s, %L, %L, %L, %L, %L)', :m, :'lb', 'mover-a', 'copied', '1 hour', '{1}'));
SELECT chash_steps_lease_record(:m, :'lb', 'mover-a', 'copied', '1 hour', ARRAY[10, 20, 30], NULL);
SELECT step, holder, progress, rows, bytes FROM chash_step_lease WHERE migration = :m ORDER BY step;
-- the mover dies: another takes the batch over as it was left
UPDATE chash_step_lease SET lease_until = now() - interval '1 second' WHERE migration = :m;
SELECT step, state, progress FROM chash_steps_lease_claim(:m, 'mover-b', '1 hour', 10);
SELECT bad_migration(format('SELECT chash_steps_lease_complete(%s, %L, %L, %L)', :m, :'lb', 'mover-a', '1 hour'));
SELECT chash_steps_lease_complete(:m, :'lb', 'mover-b', '1 hour');
SELECT step, holder, progress FROM chash_step_lease WHERE migration = :m ORDER BY step;
SELECT bad_migration(format('SELECT chash_steps_lease_release(%s, %L, %L)', :m, :'lb', 'mover-b'));
-- a table is neither registered nor unregistered while a batch is in
-- flight: copying (above), fenced (above) or, as here, completed with its
-- source delete still to come
SELECT bad_migration($$SELECT chash_add_table('bat', 'public.bat_late', 'tenant')$$);
SELECT bad_migration($$SELECT chash_drop_table('bat', 'public.bat_tenants')$$);
SELECT chash_steps_lease_finish(:m, :'lb', 'mover-b');
SELECT count(*) AS leases FROM chash_step_lease WHERE migration = :m;
-- a batch given up: released, leases gone
SELECT count(*) AS steps FROM chash_steps_lease_claim(:m, 'mover-a', '1 hour', 2);
SELECT array_agg(step ORDER BY step) AS lb FROM chash_step_lease WHERE migration = :m \gset
SELECT bad_migration(format('SELECT chash_steps_lease_finish(%s, %L, %L)', :m, :'lb', 'mover-a'));
SELECT chash_steps_lease_release(:m, :'lb', 'mover-a');
SELECT count(*) AS leases, (SELECT count(*) FROM chash_migration_step WHERE migration = :m AND state = 'copying') AS copying
  FROM chash_step_lease WHERE migration = :m;
-- nothing in flight: registering and unregistering work again
SELECT chash_add_table('bat', 'public.bat_late', 'tenant');
SELECT chash_drop_table('bat', 'public.bat_late');

-- a claim fenced with it (chash_steps_claim's fence; the mover's blocking
-- batches of a pair it has checked): pending -> fenced in one version and
-- one change of each step's row, every slot of it refused for writes
SELECT version AS v2 FROM chash_directory WHERE name = 'bat' \gset
SELECT array_agg(step ORDER BY step) AS fb FROM chash_steps_claim(:m, 3, fence => true) \gset
SELECT version - :v2 AS versions FROM chash_directory WHERE name = 'bat';
SELECT count(*) FILTER (WHERE state = 'fenced') AS fenced, count(*) AS steps
  FROM chash_migration_step WHERE migration = :m AND step = ANY (:'fb');
SELECT count(*) FILTER (WHERE bad(format('SELECT chash_route_for_write(%L, %L)', 'bat', b.t)) LIKE '40001:%') AS refused,
       count(*) AS tenants
  FROM bat_tenants b JOIN chash_migration_step s ON s.migration = :m AND s.slot = b.slot AND s.step = ANY (:'fb');
SELECT chash_steps_release(:m, :'fb');
SELECT bad_migration(format('SELECT * FROM chash_steps_claim(%s, 3, fence => NULL)', :m));
-- the mover's claim is fenced only for a shard pair it names
SELECT bad_migration(format('SELECT * FROM chash_steps_lease_claim(%s, %L, %L, 2, fence_from => %L, fence_to => %L)',
                            :m, 'mover-a', '1 hour', '{s1,s2}', '{s3}'));
SELECT bad_migration(format('SELECT * FROM chash_steps_lease_claim(%s, %L, %L, 2, fence_from => %L)',
                            :m, 'mover-a', '1 hour', '{s1}'));
SELECT bad_migration(format('SELECT * FROM chash_steps_lease_claim(%s, %L, %L, 2, fence_from => %L, fence_to => %L)',
                            :m, 'mover-a', '1 hour', '{s1,NULL}', '{s3,s3}'));
SELECT from_shard AS next_from, to_shard AS next_to FROM chash_migration_step
 WHERE migration = :m AND state = 'pending' ORDER BY step LIMIT 1 \gset
SELECT state, progress, claimed, count(*) AS steps
  FROM chash_steps_lease_claim(:m, 'mover-a', '1 hour', 2, fence_from => '{s9}', fence_to => ARRAY[:'next_to'])
 GROUP BY 1, 2, 3;
SELECT array_agg(step ORDER BY step) AS lb FROM chash_step_lease WHERE migration = :m \gset
SELECT chash_steps_lease_release(:m, :'lb', 'mover-a');
SELECT version AS v3 FROM chash_directory WHERE name = 'bat' \gset
SELECT state, progress, claimed, count(*) AS steps
  FROM chash_steps_lease_claim(:m, 'mover-a', '1 hour', 2, fence_from => ARRAY[:'next_from'], fence_to => ARRAY[:'next_to'])
 GROUP BY 1, 2, 3;
SELECT version - :v3 AS versions FROM chash_directory WHERE name = 'bat';
SELECT array_agg(step ORDER BY step) AS lb FROM chash_step_lease WHERE migration = :m \gset
SELECT chash_steps_lease_release(:m, :'lb', 'mover-a');
SELECT count(*) AS leases, (SELECT count(*) FROM chash_migration_step WHERE migration = :m AND state <> 'pending' AND state <> 'done') AS in_flight
  FROM chash_step_lease WHERE migration = :m;

-- steps deleted take their leases with them (a statement trigger, where a
-- foreign key checked each lease a claim wrote); a truncate too
BEGIN;
SELECT count(*) AS claimed FROM chash_steps_lease_claim(:m, 'mover-a', '1 hour', 2);
DELETE FROM chash_migration_step s USING chash_step_lease l
 WHERE s.migration = :m AND l.migration = s.migration AND l.step = s.step AND s.step = (SELECT min(step) FROM chash_step_lease);
SELECT count(*) AS leases_left FROM chash_step_lease WHERE migration = :m;
TRUNCATE chash_migration_step CASCADE;
SELECT count(*) AS leases_left FROM chash_step_lease;
ROLLBACK;

-- the rest in batches of 4: the migration ends done, every slot on its target
DO $$
DECLARE
    b int[];
BEGIN
    LOOP
        SELECT array_agg(c.step) INTO b FROM chash_steps_claim(currval('chash_migration_id_seq'), 4) c;
        EXIT WHEN b IS NULL;
        PERFORM chash_steps_fence(currval('chash_migration_id_seq'), b);
        PERFORM chash_steps_complete(currval('chash_migration_id_seq'), b);
    END LOOP;
END
$$;
SELECT status FROM chash_migration WHERE id = :m;
SELECT shard, count(*) FROM chash_slot WHERE directory = 'bat' GROUP BY 1 ORDER BY 1;
SELECT bat_misrouted();

-- a tenant step is a batch too (of tenant steps)
SELECT chash_migration_move_tenant('bat', 'tenant1', 's1') AS t \gset
SELECT step, slot, tenant, from_shard, to_shard FROM chash_steps_claim(:t, 10);
SELECT chash_steps_fence(:t, '{1}');
SELECT bad(format('SELECT chash_route_for_write(%L, %L)', 'bat', 'tenant1')) LIKE '40001:%' AS refused;
SELECT chash_steps_complete(:t, '{1}');
SELECT shard, source FROM chash_route_explain('bat', 'tenant1');
SELECT status FROM chash_migration WHERE id = :t;

-- Privileges: the operator role of docs/migrations.md runs batches; an
-- application role (SELECT) cannot claim, fence (nor hold writers up
-- through the barrier) or complete one.
\i sql/include/migration_roles.sql
SELECT chash_add_shard('bat', 's4');
SELECT chash_migration_start('bat', max_moves => 4) AS p \gset
SET ROLE regress_chash_mig_app;
SELECT bad_migration(format('SELECT * FROM chash_steps_claim(%s, 4)', :p));
SELECT bad_migration(format('SELECT chash_steps_fence(%s, %L)', :p, '{1}'));
SELECT bad_migration($$SELECT chash_fence_barrier('bat', ARRAY[1])$$);
SET ROLE regress_chash_mig_operator;
SELECT array_agg(step ORDER BY step) AS pb FROM chash_steps_claim(:p, 4) \gset
SELECT :'pb'::int[] <> '{}' AS claimed;
SELECT chash_steps_fence(:p, :'pb');
SELECT chash_steps_release(:p, :'pb');
SELECT array_agg(step ORDER BY step) AS pb FROM chash_steps_claim(:p, 4) \gset
SELECT chash_steps_complete(:p, :'pb');
RESET ROLE;
SELECT count(*) FILTER (WHERE state = 'done') AS done FROM chash_migration_step WHERE migration = :p;
SELECT chash_migration_cancel(:p) WHERE (SELECT status FROM chash_migration WHERE id = :p) = 'running';
DROP OWNED BY regress_chash_mig_app, regress_chash_mig_operator;
DROP ROLE regress_chash_mig_app, regress_chash_mig_operator;

-- each batch function plans its statements for the batch's own array
SELECT p.proname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.proname LIKE 'chash\_steps\_%' AND l.lanname = 'plpgsql'
   AND NOT 'plan_cache_mode=force_custom_plan' = ANY (COALESCE(p.proconfig, '{}'))
 ORDER BY 1;
SELECT count(*) AS batch_functions FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.proname LIKE 'chash\_steps\_%' AND l.lanname = 'plpgsql';

DROP FUNCTION bat_misrouted();
DROP TABLE bat_tenants;
SELECT chash_drop_directory('bat');
DROP FUNCTION bad_migration(text);
