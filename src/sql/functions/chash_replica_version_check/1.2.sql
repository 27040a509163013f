-- Every committed change raises a directory's version, so an applied
-- version that is not above the replica's comes from another history.
CREATE FUNCTION @extschema@.chash_replica_version_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.version <= OLD.version THEN
        PERFORM @extschema@.chash_replica_note_divergence(format(
            'Version %s of directory "%s" arrived after version %s.', NEW.version, NEW.name, OLD.version));
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_version_check() IS
    'trigger on a shard''s replica: a directory version that goes back or repeats records a divergence';
