-- Migrations (docs/migrations.md): a saved plan carried out step by step while
-- routing stays right.  Concurrency is in specs/migration_*.spec, crashes
-- in t/050_migration_crash.pl.

\i sql/include/bad.sql
-- migration ids depend on what ran before: print them as N
CREATE FUNCTION bad_migration(statement text) RETURNS text LANGUAGE sql AS
$$ SELECT regexp_replace(bad(statement), '([Mm]igration) [0-9]+', '\1 N', 'g') $$;

SELECT chash_create_directory('mig', ARRAY['s1', 's2', 's3'], 12);
SELECT chash_add_shard('mig', 's4');
SELECT * FROM chash_plan_rebalance('mig');
SELECT chash_migration_start('mig') AS m \gset
SELECT directory, kind, strategy, status, reverts, finished_at IS NULL AS unfinished
  FROM chash_migration WHERE id = :m;
SELECT step, slot, tenant, from_shard, to_shard, state, claimed_by
  FROM chash_migration_step WHERE migration = :m ORDER BY step;
SELECT total, done, in_flight, pending, cancelled, percent, started, time_left, summary
  FROM chash_migration_progress WHERE migration = :m;

-- A tenant of the first slot to move, to watch its route.
SELECT t AS tenant FROM (SELECT 'tenant' || i AS t FROM generate_series(1, 1000) i) x
 WHERE chash_slot('mig', t) = 0 LIMIT 1 \gset
SELECT tenant, slot, shard, source, slot_state, moving_to, migration = :m AS this_migration
  FROM chash_route_explain('mig', :'tenant');

-- claim: pending -> copying, the lowest step first
SET application_name = 'worker-1';
SELECT * FROM chash_step_claim(:m);
SELECT step, state, claimed_by ~ '^worker-1 pid [0-9]+$' AS claimed_by_me, started_at IS NOT NULL AS started
  FROM chash_migration_step WHERE migration = :m AND step = 1;
RESET application_name;
-- while copying, reads and writes still go to the old shard
SELECT shard, source, slot_state, moving_to FROM chash_route_explain('mig', :'tenant');
SELECT chash_route('mig', :'tenant'), chash_route_for_write('mig', :'tenant');

-- fence: writes now get 40001, reads still go to the old shard
SELECT chash_step_fence(:m, 1);
SELECT chash_step_fence(:m, 1);   -- again: a retrying worker is fine
SELECT shard, slot_state, moving_to FROM chash_route_explain('mig', :'tenant');
SELECT chash_route('mig', :'tenant');
SELECT bad_migration(format('SELECT chash_route_for_write(%L, %L)', 'mig', :'tenant'));
SELECT summary, in_flight FROM chash_migration_progress WHERE migration = :m;

-- complete: ownership flips with the step's state
SELECT version AS v0 FROM chash_directory WHERE name = 'mig' \gset
SELECT chash_step_complete(:m, 1);
SELECT chash_step_complete(:m, 1);   -- again: a no-op
SELECT shard FROM chash_slot WHERE directory = 'mig' AND slot = 0;
SELECT shard, source, slot_state, moving_to FROM chash_route_explain('mig', :'tenant');
SELECT chash_route('mig', :'tenant'), chash_route_for_write('mig', :'tenant');
SELECT version > :v0 AS version_bumped FROM chash_directory WHERE name = 'mig';
SELECT state, finished_at IS NOT NULL AS finished FROM chash_migration_step WHERE migration = :m AND step = 1;

-- complete straight from copying (no fence) is allowed
SELECT step FROM chash_step_claim(:m);
SELECT chash_step_complete(:m, 2);
-- release: back to pending, nothing else changes
SELECT step FROM chash_step_claim(:m);
SELECT chash_step_release(:m, 3);
SELECT state, claimed_by, started_at FROM chash_migration_step WHERE migration = :m AND step = 3;
SELECT step FROM chash_step_claim(:m);   -- the released step comes back first
SELECT chash_step_fence(:m, 3);
SELECT chash_step_release(:m, 3);       -- a fenced step can be released too
SELECT shard FROM chash_slot WHERE directory = 'mig' AND slot = 8;
SELECT total, done, in_flight, pending, percent, summary,
       started IS NOT NULL AS started, elapsed >= '0' AS elapsed, time_left >= '0' AS has_estimate
  FROM chash_migration_progress WHERE migration = :m;

