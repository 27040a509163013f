-- ---------------------------------------------------------------------------
-- chash_remove_shard (docs/directory.md, "Removing a shard"): deletes a
-- shard that has nothing left, with a clear 55006 for what it still has.
-- ---------------------------------------------------------------------------
\ir ../functions/chash_remove_shard/1.2.sql
