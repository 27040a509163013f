-- The 'load' plan (docs/load.md, "The planner: 'load'"): the load
-- chash_collect stored, balanced within chash.load_tolerance as the
-- bounded-loads scheme caps a node at (1 + epsilon) x its share.  The
-- collected figures are written into chash_load_slot here as chash_collect
-- would store them; this server counts nothing itself.
\i sql/include/bad.sql

-- Three equal shards, 12 slots (a: 0-3, b: 4-7, c: 8-11).  Loads a 1,150,
-- b 1,000, c 850 (target 1,000).
SELECT chash_create_directory('hot', ARRAY['a', 'b', 'c'], 12);
CREATE FUNCTION slot_owner(d text, s int) RETURNS text LANGUAGE sql AS $$
    SELECT shard FROM chash_slot WHERE directory = d AND slot = s
$$;
CREATE FUNCTION collected(d text, loads int[]) RETURNS void LANGUAGE sql AS $$
    DELETE FROM chash_load_slot WHERE directory = d;
    INSERT INTO chash_load_slot (directory, shard, slot, reads, writes, collected_at)
    SELECT d, slot_owner(d, s - 1), s - 1, loads[s] / 2, loads[s] - loads[s] / 2, now()
      FROM generate_subscripts(loads, 1) s;
$$;
-- the load of each shard once a plan is carried out
CREATE FUNCTION after_load(d text) RETURNS TABLE (shard text, load bigint) LANGUAGE sql AS $$
    SELECT coalesce(p.to_shard, s.shard), sum(coalesce(l.reads + l.writes, 0))::bigint
      FROM chash_slot s
      LEFT JOIN chash_load_slot l ON l.directory = s.directory AND l.slot = s.slot
      LEFT JOIN chash_plan_rebalance(d, 'load') p ON p.slot = s.slot
     WHERE s.directory = d GROUP BY 1 ORDER BY 1
$$;
SELECT collected('hot', ARRAY[400, 300, 250, 200,  250, 250, 250, 250,  200, 200, 200, 250]);
SELECT shard, sum(reads + writes) AS load FROM chash_load_slot WHERE directory = 'hot' GROUP BY 1 ORDER BY 1;

-- The default tolerance is 0.1: a shard may carry 1,100.  a is over by 50:
-- one slot brings it within (its 200 is the one closest to half the gap
-- of 300 to c), and the plan ends there; nothing else moves.
SHOW chash.load_tolerance;
SELECT * FROM chash_plan_rebalance('hot', 'load');
SELECT * FROM after_load('hot');
-- Within 20 % nothing is over its cap: the plan is empty.
SET chash.load_tolerance = 0.2;
SELECT count(*) AS moves FROM chash_plan_rebalance('hot', 'load');
-- With no tolerance the caps are the shares: c has room for 150 more and
-- a no slot that small, so nothing moves (no shard is pushed over its cap).
SET chash.load_tolerance = 0;
SELECT * FROM chash_plan_rebalance('hot', 'load');
SELECT * FROM after_load('hot');
RESET chash.load_tolerance;
-- A tolerance is a fraction of the share, 0 to 100.
SELECT bad($$SET chash.load_tolerance = -0.1$$);
SELECT bad($$SET chash.load_tolerance = 'NaN'$$);

-- A hot shard: a holds 3,000 of 4,200 (target 1,400, cap 1,540).  It must
-- shed 1,460: no one slot does, so it gives its largest (900) to b, the one
-- shard with room for it, and then the slot that brings it within its cap
-- and lands closest to half the gap (700, to c): two moves, the fewest
-- (no slot weighs 1,460), and nothing else moves.
SELECT collected('hot', ARRAY[800, 700, 600, 900,  100, 100, 100, 100,  200, 200, 200, 200]);
SELECT * FROM chash_plan_rebalance('hot', 'load');
SELECT * FROM after_load('hot');
-- every prefix is an improvement: the load over the caps falls at every step
WITH p AS (SELECT * FROM chash_plan_rebalance('hot', 'load')),
     over AS (
       SELECT k, sum(greatest(0, l - 1540)) AS over_caps
         FROM generate_series(0, (SELECT count(*) FROM p)) k,
              LATERAL (SELECT coalesce(pp.to_shard, s.shard) AS sh, sum(c.reads + c.writes) AS l
                         FROM chash_slot s
                         JOIN chash_load_slot c ON c.directory = s.directory AND c.slot = s.slot
                         LEFT JOIN p pp ON pp.slot = s.slot AND pp.step <= k
                        WHERE s.directory = 'hot' GROUP BY 1) x
        GROUP BY k)
