CREATE FUNCTION @extschema@.chash_stats_reset(directory text DEFAULT NULL) RETURNS void
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_stats_reset';
COMMENT ON FUNCTION @extschema@.chash_stats_reset(text) IS
    'zeroes the load statistics of a directory on this shard, or with NULL of every directory';
