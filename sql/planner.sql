-- The rebalance planner (docs/planner.md): chash_plan_rebalance, chash_whales,
-- chash_measure_tenants.  docs/planner.md explains the plans.

-- The contract's worked example: 16,384 slots on three equal shards, add a
-- fourth -> 4,096 moves, 1,366 + 1,365 + 1,365, every shard ends at 4,096.
SELECT chash_create_directory('plan', ARRAY['s1', 's2', 's3']);
SELECT chash_add_shard('plan', 's4');
SELECT shard, count(*) FROM chash_slot WHERE directory = 'plan' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS moves FROM chash_plan_rebalance('plan');
SELECT from_shard, to_shard, count(*), min(slot), max(slot)
  FROM chash_plan_rebalance('plan') GROUP BY 1, 2 ORDER BY 1, 2;
-- the planner turns nested loops off for its own queries only
SHOW enable_nestloop;
SELECT count(*) AS moves FROM chash_plan_rebalance('plan', 'bytes');
SHOW enable_nestloop;
-- largest excess first, ties to the lower name; donors give their lowest slots
SELECT * FROM chash_plan_rebalance('plan', 'slots', 7);
SELECT * FROM chash_plan_rebalance('plan', max_moves => 2);
-- steps are numbered 1 .. n and no slot moves twice
SELECT count(*) = max(step) AS numbered, count(DISTINCT slot) = count(*) AS each_slot_once
  FROM chash_plan_rebalance('plan');
-- applying the plan puts every shard at its target
CREATE TEMP VIEW after_plan AS
SELECT s.directory, coalesce(p.to_shard, s.shard) AS shard, count(*) AS slots
  FROM chash_slot s
  LEFT JOIN chash_plan_rebalance('plan') p ON p.slot = s.slot
 WHERE s.directory = 'plan' GROUP BY 1, 2;
SELECT shard, slots FROM after_plan ORDER BY shard;
-- a dry run changes nothing
SELECT version AS v0 FROM chash_directory WHERE name = 'plan' \gset
SELECT count(*) FROM chash_plan_rebalance('plan');
SELECT version = :v0 AS unchanged FROM chash_directory WHERE name = 'plan';
SELECT count(*) AS migrations FROM chash_migration WHERE directory = 'plan';

-- Weights: s4 weighs 2 -> quotas 3,276.8 x 3 and 6,553.6: 3,277 x 3 and 6,553.
SELECT chash_set_shard('plan', 's4', weight => 2);
SELECT count(*) AS moves FROM chash_plan_rebalance('plan');
SELECT shard, slots FROM after_plan ORDER BY shard;

-- Draining: s2 targets nothing; s1 and s3 are at their new targets
-- (5,462 and 5,461), so all of s2 goes to s4.
SELECT chash_set_shard('plan', 's4', weight => 1);
SELECT chash_set_shard('plan', 's2', state => 'draining');
SELECT from_shard, to_shard, count(*) FROM chash_plan_rebalance('plan')
 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT shard, slots FROM after_plan ORDER BY shard;
SELECT chash_set_shard('plan', 's2', state => 'active');

-- A balanced directory has an empty plan.
SELECT chash_create_directory('plan_even', ARRAY['a', 'b'], 10);
SELECT count(*) FROM chash_plan_rebalance('plan_even');
SELECT count(*) FROM chash_plan_rebalance('plan_even', 'bytes');
-- ties in the remainder go to the lower shard name, in byte order
SELECT chash_create_directory('plan_ties', ARRAY['b', 'a', 'C'], 4);
SELECT shard, count(*) FROM chash_slot WHERE directory = 'plan_ties' GROUP BY 1 ORDER BY shard COLLATE "C";
SELECT * FROM chash_plan_rebalance('plan_ties');

-- 'bytes': 4 shards, 64 slots, 400 measured tenants; one whale holding
-- half of all bytes is pinned to s1.  The plan moves s1's slots away (the
-- whale stays), balances the rest, and never moves a slot that does not
-- lower the imbalance.
SELECT chash_create_directory('sized', ARRAY['s1', 's2', 's3', 's4'], 64);
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows)
SELECT 'sized', 't' || i, 1000 + (i * 7919) % 1000, 10 FROM generate_series(1, 400) i;
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows)
SELECT 'sized', 'whale', sum(bytes), 4000 FROM chash_tenant_size WHERE directory = 'sized';
SELECT chash_pin('sized', 'whale', 's1');
SELECT chash_slot('sized', 'whale') AS whale_slot \gset
CREATE TEMP VIEW sized_load AS
WITH plan AS (SELECT * FROM chash_plan_rebalance('sized', 'bytes')),
     owner AS (SELECT s.slot, s.shard AS before, coalesce(p.to_shard, s.shard) AS after
                 FROM chash_slot s LEFT JOIN plan p USING (slot) WHERE s.directory = 'sized'),
     tenant AS (SELECT t.tenant, t.bytes, o.shard AS pinned, chash_slot('sized', t.tenant) AS slot
                  FROM chash_tenant_size t
                  LEFT JOIN chash_override o ON o.directory = t.directory AND o.tenant = t.tenant
                 WHERE t.directory = 'sized')