SELECT k, over_caps FROM over ORDER BY k;
-- 'bytes' and 'slots' do not see the load (no sizes, even slots)
SELECT (SELECT count(*) FROM chash_plan_rebalance('hot', 'bytes')) AS bytes_moves,
       (SELECT count(*) FROM chash_plan_rebalance('hot', 'slots')) AS slots_moves;
-- carried out, the plan is balanced: a second plan is empty
SELECT chash_migration_start('hot', 'load') AS m \gset
SELECT count(*) AS steps FROM chash_migration_step WHERE migration = :m;
SELECT step, slot, from_shard, to_shard FROM chash_step_claim(:m);
SELECT chash_step_complete(:m, 1);
SELECT step, slot, from_shard, to_shard FROM chash_step_claim(:m);
SELECT chash_step_complete(:m, 2);
SELECT status FROM chash_migration WHERE id = :m;
-- the load was counted where the slots were: it weighs where they are now
SELECT count(*) AS moves FROM chash_plan_rebalance('hot', 'load');

-- A slot that alone is more than a shard can take stays (a pin's job):
-- one slot of 3,000 against 200 elsewhere.
SELECT collected('hot', ARRAY[3000, 0, 0, 0,  100, 0, 0, 0,  100, 0, 0, 0]);
SELECT count(*) AS moves FROM chash_plan_rebalance('hot', 'load');

-- A pinned tenant's load counts on its pinned shard and never moves with
-- its slot: the tenant 'big' of slot 8 (on c) is pinned to b; of slot 8's
-- 1,500, 1,400 are its own.  By slots, c would be over its cap; by what
-- moves with them it is not, and b is.
SELECT chash_create_directory('pinned', ARRAY['a', 'b', 'c'], 12);
SELECT chash_slot('pinned', 'big') AS big_slot \gset
SELECT chash_route('pinned', 'big') AS big_shard;
SELECT chash_pin('pinned', 'big', 'b');
SELECT collected('pinned', array_fill(100, ARRAY[12]));
UPDATE chash_load_slot SET reads = 750, writes = 750 WHERE directory = 'pinned' AND slot = :big_slot;
INSERT INTO chash_load_tenant (directory, shard, tenant, slot, reads, writes, collected_at)
VALUES ('pinned', 'b', 'big', :big_slot, 700, 700, now());
-- per shard, slots alone: a 400, b 400, c 1,800; with the pin: a 400,
-- b 1,800, c 400 (target 866.7, cap 953.3): b gives its slots away
SELECT from_shard, to_shard, count(*) FROM chash_plan_rebalance('pinned', 'load') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT bool_and(slot <> :big_slot) AS pinned_slot_stays FROM chash_plan_rebalance('pinned', 'load');

-- Bytes are the second weight, a millionth of the load per byte on
-- average: two slots of a of equal load, one with 4,096 bytes stored,
-- differ by that only.  a gives the slot that lands closest to half the
-- gap, the one without bytes (the other is a hair heavier).
SELECT chash_create_directory('ties', ARRAY['a', 'b'], 4);
SELECT collected('ties', ARRAY[500, 500, 100, 0]);
SELECT t AS tenant_of_1 FROM (SELECT 'org-' || g AS t FROM generate_series(1, 1000) g) x
 WHERE chash_slot('ties', t) = 1 LIMIT 1 \gset
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows) VALUES ('ties', :'tenant_of_1', 4096, 1);
SELECT step, slot, from_shard, to_shard, bytes FROM chash_plan_rebalance('ties', 'load');
-- without any load collected the plan balances the bytes, within the
-- tolerance too: a holds 8,192 + 4,096 bytes, b 1,024 (cap 7,321.6).  a
-- gives its 4,096; its 8,192 fits nowhere, so a stays over its cap.
SELECT t AS tenant_of_0 FROM (SELECT 'org-' || g AS t FROM generate_series(1, 1000) g) x
 WHERE chash_slot('ties', t) = 0 LIMIT 1 \gset
SELECT t AS tenant_of_2 FROM (SELECT 'org-' || g AS t FROM generate_series(1, 1000) g) x
 WHERE chash_slot('ties', t) = 2 LIMIT 1 \gset
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows)
VALUES ('ties', :'tenant_of_0', 8192, 1), ('ties', :'tenant_of_2', 1024, 1);
DELETE FROM chash_load_slot WHERE directory = 'ties';
SELECT step, slot, from_shard, to_shard, bytes FROM chash_plan_rebalance('ties', 'load');

DROP FUNCTION after_load(text), collected(text, int[]), slot_owner(text, int), bad(text);
SELECT chash_drop_directory(d) FROM unnest(ARRAY['hot', 'pinned', 'ties']) d;
