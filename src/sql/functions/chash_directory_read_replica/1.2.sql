CREATE FUNCTION @extschema@.chash_directory_read_replica(conninfo text, schema text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'chash_directory_read_replica'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_directory_read_replica(text, text) IS
    'internal: a shard''s replica of the directory tables, read in one snapshot there';
