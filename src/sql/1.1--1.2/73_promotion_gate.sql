-- ---------------------------------------------------------------------------
-- Failover: a promoted directory database changes no ownership until its
-- shards follow it (docs/shards.md, "Failover")
--
-- Every version records the server that made it (kind 'origin').  While a
-- directory's newest version was made by another server, this one was
-- promoted or restored since, and its shards may still follow the other
-- one: a client that routed by the other server's state writes a tenant on
-- a shard that still admits it there.  So every write of an ownership
-- table is refused (chash_directory_gate, 55000) until
-- chash_directory_recover has brought every shard server here and made a
-- version of each directory on this server.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_directory_gate/1.2.sql
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_shard
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_slot
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_override
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_migration
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_migration_step
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();
-- a registration makes a version too, which would record this server
CREATE TRIGGER chash_directory_gate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.chash_table
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_gate();

\ir ../functions/chash_directory_shard_follow/1.2.sql
REVOKE ALL ON FUNCTION @extschema@.chash_directory_shard_follow(text, text, text, text, text) FROM PUBLIC;

\ir ../functions/chash_directory_recover/1.2.sql
