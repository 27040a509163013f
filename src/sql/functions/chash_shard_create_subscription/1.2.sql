CREATE FUNCTION @extschema@.chash_shard_create_subscription(name text, conninfo text, slot_name text,
        copy_data boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_create_subscription'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_create_subscription(text, text, text, boolean) IS
    'internal: subscribes to the directory tables on an existing slot, with or without the initial copy';
