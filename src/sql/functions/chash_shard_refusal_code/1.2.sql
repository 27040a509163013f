CREATE FUNCTION @extschema@.chash_shard_refusal_code(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_shard_refusal_code'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_shard_refusal_code(text) IS
    'the SQLSTATE of this shard''s refusal (chash_shard_refusal): SH002 until a DBA mends the replica, SH003 until it follows again; NULL when it can vouch for it';
