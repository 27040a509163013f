CREATE FUNCTION @extschema@.chash_shard_directory_identity(conninfo text,
        OUT system_identifier numeric, OUT timeline int)
    AS 'MODULE_PATHNAME', 'chash_shard_directory_identity'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_directory_identity(text) IS
    'internal: the system identifier and timeline of the directory database (IDENTIFY_SYSTEM)';
