-- Background rebalancing (docs/shards.md, "Background rebalancing") on a
-- server without chash in shared_preload_libraries, as pg_regress runs:
-- the start says what is missing and leaves nothing behind; the argument
-- checks; stop and wait of a directory that has no rebalance.
\i sql/include/bad.sql
SELECT chash_create_directory('rb', ARRAY['a', 'b'], 8);
SELECT chash_add_shard('rb', 'c');
SELECT bad($$SELECT chash_rebalance_start('rb')$$);
SELECT count(*) AS migrations FROM chash_migration WHERE directory = 'rb';
SELECT bad($$SELECT chash_rebalance_start(NULL)$$);
SELECT bad($$SELECT chash_rebalance_start('rb', NULL)$$);
SELECT bad($$SELECT chash_rebalance_start('rb', max_parallel => 0)$$);
SELECT bad($$SELECT chash_rebalance_start('rb', max_parallel => 65)$$);
SELECT bad($$SELECT chash_rebalance_start('rb', max_rate => 0)$$);
SELECT bad($$SELECT chash_rebalance_start('nosuch')$$);
SELECT bad($$SELECT chash_rebalance_stop('rb')$$);
SELECT bad($$SELECT chash_rebalance_wait('rb')$$);
SELECT bad($$SELECT chash_rebalance_wait(NULL)$$);
SELECT * FROM chash_rebalance_status;
SELECT chash_drop_directory('rb');
