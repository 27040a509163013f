-- ---------------------------------------------------------------------------
-- A batch's history: one key for its steps (docs/migrations.md, "Batches";
-- 51_directory_integrity.sql of 1.1 for the rest of chash_directory_bump)
--
-- A claim, fence or completion of a batch of 1,600 steps recorded 1,600
-- 'step' keys in chash_directory_change, and each was decoded and sent to
-- every shard and inserted there through the replica's row trigger: about
-- half of the rows a batch sends to its shards.  A statement that changes
-- several steps of one migration records the migration instead (key: its
-- id), as a change of chash_migration does: a routing cache catching up
-- reads the migration's steps in flight again (one range of the partial
-- index chash_migration_step_in_flight, a few batches' worth whatever the
-- migration's size), where it read the batch's steps one by one.  One
-- step changed alone (chash_step_fence, chash_step_complete) is still a
-- 'step' key.  A statement that changes more than 16 slots of a directory
-- (a batch's completion) records 'slots' keys, up to 200 slots each in
-- slot order and comma-separated, where it recorded a 'slot' key per slot.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_directory_bump/1.2.sql

-- Whether a backend's routing cache catches up from that history or loads
-- directories in full (src/routing_cache_stats.c).
\ir ../functions/chash_routing_cache_stats/1.2.sql
