-- ---------------------------------------------------------------------------
-- Batches of migration steps (docs/migrations.md, "Batches"; SPEC 4.6)
--
-- A batch is a set of steps of one migration with the same from_shard and
-- to_shard, all slot steps or all tenant steps.  It is claimed, fenced,
-- completed or released in one transaction: one directory version for the
-- batch, one fence barrier over all its slots and tenants.  Steps stay one
-- per slot or tenant in chash_migration_step.  The lock order is the one
-- of the single-step functions: the directory row, then the steps in step
-- order.  Each function is a few statements whatever the batch's size.
--
-- They plan each statement with the batch's own array (plan_cache_mode =
-- force_custom_plan): a generic plan sees "step = ANY ($2)" as ten steps
-- of a table it thinks tiny, and tests every step of the migration
-- against the whole array, or joins the array to it in a nested loop:
-- 30-700 ms a statement for a batch of 1,600 of 5,461 steps, against a
-- fraction of a millisecond planned for the array (hashed, its length
-- known).  61_batch_leases.sql does the same.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_steps_max/1.2.sql

\ir ../functions/chash_fence_barrier/1.2.sql

\ir ../functions/chash_shard_wait_fence/1.2.sql

\ir ../functions/chash_steps_lock/1.2.sql

\ir ../functions/chash_steps_lock_claimed/1.2.sql

\ir ../functions/chash_steps_claim/1.2.sql

\ir ../functions/chash_steps_fence/1.2.sql

\ir ../functions/chash_steps_complete/1.2.sql

\ir ../functions/chash_steps_release/1.2.sql