-- a second unfinished migration of the same directory is refused (55006)
SELECT bad_migration($$SELECT chash_migration_start('mig')$$);
SELECT bad_migration($$SELECT chash_migration_move_tenant('mig', 'x', 's4')$$);

-- finish: the migration is done when its last step is
SELECT step FROM chash_step_claim(:m);
SELECT chash_step_complete(:m, 3);
SELECT count(*) FROM chash_step_claim(:m);   -- nothing pending: no rows
SELECT status, finished_at IS NOT NULL AS finished FROM chash_migration WHERE id = :m;
SELECT shard, count(*) FROM chash_slot WHERE directory = 'mig' GROUP BY 1 ORDER BY 1;
SELECT status, summary, time_left FROM chash_migration_progress WHERE migration = :m;
SELECT count(*) AS moves_left FROM chash_plan_rebalance('mig');
SELECT count(*) FROM chash_step_claim(:m);   -- a done migration hands out nothing

-- revert: a new migration that moves every done step back
SELECT chash_migration_revert(:m) AS r \gset
SELECT kind, status, reverts = :m AS reverts_m FROM chash_migration WHERE id = :r;
SELECT step, slot, from_shard, to_shard, state FROM chash_migration_step WHERE migration = :r ORDER BY step;
\i sql/include/run_steps.sql
SELECT status FROM chash_migration WHERE id = :r;
SELECT shard, count(*) FROM chash_slot WHERE directory = 'mig' GROUP BY 1 ORDER BY 1;
SELECT shard FROM chash_slot WHERE directory = 'mig' AND slot = 0;

-- cancel: pending and in-flight steps become cancelled, done steps stay
SELECT chash_migration_start('mig') AS c \gset
SELECT step FROM chash_step_claim(:c);
SELECT chash_step_complete(:c, 1);
SELECT step FROM chash_step_claim(:c);
SELECT chash_step_fence(:c, 2);
SELECT chash_migration_cancel(:c);
SELECT step, state FROM chash_migration_step WHERE migration = :c ORDER BY step;
SELECT status, summary, time_left FROM chash_migration_progress WHERE migration = :c;
SELECT shard, count(*) FROM chash_slot WHERE directory = 'mig' GROUP BY 1 ORDER BY 1;
-- the fenced slot is writable again, a worker's late complete fails
SELECT count(*) FROM chash_route_explain('mig', :'tenant') WHERE slot_state IS NOT NULL;
SELECT bad_migration(format('SELECT chash_step_complete(%s, 2)', :c));
SELECT count(*) FROM chash_step_claim(:c);
-- a new migration picks up where the cancelled one stopped
SELECT chash_migration_start('mig', max_moves => 1) AS n \gset
SELECT step, slot, from_shard, to_shard FROM chash_migration_step WHERE migration = :n;
SELECT chash_migration_cancel(:n);
-- revert the cancelled migration: only its done step goes back
SELECT chash_migration_revert(:c) AS rc \gset
SELECT step, slot, from_shard, to_shard FROM chash_migration_step WHERE migration = :rc;
-- reverting a running migration cancels it first
SELECT step FROM chash_step_claim(:rc);
SELECT chash_step_complete(:rc, 1);
SELECT status FROM chash_migration WHERE id = :rc;
SELECT chash_migration_start('mig') AS run \gset
SELECT step FROM chash_step_claim(:run);
SELECT chash_step_complete(:run, 1);
SELECT step FROM chash_step_claim(:run);
SELECT chash_migration_revert(:run) AS rr \gset
SELECT status FROM chash_migration WHERE id = :run;
SELECT step, state FROM chash_migration_step WHERE migration = :run ORDER BY step;
SELECT step, slot, from_shard, to_shard FROM chash_migration_step WHERE migration = :rr;
SELECT chash_migration_cancel(:rr);
-- a revert whose slot has moved since is refused
SELECT chash_migration_start('mig', max_moves => 1) AS a \gset
SELECT step FROM chash_step_claim(:a);
SELECT chash_step_complete(:a, 1);
UPDATE chash_slot SET shard = 's3'
 WHERE directory = 'mig' AND slot = (SELECT slot FROM chash_migration_step WHERE migration = :a);
SELECT bad_migration(format('SELECT chash_migration_revert(%s)', :a));

