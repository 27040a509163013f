-- Every bad input, with the SQLSTATE and message it gets.
\i sql/include/bad.sql

-- NULL arguments give NULL (STRICT), never an error.
SELECT chash_xxh64(NULL::text), chash_md5_64(NULL::bytea), chash_crc16(NULL::text),
       chash_jump(NULL::bigint, 3), chash_jump('a', NULL), chash_mod(NULL::text, 3),
       chash_redis_slot(NULL::text), chash_redis_same_slot(NULL),
       chash_pg_partition(NULL::uuid, 4), chash_cassandra_token(NULL::bytea),
       chash_xxh64('a', NULL);

-- Bucket counts and moduli below 1.
SELECT bad($$SELECT chash_jump(1::bigint, 0)$$);
SELECT bad($$SELECT chash_jump('k', -5)$$);
SELECT bad($$SELECT chash_jump('k', -2147483648)$$);
SELECT bad($$SELECT chash_mod(1::bigint, 0)$$);
SELECT bad($$SELECT chash_mod('k', -1)$$);
SELECT bad($$SELECT chash_pg_partition('k', 0)$$);
SELECT bad($$SELECT chash_pg_partition(1::bigint, -3)$$);
SELECT bad($$SELECT chash_pg_partition(1, 0)$$);
SELECT bad($$SELECT chash_pg_partition('00000000-0000-0000-0000-000000000000'::uuid, 0)$$);

-- Arrays: NULL elements and more than one dimension.
SELECT bad($$SELECT chash_redis_same_slot(ARRAY['a', NULL])$$);
SELECT bad($$SELECT chash_redis_same_slot(ARRAY[['a', 'b'], ['c', 'd']])$$);
SELECT chash_redis_same_slot('{}');     -- no keys: nothing can cross slots

-- Values that are not of the argument's type never reach the functions.
SELECT bad($$SELECT chash_pg_partition('not-a-uuid'::uuid, 4)$$);
SELECT bad($$SELECT chash_jump(1::bigint, 4294967296)$$);

-- ---------------------------------------------------------------------------
-- The planner and migrations (docs/planner.md).  Migration ids depend on what
-- ran before, so messages show them as N.
-- ---------------------------------------------------------------------------
CREATE FUNCTION bad_migration(statement text) RETURNS text LANGUAGE sql AS
$$ SELECT regexp_replace(bad(statement), '([Mm]igration) [0-9]+', '\1 N', 'g') $$;
SELECT chash_create_directory('bad_plan', ARRAY['a', 'b'], 8);
SELECT chash_add_shard('bad_plan', 'c');

-- NULL arguments: reads give no rows or NULL; functions that change state
-- say 22004 (sql/management_nulls.sql walks every one of them).
SELECT count(*) FROM chash_plan_rebalance(NULL);
SELECT count(*) FROM chash_plan_rebalance('bad_plan', NULL);
SELECT count(*) FROM chash_whales('bad_plan', NULL);
SELECT bad($$SELECT chash_measure_tenants(NULL, 'pg_class', 'relname')$$);
SELECT bad($$SELECT chash_migration_start(NULL)$$);
SELECT bad($$SELECT chash_migration_move_tenant('bad_plan', NULL, 'a')$$);
SELECT bad($$SELECT chash_migration_revert(NULL)$$);
SELECT bad($$SELECT * FROM chash_step_claim(NULL)$$);

-- chash_plan_rebalance
SELECT bad($$SELECT * FROM chash_plan_rebalance('nope')$$);
SELECT bad($$SELECT * FROM chash_plan_rebalance('bad_plan', 'tenants')$$);
SELECT bad($$SELECT * FROM chash_plan_rebalance('bad_plan', 'SLOTS')$$);
SELECT bad($$SELECT * FROM chash_plan_rebalance('bad_plan', 'slots', 0)$$);
SELECT bad($$SELECT * FROM chash_plan_rebalance('bad_plan', 'bytes', -1)$$);
SELECT chash_create_directory('bad_drained', ARRAY['x'], 4);
SELECT chash_add_shard('bad_drained', 'y');
UPDATE chash_shard SET state = 'draining' WHERE directory = 'bad_drained';
SELECT bad($$SELECT * FROM chash_plan_rebalance('bad_drained')$$);
SELECT bad($$SELECT chash_migration_start('bad_drained', 'bytes')$$);

