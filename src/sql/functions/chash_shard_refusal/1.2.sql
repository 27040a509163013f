CREATE FUNCTION @extschema@.chash_shard_refusal(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_shard_refusal'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_shard_refusal(text) IS
    'why this shard cannot vouch for its replica of the directory (with chash.fail_closed on its guards refuse writes, SH002 or SH003), NULL when it can';