SELECT sh.shard,
       (SELECT sum(t.bytes) FROM tenant t JOIN owner w USING (slot)
         WHERE coalesce(t.pinned, w.before) = sh.shard) AS bytes_before,
       (SELECT sum(t.bytes) FROM tenant t JOIN owner w USING (slot)
         WHERE coalesce(t.pinned, w.after) = sh.shard) AS bytes_after
  FROM chash_shard sh WHERE sh.directory = 'sized';
SELECT shard, bytes_before, bytes_after FROM sized_load ORDER BY shard;
-- each shard's target is a quarter of all bytes; s1 keeps only the whale
-- (it is over target by itself), the others share the rest
SELECT (SELECT sum(bytes) FROM chash_tenant_size WHERE directory = 'sized') / 4 AS target;
-- almost every move comes off s1; the whale's slot may move, the whale not
SELECT from_shard, count(*) FROM chash_plan_rebalance('sized', 'bytes') GROUP BY 1;
SELECT count(*) FILTER (WHERE slot = :whale_slot) AS whale_slot_moves,
       sum(tenants) AS tenants_moved
  FROM chash_plan_rebalance('sized', 'bytes');
-- the imbalance (sum of squared deviations) falls with every step
WITH plan AS (SELECT * FROM chash_plan_rebalance('sized', 'bytes')),
     target AS (SELECT sum(bytes)::numeric / 4 AS t FROM chash_tenant_size WHERE directory = 'sized'),
     base AS (SELECT sh.shard,
                     (SELECT coalesce(sum(t.bytes), 0) FROM chash_tenant_size t
                       LEFT JOIN chash_override o ON o.directory = t.directory AND o.tenant = t.tenant
                       JOIN chash_slot s ON s.directory = t.directory AND s.slot = chash_slot('sized', t.tenant)
                      WHERE t.directory = 'sized' AND coalesce(o.shard, s.shard) = sh.shard) AS load
                FROM chash_shard sh WHERE sh.directory = 'sized'),
     prefix AS (SELECT k, b.shard,
                       b.load - coalesce((SELECT sum(p.bytes) FROM plan p WHERE p.step <= k AND p.from_shard = b.shard), 0)
                              + coalesce((SELECT sum(p.bytes) FROM plan p WHERE p.step <= k AND p.to_shard = b.shard), 0) AS load
                  FROM base b, generate_series(0, (SELECT count(*) FROM plan)) k),
     d AS (SELECT k, sum((load - t) ^ 2) AS d FROM prefix, target GROUP BY k)
SELECT count(*) AS prefixes,
       bool_and(d < prev) AS each_step_improves
  FROM (SELECT k, d, lag(d) OVER (ORDER BY k) AS prev FROM d) x WHERE k > 0;
-- 'slots' ignores sizes: the directory is already even by slot count
SELECT count(*) FROM chash_plan_rebalance('sized', 'slots');
-- a pinned tenant without a size counts as the mean size
SELECT count(*) AS moves, sum(bytes) AS bytes FROM chash_plan_rebalance('sized', 'bytes');
SELECT chash_pin('sized', 'unmeasured', 's2');
SELECT count(*) AS moves, sum(bytes) AS bytes FROM chash_plan_rebalance('sized', 'bytes');
SELECT chash_unpin('sized', 'unmeasured');

-- Carried out, the 'bytes' plan leaves the whale on s1 and the loads as
-- planned above; planning again finds nothing left to improve.
SELECT chash_migration_start('sized', 'bytes') AS sized_m \gset
\i sql/include/run_steps.sql
SELECT status FROM chash_migration WHERE id = :sized_m;
SELECT chash_route('sized', 'whale') AS whale_on;
SELECT chash_route('sized', tenant) AS shard, sum(bytes) AS bytes
  FROM chash_tenant_size WHERE directory = 'sized' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS moves_left FROM chash_plan_rebalance('sized', 'bytes');

-- Whales: tenants above factor x (all bytes / active shards).
SELECT tenant, bytes, shard, round(share::numeric, 3) AS share FROM chash_whales('sized');
SELECT count(*) FROM chash_whales('sized', 0.001);
SELECT count(*) FROM chash_whales('sized', 100);
SELECT count(*) FROM chash_whales('plan');   -- nothing measured: no whales
SELECT * FROM chash_whales(NULL);

