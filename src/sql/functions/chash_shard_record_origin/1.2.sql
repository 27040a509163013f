-- A first join records who the directory database is (a later join of
-- another directory shares the subscription and its record).
CREATE FUNCTION @extschema@.chash_shard_record_origin() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    conninfo text;
    id record;
BEGIN
    IF NEW.subscription IS NULL
       OR EXISTS (SELECT FROM @extschema@.chash_shard_member m
                   WHERE m.subscription = NEW.subscription AND m.directory <> NEW.directory) THEN
        RETURN NULL;
    END IF;
    SELECT s.subconninfo INTO conninfo FROM pg_subscription s
     WHERE s.subname = NEW.subscription
       AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database());
    id := @extschema@.chash_shard_directory_identity(conninfo);
    INSERT INTO @extschema@.chash_shard_origin AS o (subscription, system_identifier, timeline)
         VALUES (NEW.subscription, id.system_identifier, id.timeline)
    ON CONFLICT (subscription) DO UPDATE
        SET system_identifier = excluded.system_identifier, timeline = excluded.timeline,
            recorded_at = excluded.recorded_at, diverged = NULL, diverged_at = NULL;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_record_origin() IS
    'trigger: a shard''s first join from a directory database records that server''s system identifier and timeline';
