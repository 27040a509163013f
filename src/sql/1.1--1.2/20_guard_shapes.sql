-- ---------------------------------------------------------------------------
-- The guard for every table shape (docs/shards.md, "The guard"):
-- - the row guard checks the final new row: on a table where a later
--   BEFORE trigger or a stored generated tenant column may change it
--   after the BEFORE guard, the guard fires AFTER INSERT OR UPDATE too
--   (only there: it costs every statement a queued event), and follows
--   triggers created or altered later;
-- - inheritance children of a registered table are guarded with it, also
--   ones created or attached later; partitions get the partitioned
--   table's row trigger as clones;
-- - the TRUNCATE guard reads the migration steps with the extension's
--   rights, as the row guard does;
-- - a tenant column with a nondeterministic collation is refused at
--   registration (and by the guard, src/shard_guard.c).
-- ---------------------------------------------------------------------------

\ir ../functions/chash_shard_truncate_guard/1.2.sql

\ir ../functions/chash_guard_tree/1.2.sql

\ir ../functions/chash_guard_needs_final/1.2.sql

\ir ../functions/chash_guard_table/1.2.sql

\ir ../functions/chash_unguard/1.2.sql

\ir ../functions/chash_guard_new_tables/1.2.sql

\ir ../functions/chash_table_check_column/1.2.sql
-- (named to fire after chash_table_guard, which checks and spells the name:
-- BEFORE triggers fire in name order)
CREATE TRIGGER chash_table_guard_tenant_column BEFORE INSERT OR UPDATE ON @extschema@.chash_table
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_table_check_column();

-- Triggers created or altered on a guarded table after the join.
DROP EVENT TRIGGER chash_guard_new_tables;
CREATE EVENT TRIGGER chash_guard_new_tables ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER')
    EXECUTE FUNCTION @extschema@.chash_guard_new_tables();

-- Guards made by 1.1: children and final-row guards where needed.
SELECT @extschema@.chash_guard_sync(m.directory) FROM @extschema@.chash_shard_member m;
