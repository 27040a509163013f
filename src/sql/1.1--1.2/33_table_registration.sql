-- ---------------------------------------------------------------------------
-- Registering tables and moving rows exclude each other: a table
-- registered (or unregistered) while a batch is in flight would change
-- the tables under its copy (docs/directory.md, "Registered tables and
-- moves").
-- ---------------------------------------------------------------------------

\ir ../functions/chash_table_registration_check/1.2.sql
\ir ../functions/chash_add_table/1.2.sql
\ir ../functions/chash_drop_table/1.2.sql
