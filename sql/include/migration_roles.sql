-- The two roles of a migration's privileges tests: the operator role of
-- docs/directory.md (DML on the directory tables, the migration id
-- sequence, chash_operator) and an application role that may only read
-- them (plan, watch progress).  The test drops them (DROP OWNED first).
CREATE ROLE regress_chash_mig_app;
CREATE ROLE regress_chash_mig_operator;
GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override, chash_tenant_size,
                chash_migration, chash_migration_step TO regress_chash_mig_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON chash_directory, chash_shard, chash_slot, chash_override,
      chash_tenant_size, chash_migration, chash_migration_step TO regress_chash_mig_operator;
GRANT USAGE ON SEQUENCE chash_migration_id_seq TO regress_chash_mig_operator;
GRANT chash_operator TO regress_chash_mig_operator;
GRANT SELECT ON chash_migration_progress TO regress_chash_mig_app, regress_chash_mig_operator;