-- An empty plan makes a migration that is done at once.
SELECT chash_create_directory('mig_even', ARRAY['a', 'b'], 4);
SELECT chash_migration_start('mig_even') AS e \gset
SELECT status, finished_at IS NOT NULL AS finished FROM chash_migration WHERE id = :e;
SELECT total, summary, percent FROM chash_migration_progress WHERE migration = :e;

-- Moving a tenant: one step, ending as an override.
SELECT chash_migration_move_tenant('mig', :'tenant', 's1') AS t \gset
SELECT kind, status FROM chash_migration WHERE id = :t;
SELECT step, slot, tenant, from_shard, to_shard FROM chash_migration_step WHERE migration = :t;
SELECT * FROM chash_step_claim(:t);
SELECT chash_step_fence(:t, 1);
SELECT shard, source, slot_state, moving_to FROM chash_route_explain('mig', :'tenant');
SELECT bad_migration(format('SELECT chash_route_for_write(%L, %L)', 'mig', :'tenant'));
-- other tenants of the same slot are not fenced
SELECT t AS neighbour FROM (SELECT 'tenant' || i AS t FROM generate_series(1, 1000) i) x
 WHERE chash_slot('mig', t) = 0 AND t <> :'tenant' LIMIT 1 \gset
SELECT chash_route_for_write('mig', :'neighbour') = chash_route('mig', :'neighbour') AS writable;
SELECT chash_step_complete(:t, 1);
SELECT tenant, shard, note = 'moved by migration ' || :t AS noted FROM chash_override WHERE directory = 'mig';
SELECT shard, source FROM chash_route_explain('mig', :'tenant');
SELECT status, summary FROM chash_migration_progress WHERE migration = :t;
-- reverting a tenant move unpins it when its slot's owner is where it was
SELECT chash_migration_revert(:t) AS tr \gset
SELECT step, tenant, from_shard, to_shard FROM chash_migration_step WHERE migration = :tr;
SELECT step FROM chash_step_claim(:tr);
SELECT chash_step_complete(:tr, 1);
SELECT count(*) AS overrides FROM chash_override WHERE directory = 'mig';
SELECT chash_route('mig', :'tenant') = shard AS follows_slot FROM chash_slot
 WHERE directory = 'mig' AND slot = chash_slot('mig', :'tenant');
-- a pinned tenant moves from its pinned shard, and stays pinned
SELECT chash_pin('mig', 'vip', 's2');
SELECT chash_migration_move_tenant('mig', 'vip', 's4') AS v \gset
SELECT from_shard, to_shard FROM chash_migration_step WHERE migration = :v;
SELECT step FROM chash_step_claim(:v);
SELECT chash_step_complete(:v, 1);
SELECT shard, note = 'moved by migration ' || :v AS noted FROM chash_override WHERE directory = 'mig' AND tenant = 'vip';
-- bigint directories move canonical tenants
SELECT chash_create_directory('mig_int', ARRAY['a', 'b'], 4, key_type => 'bigint');
SELECT chash_migration_move_tenant('mig_int', ' 0042', CASE chash_route('mig_int', 42::bigint) WHEN 'a' THEN 'b' ELSE 'a' END) AS i \gset
SELECT tenant FROM chash_migration_step WHERE migration = :i;
SELECT step FROM chash_step_claim(:i);
SELECT chash_step_complete(:i, 1);
SELECT tenant FROM chash_override WHERE directory = 'mig_int';

-- Steps written by hand are held to what the functions write (the step
-- table checks them as the slot table checks slots): a slot of the
-- directory, a tenant of its key type stored canonical, shards it has, a
-- move to another shard, each slot or tenant once per migration, one
-- running migration per directory, and a migration stays in its directory.
-- (row values show the migration id too: N)
CREATE FUNCTION bad_step(statement text) RETURNS text LANGUAGE sql AS
$$ SELECT regexp_replace(bad_migration(statement), '\([0-9]+, ', '(N, ', 'g') $$;
SELECT chash_create_directory('mig_hand', ARRAY['a', 'b'], 8, key_type => 'bigint');
INSERT INTO chash_migration (directory, kind) VALUES ('mig_hand', 'move_tenant') RETURNING id AS h \gset
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
                             VALUES (%s, 1, -1, 'a', 'b', 'fenced')$$, :h));
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
                             VALUES (%s, 1, 8, 'a', 'b')$$, :h));
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
                             VALUES (%s, 1, 3, 'a', 'zz')$$, :h));
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
                             VALUES (%s, 1, 3, 'zz', 'b')$$, :h));
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
                             VALUES (%s, 1, 3, 'a', 'a')$$, :h));
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard)
                             VALUES (%s, 1, 'seven', 'a', 'b')$$, :h));