-- chash_whales
SELECT bad($$SELECT * FROM chash_whales('nope')$$);
SELECT bad($$SELECT * FROM chash_whales('bad_plan', 0)$$);
SELECT bad($$SELECT * FROM chash_whales('bad_plan', -0.5)$$);
SELECT bad($$SELECT * FROM chash_whales('bad_plan', 'NaN')$$);
SELECT bad($$SELECT * FROM chash_whales('bad_plan', 'Infinity')$$);

-- chash_measure_tenants
CREATE TABLE bad_rows (tenant text, n int);
INSERT INTO bad_rows VALUES ('12', 1), ('twelve', 2);
SELECT chash_create_directory('bad_int', ARRAY['a', 'b'], 4, key_type => 'bigint');
SELECT bad($$SELECT chash_measure_tenants('nope', 'bad_rows', 'tenant')$$);
SELECT bad($$SELECT chash_measure_tenants('bad_plan', 'bad_rows', 'missing')$$);
SELECT bad($$SELECT chash_measure_tenants('bad_plan', 'no_such_table', 'tenant')$$);
SELECT bad($$SELECT chash_measure_tenants('bad_int', 'bad_rows', 'tenant')$$);
SELECT count(*) AS nothing_half_measured FROM chash_tenant_size WHERE directory = 'bad_int';

-- chash_migration_start and chash_migration_move_tenant
SELECT bad($$SELECT chash_migration_start('nope')$$);
SELECT bad($$SELECT chash_migration_start('bad_plan', 'random')$$);
SELECT bad($$SELECT chash_migration_start('bad_plan', 'slots', 0)$$);
SELECT bad($$SELECT chash_migration_move_tenant('nope', 't', 'a')$$);
SELECT bad($$SELECT chash_migration_move_tenant('bad_plan', 't', 'zz')$$);
SELECT bad($$SELECT chash_migration_move_tenant('bad_plan', 't', chash_route('bad_plan', 't'))$$);
SELECT bad($$SELECT chash_migration_move_tenant('bad_int', 'twelve', 'a')$$);
SELECT bad($$SELECT chash_migration_move_tenant('bad_drained', 't', 'x')$$);
SELECT count(*) AS no_migration_left_behind FROM chash_migration
 WHERE directory IN ('bad_plan', 'bad_int', 'bad_drained');
SELECT chash_migration_start('bad_plan') AS bm \gset
-- a second unfinished migration of the directory: 55006
SELECT bad_migration($$SELECT chash_migration_start('bad_plan')$$);
SELECT bad_migration($$SELECT chash_migration_start('bad_plan', 'bytes', 1)$$);
SELECT bad_migration($$SELECT chash_migration_move_tenant('bad_plan', 't', 'c')$$);

