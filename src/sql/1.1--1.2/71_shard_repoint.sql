-- ---------------------------------------------------------------------------
-- Failover: re-pointing a shard at a new directory server (docs/shards.md,
-- "Failover"; src/shard_join.c)
--
-- chash_shard_repoint makes this database's slot on the new server,
-- which exports a snapshot; the directory tables read in that snapshot
-- replace the replica here in the same transaction, and the subscription
-- is made again on that slot without an initial copy.  So the replica
-- holds exactly the state the slot's stream starts after: no change is
-- missed or applied twice.  The guards are never taken off: their tables
-- are not touched, and registrations that stay the same stay as they are.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_shard_directory_identity/1.2.sql
\ir ../functions/chash_shard_slot_snapshot/1.2.sql
\ir ../functions/chash_shard_create_subscription/1.2.sql
REVOKE ALL ON FUNCTION @extschema@.chash_shard_directory_identity(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_slot_snapshot(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_create_subscription(text, text, text, boolean) FROM PUBLIC;

\ir ../functions/chash_shard_record_origin/1.2.sql
CREATE TRIGGER chash_shard_record_origin AFTER INSERT ON @extschema@.chash_shard_member
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_shard_record_origin();

\ir ../functions/chash_replica_replace/1.2.sql
REVOKE ALL ON FUNCTION @extschema@.chash_replica_replace(regclass, jsonb, text) FROM PUBLIC;

\ir ../functions/chash_shard_repoint/1.2.sql