-- '007' is tenant 7: stored as '7', and its fence holds for 7
SELECT chash_route('mig_hand', 7::bigint) AS from_7 \gset
INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
VALUES (:h, 1, '007', :'from_7', CASE :'from_7' WHEN 'a' THEN 'b' ELSE 'a' END, 'fenced');
SELECT tenant, state FROM chash_migration_step WHERE migration = :h;
SELECT bad_step($$SELECT chash_route_for_write('mig_hand', '7')$$);
SELECT slot_state, migration = :h AS this_migration FROM chash_route_explain('mig_hand', '+7');
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard)
                             VALUES (%s, 2, ' 7', 'a', 'b')$$, :h));
SELECT bad_step(format($$UPDATE chash_migration_step SET to_shard = 'zz' WHERE migration = %s$$, :h));
-- a shard an unfinished step moves to stays as long as the step does
SELECT chash_add_shard('mig_hand', 'c');
INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
VALUES (:h, 2, 5, 'a', 'c'), (:h, 3, 6, 'b', 'c');
SELECT bad_step(format($$INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard)
                             VALUES (%s, 4, 5, 'b', 'c')$$, :h));
SELECT bad_step($$DELETE FROM chash_shard WHERE directory = 'mig_hand' AND shard = 'c'$$);
SELECT bad_step($$UPDATE chash_shard SET shard = 'c2' WHERE directory = 'mig_hand' AND shard = 'c'$$);
-- one running migration per directory, also by hand; the functions say 55006
SELECT bad_step($$INSERT INTO chash_migration (directory, kind) VALUES ('mig_hand', 'rebalance')$$);
SELECT bad_step($$SELECT chash_migration_start('mig_hand')$$);
SELECT bad_step(format($$UPDATE chash_migration SET directory = 'mig_int' WHERE id = %s$$, :h));
SELECT chash_migration_cancel(:h);
-- finished steps are history: their shard may go
DELETE FROM chash_shard WHERE directory = 'mig_hand' AND shard = 'c';
SELECT count(*) AS steps FROM chash_migration_step WHERE migration = :h;
SELECT chash_drop_directory('mig_hand');
DROP FUNCTION bad_step(text);

-- Privileges: the operator role of docs/directory.md (DML on the directory
-- tables, the migration id sequence) runs migrations; an application role
-- (SELECT) can plan and watch progress but not change anything.
\i sql/include/migration_roles.sql
SELECT chash_create_directory('mig_priv', ARRAY['a', 'b'], 8);
SELECT chash_add_shard('mig_priv', 'c');
SET ROLE regress_chash_mig_app;
SELECT count(*) AS app_plans FROM chash_plan_rebalance('mig_priv');
SELECT bad_migration($$SELECT chash_migration_start('mig_priv')$$);
RESET ROLE;
SELECT chash_migration_start('mig_priv') AS p \gset
SET ROLE regress_chash_mig_app;
SELECT bad_migration(format('SELECT * FROM chash_step_claim(%s)', :p));
SELECT summary FROM chash_migration_progress WHERE migration = :p;
SET ROLE regress_chash_mig_operator;
SELECT chash_migration_cancel(:p);
SELECT chash_migration_start('mig_priv') AS p \gset
SELECT step FROM chash_step_claim(:p);
SELECT chash_step_fence(:p, 1);
SELECT chash_step_release(:p, 1);
SELECT step FROM chash_step_claim(:p);
SELECT chash_step_complete(:p, 1);
SELECT chash_migration_revert(:p) IS NOT NULL AS reverted;
SELECT bad_migration($$SELECT chash_migration_move_tenant('mig_priv', 'x', 'c')$$);
RESET ROLE;
SELECT summary FROM chash_migration_progress WHERE directory = 'mig_priv' ORDER BY migration;
DROP OWNED BY regress_chash_mig_app, regress_chash_mig_operator;
DROP ROLE regress_chash_mig_app, regress_chash_mig_operator;

-- The whole directory's steps go when it is dropped.
SELECT chash_drop_directory(d) FROM unnest(ARRAY['mig', 'mig_even', 'mig_int', 'mig_priv']) d;
SELECT count(*) FROM chash_migration;
SELECT count(*) FROM chash_migration_step;
DROP FUNCTION bad_migration(text);
