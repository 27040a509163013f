-- ---------------------------------------------------------------------------
-- The mover's leases over batches (docs/migrations.md, "Batches";
-- 95_mover.sql of 1.1 for one step)
--
-- A batch's steps are leased, fenced, recorded, completed, released and
-- finished together, so they share one progress.  A takeover takes a dead
-- mover's expired leases of one shard pair, kind, state and progress
-- together: the batch (or part of it) as it was left.
-- ---------------------------------------------------------------------------

-- A lease's tie to its step is a statement trigger, not a foreign key: a
-- claim of 1,600 steps ran 1,600 key checks, each a query that locked the
-- step row the claim had just updated (27 of a claim's 75 ms unloaded,
-- about 0.5 of its 0.8 s at load 2).  Leases are written only by the
-- mover's functions, for steps they hold locked; deleting a step still
-- deletes its lease.
ALTER TABLE @extschema@.chash_step_lease DROP CONSTRAINT chash_step_lease_migration_step_fkey;
\ir ../functions/chash_step_lease_cascade/1.2.sql
CREATE TRIGGER chash_step_lease_cascade AFTER DELETE ON @extschema@.chash_migration_step
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_step_lease_cascade();
CREATE TRIGGER chash_step_lease_cascade_truncate AFTER TRUNCATE ON @extschema@.chash_migration_step
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_step_lease_cascade();

\ir ../functions/chash_steps_lease_check/1.2.sql

\ir ../functions/chash_steps_lease_set/1.2.sql

\ir ../functions/chash_steps_lease_claim/1.2.sql

\ir ../functions/chash_steps_lease_fence/1.2.sql

\ir ../functions/chash_steps_lease_record/1.2.sql

\ir ../functions/chash_steps_lease_complete/1.2.sql

\ir ../functions/chash_steps_lease_release/1.2.sql

\ir ../functions/chash_steps_lease_finish/1.2.sql
