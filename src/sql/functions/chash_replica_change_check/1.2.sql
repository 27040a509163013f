-- An origin entry of a server other than the one the shard recorded came
-- from another history (the stream of a server promoted elsewhere).  A
-- history entry that is there already is a version used twice: recorded
-- and skipped, so that the apply goes on (a duplicate key would stop it
-- for good, and roll the record back with it).
CREATE FUNCTION @extschema@.chash_replica_change_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    recorded text;
BEGIN
    -- Another server's origin entry contradicts the replica only when the
    -- subscription's stream brings it.  chash_shard_repoint, in a client
    -- session, inserts the new server's entries on purpose, having compared
    -- the two histories itself.
    IF NEW.kind = 'origin'
       AND (SELECT a.backend_type FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a)
           = 'logical replication worker' THEN
        SELECT o.system_identifier || ':' || o.timeline INTO recorded FROM @extschema@.chash_shard_origin o
         WHERE o.subscription = @extschema@.chash_shard_subscription();
        IF recorded <> NEW.key THEN
            PERFORM @extschema@.chash_replica_note_divergence(format(
                'Version %s of directory "%s" was made by server %s, but this shard replicates from server %s.',
                NEW.version, NEW.directory, NEW.key, recorded));
        END IF;
    END IF;
    IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                WHERE c.directory = NEW.directory AND c.version = NEW.version
                  AND c.kind = NEW.kind AND c.key = NEW.key) THEN
        PERFORM @extschema@.chash_replica_note_divergence(format(
            'Version %s of directory "%s" arrived a second time.', NEW.version, NEW.directory));
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_change_check() IS
    'trigger on a shard''s replica: a history entry applied twice records a divergence and is skipped';
