-- chash_remove_shard (docs/directory.md, "Removing a shard"): deletes a
-- shard with nothing left; 55006 for each thing it still has, 22004 for a
-- NULL argument, 42704 for what does not exist.
\i sql/include/bad.sql
SELECT chash_create_directory('rm', ARRAY['s1', 's2'], 8);
SELECT chash_add_shard('rm', 's3');
SELECT chash_add_shard('rm', 's4');

SELECT bad($$SELECT chash_remove_shard(NULL, 's3')$$);
SELECT bad($$SELECT chash_remove_shard('rm', NULL)$$);
SELECT bad($$SELECT chash_remove_shard('no such', 's3')$$);
SELECT bad($$SELECT chash_remove_shard('rm', 'no such')$$);
-- owns slots
SELECT bad($$SELECT chash_remove_shard('rm', 's1')$$);
-- pinned tenants
SELECT chash_pin('rm', 'acme', 's3');
SELECT chash_pin('rm', 'beta', 's3');
SELECT bad($$SELECT chash_remove_shard('rm', 's3')$$);
SELECT chash_unpin('rm', 'acme');
SELECT chash_unpin('rm', 'beta');
-- a step in flight moves to it (pending, then claimed); migration ids
-- depend on the tests before, so they are left out
SELECT chash_migration_move_tenant('rm', 'acme', 's3') AS m \gset
SELECT regexp_replace(bad($$SELECT chash_remove_shard('rm', 's3')$$), 'migration \d+', 'migration N');
SELECT step FROM chash_step_claim(:m);
SELECT regexp_replace(bad($$SELECT chash_remove_shard('rm', 's3')$$), 'migration \d+', 'migration N');
SELECT chash_step_complete(:m, 1);
-- acme is now pinned to s3: a pin again (also while a step moves it away)
SELECT bad($$SELECT chash_remove_shard('rm', 's3')$$);
SELECT chash_migration_move_tenant('rm', 'acme', 's1') AS m \gset
SELECT bad($$SELECT chash_remove_shard('rm', 's3')$$);
SELECT chash_migration_cancel(:m);
SELECT chash_unpin('rm', 'acme');
-- joined by this database (the directory database joined as a shard)
SELECT chash_shard_join('rm', 's4');
SELECT bad($$SELECT chash_remove_shard('rm', 's4')$$);
SELECT chash_shard_leave('rm');

-- what a removal leaves: the shard gone, a new version, the others kept
SELECT version AS v FROM chash_directory WHERE name = 'rm' \gset
SELECT chash_remove_shard('rm', 's3');
SELECT chash_remove_shard('rm', 's4');
SELECT string_agg(shard, ',' ORDER BY shard) AS shards,
       (SELECT version FROM chash_directory WHERE name = 'rm') > :v AS bumped
  FROM chash_shard WHERE directory = 'rm';
SELECT bad($$SELECT chash_remove_shard('rm', 's3')$$);
SELECT chash_drop_directory('rm');
