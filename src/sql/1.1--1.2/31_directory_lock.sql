-- ---------------------------------------------------------------------------
-- The directory-row lock, said once: chash_directory_row (1.0) locks the
-- row FOR NO KEY UPDATE and raises 22004 and 42704; the migration
-- functions' chash_migration_lock_directory is that lock, not a copy of it.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_migration_lock_directory/1.2.sql
