CREATE FUNCTION @extschema@.chash_shard_slot_snapshot(conninfo text, slot_name text, schema text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'chash_shard_slot_snapshot'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_slot_snapshot(text, text, text) IS
    'internal: creates this database''s slot on the directory database and returns the directory tables in the snapshot it exported, with the server''s identity';
