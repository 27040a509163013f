-- ---------------------------------------------------------------------------
-- Failover: reconciling a promoted directory database with its shards
-- (docs/shards.md, "Failover")
--
-- Every shard replicates the one stream of the directory database's
-- changes, so each shard's replica is a prefix of its history, and the
-- newest one holds every version the mover can have acted on (it waits
-- for the source shard to apply a fence and a completion before it goes
-- on).  A promoted standby that missed versions is rolled forward to the
-- newest replica; what it changed itself since its last common version is
-- applied again on top, as a new version.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_directory_read_replica/1.2.sql
REVOKE ALL ON FUNCTION @extschema@.chash_directory_read_replica(text, text) FROM PUBLIC;

\ir ../functions/chash_directory_reconcile/1.2.sql