-- steps: unknown ones, and transitions from the wrong state
SELECT bad_migration($$SELECT * FROM chash_step_claim(-1)$$);
SELECT bad_migration(format('SELECT chash_step_fence(%s, 99)', :bm));
SELECT bad_migration('SELECT chash_step_fence(-1, 1)');
SELECT bad_migration(format('SELECT chash_step_fence(%s, 1)', :bm));      -- pending
SELECT bad_migration(format('SELECT chash_step_complete(%s, 1)', :bm));   -- pending
SELECT bad_migration(format('SELECT chash_step_release(%s, 1)', :bm));    -- pending
SELECT bad_migration(format('SELECT chash_step_complete(%s, 99)', :bm));
SELECT bad_migration('SELECT chash_step_release(-1, 1)');
SELECT step FROM chash_step_claim(:bm);
SELECT chash_step_complete(:bm, 1);
SELECT bad_migration(format('SELECT chash_step_fence(%s, 1)', :bm));      -- done
SELECT bad_migration(format('SELECT chash_step_release(%s, 1)', :bm));    -- done
-- a slot whose owner changed behind the migration's back
SELECT step, slot FROM chash_step_claim(:bm) \gset
UPDATE chash_slot SET shard = 'c' WHERE directory = 'bad_plan' AND slot = :slot;
SELECT bad_migration(format('SELECT chash_step_complete(%s, %s)', :bm, :step));
SELECT state FROM chash_migration_step WHERE migration = :bm AND step = :step;

-- cancel and revert
SELECT bad_migration('SELECT chash_migration_cancel(-1)');
SELECT bad_migration('SELECT chash_migration_revert(-1)');
SELECT chash_migration_cancel(:bm);
SELECT bad_migration(format('SELECT chash_migration_cancel(%s)', :bm));   -- cancelled
SELECT bad_migration(format('SELECT chash_step_complete(%s, %s)', :bm, :step));
SELECT bad_migration(format('SELECT chash_step_release(%s, %s)', :bm, :step));
SELECT count(*) FROM chash_step_claim(:bm);
-- a revert whose shard to return to has been retired
SELECT chash_create_directory('bad_retire', ARRAY['a', 'b'], 2);
SELECT chash_add_shard('bad_retire', 'c');
SELECT chash_set_shard('bad_retire', 'a', weight => 0.5);
SELECT chash_migration_start('bad_retire') AS rm \gset
SELECT step FROM chash_step_claim(:rm);
SELECT chash_step_complete(:rm, 1);
SELECT status FROM chash_migration WHERE id = :rm;
SELECT chash_set_shard('bad_retire', 'a', state => 'retired');
SELECT bad_migration(format('SELECT chash_migration_revert(%s)', :rm));
SELECT chash_migration_start('bad_retire') AS done_m \gset
SELECT bad_migration(format('SELECT chash_migration_cancel(%s)', :done_m));   -- done

DROP TABLE bad_rows;
DROP FUNCTION bad_migration(text);
SELECT chash_drop_directory(d)
  FROM unnest(ARRAY['bad_plan', 'bad_drained', 'bad_int', 'bad_retire']) d;

-- ---------------------------------------------------------------------------
-- Node-set placement (docs/placement.md - 2.7)
-- ---------------------------------------------------------------------------

-- NULL key, node array, count or hash: NULL, as from a STRICT function.
SELECT chash_rendezvous(NULL, '{a}') AS rendezvous, chash_rendezvous_top('k', '{a}', NULL) AS top,
       chash_ring_lookup('k', NULL) AS ring, chash_ring_replicas('k', '{a}', 1, NULL) AS replicas,
       chash_ketama(NULL, '{a}') AS ketama, chash_maglev('k', '{a}', 7, hash => NULL) AS maglev;

-- Node arrays: empty, NULL elements, duplicates, two dimensions (every function).
SELECT bad($$SELECT chash_rendezvous('k', '{}')$$);
SELECT bad($$SELECT chash_rendezvous('k', ARRAY['a', NULL])$$);
SELECT bad($$SELECT chash_rendezvous('k', '{a,b,a}')$$);
SELECT bad($$SELECT chash_rendezvous('k', '{{a,b},{c,d}}')$$);
SELECT bad($$SELECT chash_rendezvous_top('k', '{}', 1)$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{}')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b,b}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', ARRAY[NULL, 'b'], 1)$$);
SELECT bad($$SELECT * FROM chash_ring_points('{}')$$);
SELECT bad($$SELECT * FROM chash_ring_shares('{x,x}')$$);
SELECT bad($$SELECT chash_ketama('k', '{}')$$);
SELECT bad($$SELECT chash_ketama('k', '{10.0.0.1:11211,10.0.0.1:11211}')$$);
SELECT bad($$SELECT chash_maglev('k', ARRAY['a', NULL, 'c'])$$);
SELECT bad($$SELECT chash_maglev('k', '{{a},{b}}')$$);
SELECT bad($$SELECT * FROM chash_maglev_table('{}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a,a}')$$);