-- Measuring tenants from a table.
CREATE TABLE orders (org text, item text);
INSERT INTO orders SELECT 'org' || (i % 3), repeat('x', i) FROM generate_series(1, 30) i;
INSERT INTO orders VALUES (NULL, 'no tenant');
SELECT chash_measure_tenants('plan', 'orders', 'org');
SELECT tenant, rows, bytes > 0 AS sized FROM chash_tenant_size WHERE directory = 'plan' ORDER BY tenant;
-- measuring again updates in place
DELETE FROM orders WHERE org = 'org0';
INSERT INTO orders VALUES ('org1', 'more');
SELECT chash_measure_tenants('plan', 'orders', 'org');
SELECT tenant, rows FROM chash_tenant_size WHERE directory = 'plan' ORDER BY tenant;
-- bigint directories store canonical tenants
SELECT chash_create_directory('plan_int', ARRAY['a', 'b'], 8, key_type => 'bigint');
CREATE TABLE legacy (customer text);
INSERT INTO legacy VALUES ('007'), ('7'), (' 8');
SELECT chash_measure_tenants('plan_int', 'legacy', 'customer');
SELECT tenant, rows FROM chash_tenant_size WHERE directory = 'plan_int' ORDER BY tenant;
-- a quoted column name
CREATE TABLE "Odd Table" ("Tenant Id" bigint);
INSERT INTO "Odd Table" VALUES (1), (1), (2);
SELECT chash_measure_tenants('plan_int', '"Odd Table"', 'Tenant Id');

-- A new directory is exactly at its targets: creation and the planner split
-- with one function, on the exact values of the weights.  4, 1, 1 over
-- 1,328 slots: quotas 885 1/3, 221 1/3, 221 1/3 tie exactly, the earlier
-- shard gets the slot left over (886 / 221 / 221), and there is no plan.
SELECT chash_create_directory('plan_exact', ARRAY['a', 'b', 'c'], 1328, weights => ARRAY[4, 1, 1]);
SELECT shard, count(*) FROM chash_slot WHERE directory = 'plan_exact' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS moves FROM chash_plan_rebalance('plan_exact');
-- the same ratios near the top and the bottom of float8
SELECT chash_create_directory('plan_exact_huge', ARRAY['a', 'b', 'c'], 1328,
                              weights => ARRAY[4e307, 1e307, 1e307]);
SELECT chash_create_directory('plan_exact_tiny', ARRAY['a', 'b', 'c'], 1328,
                              weights => ARRAY[2e-323, 5e-324, 5e-324]);
SELECT directory, string_agg(n::text, ' / ' ORDER BY shard) AS slots
  FROM (SELECT directory, shard, count(*) AS n FROM chash_slot
         WHERE directory IN ('plan_exact_huge', 'plan_exact_tiny') GROUP BY 1, 2) c
 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS moves FROM chash_plan_rebalance('plan_exact_huge');
SELECT count(*) AS moves FROM chash_plan_rebalance('plan_exact_tiny');

-- Weights that are each finite but sum to more than the largest float8:
-- 22023, from creation and from chash_add_shard (the table refuses such a
-- sum).  The planner says the same for a state only disabled triggers can
-- reach, from both strategies.
\i sql/include/bad.sql
SELECT bad($$SELECT chash_create_directory('plan_huge', ARRAY['a', 'b'], 16, weights => ARRAY[1e308, 1e308])$$);
SELECT chash_create_directory('plan_huge', ARRAY['a', 'b'], 16, weights => ARRAY[1e308, 1]);
SELECT bad($$SELECT chash_add_shard('plan_huge', 'c', 1e308)$$);
SET session_replication_role = replica;
INSERT INTO chash_shard (directory, shard, weight) VALUES ('plan_huge', 'c', 1e308);
RESET session_replication_role;
SELECT bad($$SELECT * FROM chash_plan_rebalance('plan_huge')$$);
SELECT bad($$SELECT * FROM chash_plan_rebalance('plan_huge', 'bytes')$$);
-- only active shards count: drained, c leaves a sum that fits
SET session_replication_role = replica;
UPDATE chash_shard SET state = 'draining' WHERE directory = 'plan_huge' AND shard = 'c';
RESET session_replication_role;
SELECT count(*) AS moves FROM chash_plan_rebalance('plan_huge');

DROP TABLE orders, legacy, "Odd Table";
DROP VIEW after_plan, sized_load;
SELECT chash_drop_directory(d) FROM unnest(ARRAY['plan', 'plan_even', 'plan_ties', 'sized', 'plan_int',
                                                 'plan_exact', 'plan_exact_huge', 'plan_exact_tiny', 'plan_huge']) d;
