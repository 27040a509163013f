CREATE FUNCTION @extschema@.chash_shard_fetch(server text, directory text)
    RETURNS TABLE (kind text, slot int, tenant text, reads bigint, writes bigint, rows bigint,
                   exec_time float8, score float8, since timestamptz, bytes bigint)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_shard_fetch';
COMMENT ON FUNCTION @extschema@.chash_shard_fetch(text, text) IS
    'reads a shard''s slot and tenant statistics and tenant sizes of a directory through libpq, within chash.collect_timeout (for chash_collect)';
