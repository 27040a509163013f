-- ---------------------------------------------------------------------------
-- The state names of the C code (src/core/states.c: migration, step, lease
-- and shard states, one name table) as rows, for sql/states.sql, which
-- compares them with the CHECK constraints of the tables that store them.
-- Internal: not in the documented API (99_privileges.sql).
-- ---------------------------------------------------------------------------

\ir ../functions/chash_state_names/1.2.sql
