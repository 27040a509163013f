CREATE FUNCTION @extschema@.chash_directory_log_origin() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
         VALUES (NEW.name, NEW.version, 'origin', @extschema@.chash_server_identity())
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_log_origin() IS
    'trigger: records with each new version of a directory the server that made it (kind origin)';