-- Weights: wrong length, NULL element, negative, NaN, infinite, all zero,
-- too large to add up, two dimensions.
SELECT bad($$SELECT chash_rendezvous('k', '{a,b}', '{1}')$$);
SELECT bad($$SELECT chash_rendezvous('k', '{a,b}', ARRAY[1, NULL]::float8[])$$);
SELECT bad($$SELECT chash_rendezvous('k', '{a,b}', '{1,-1}')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 160, '{1,NaN}')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 160, '{Infinity,1}')$$);
SELECT bad($$SELECT chash_ketama('k', '{a,b}', '{0,0}')$$);
SELECT bad($$SELECT chash_ketama('k', '{a,b}', '{1e-50,1e-50}')$$);
SELECT bad($$SELECT chash_ketama('k', '{a,b}', '{1e300,1}')$$);
SELECT bad($$SELECT chash_maglev('k', '{a,b}', 7, '{1e308,1e308}')$$);
SELECT bad($$SELECT * FROM chash_maglev_table('{a,b}', 7, '{{1},{2}}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a,b}', 0.25, 160, '{1,2,3}')$$);

-- Hash families other than xxh64 and md5.
SELECT bad($$SELECT chash_rendezvous('k', '{a}', hash => 'sha1')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a}', hash => 'XXH64')$$);
SELECT bad($$SELECT * FROM chash_ring_points('{a}', hash => '')$$);
SELECT bad($$SELECT chash_maglev('k', '{a}', hash => 'md5 ')$$);

-- Counts: k below 1 or above the nodes that can be chosen.
SELECT bad($$SELECT chash_rendezvous_top('k', '{a,b}', 0)$$);
SELECT bad($$SELECT chash_rendezvous_top('k', '{a,b}', 3)$$);
SELECT bad($$SELECT chash_rendezvous_top('k', '{a,b,c}', 3, '{1,0,1}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', -1)$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 3)$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b,c}', 3, 160, '{1,0,1}')$$);

-- Zones: wrong length, NULL element, two dimensions, too few distinct zones.
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 1, zones => '{z1}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 1, zones => ARRAY['z1', NULL])$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 1, zones => '{{z1},{z2}}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b,c}', 3, zones => '{z1,z1,z2}')$$);

-- Ring sizes: vnodes below 1, too many points, no points at all.
SELECT bad($$SELECT chash_ring_lookup('k', '{a}', 0)$$);
SELECT bad($$SELECT * FROM chash_ring_shares('{a}', -160)$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 2000000000, '{1,1}')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 10, '{0.01,0.02}')$$);

-- Maglev table sizes: not prime, below the number of backends, too large.
SELECT bad($$SELECT chash_maglev('k', '{a,b}', 65536)$$);
SELECT bad($$SELECT chash_maglev('k', '{a,b}', 1)$$);
SELECT bad($$SELECT chash_maglev('k', '{a,b}', -7)$$);
SELECT bad($$SELECT chash_maglev('k', '{a,b,c,d}', 3)$$);
SELECT bad($$SELECT * FROM chash_maglev_table('{a}', 2147483647)$$);

-- Bounded loads: epsilon not above 0 or not finite, NULL or 2-D keys, and
-- nodes of positive weight with no points on the ring.
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a}', 0)$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a}', -0.5)$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a}', 'NaN')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a}', 'Infinity')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign(ARRAY['k', NULL], '{a}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{{k}}', '{a}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k1,k2,k3,k4}', '{a,b}', 0.01, 1, '{1,0.4}')$$);
