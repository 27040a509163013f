
-- Load statistics on a shard (docs/load.md): counted in shared memory by
-- the guard and the statement check where chash is preloaded.

\ir ../functions/chash_slot_stats/1.2.sql

\ir ../functions/chash_tenant_stats/1.2.sql

\ir ../functions/chash_stats_reset/1.2.sql

\ir ../functions/chash_stats_tracking/1.2.sql

-- chash_shard_status says whether the statistics are counted: its column
-- stats_tracked, in the view's last definition (70_failover_state.sql).
