-- ---------------------------------------------------------------------------
-- The mover's leases over batches (docs/migrations.md, "Batches";
-- 95_mover.sql of 1.1 for one step)
--
-- A batch's steps are leased, fenced, recorded, completed, released and
-- finished together, so they share one progress.  A takeover takes a dead
-- mover's expired leases of one shard pair, kind, state and progress
-- together: the batch (or part of it) as it was left.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_steps_lease_check/1.2.sql

\ir ../functions/chash_steps_lease_set/1.2.sql

\ir ../functions/chash_steps_lease_claim/1.2.sql

\ir ../functions/chash_steps_lease_fence/1.2.sql

\ir ../functions/chash_steps_lease_record/1.2.sql

\ir ../functions/chash_steps_lease_complete/1.2.sql

\ir ../functions/chash_steps_lease_release/1.2.sql

\ir ../functions/chash_steps_lease_finish/1.2.sql
