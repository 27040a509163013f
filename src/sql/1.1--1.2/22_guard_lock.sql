-- ---------------------------------------------------------------------------
-- Who may switch the guard off (docs/shards.md, "Who may switch the guard
-- off"): a table's owner alone may not.  An event trigger (C, so it fires
-- in every session, whether or not it loaded chash's library) refuses,
-- unless the role is a superuser or has chash_operator, every command that
-- would leave a guarded table writable past its guard: DISABLE TRIGGER of
-- a guard (by name, ALL, USER), ENABLE REPLICA or ALWAYS TRIGGER of one,
-- DROP TRIGGER, ALTER TRIGGER ... RENAME, a change of the tenant column
-- (type, drop, rename, add) and ATTACH PARTITION or INHERIT of a table
-- with rows.
--
-- And DROP EXTENSION chash (or DROP SCHEMA ... CASCADE of its schema) is
-- refused while the database is a shard (docs/shards.md, "Uninstalling"):
-- it would drop the guards and leave the subscription failing and its
-- slot holding the directory server's WAL.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_guard_ddl/1.2.sql

CREATE EVENT TRIGGER chash_guard_ddl ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE', 'DROP TRIGGER', 'ALTER TRIGGER')
    EXECUTE FUNCTION @extschema@.chash_guard_ddl();

\ir ../functions/chash_shard_drop_check/1.2.sql

CREATE EVENT TRIGGER chash_shard_drop_check ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA')
    EXECUTE FUNCTION @extschema@.chash_shard_drop_check();
