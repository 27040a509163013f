CREATE FUNCTION @extschema@.chash_slot_stats(directory text)
    RETURNS TABLE (slot int, reads bigint, writes bigint, rows bigint, exec_time float8,
                   since timestamptz)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_slot_stats';
COMMENT ON FUNCTION @extschema@.chash_slot_stats(text) IS
    'per slot of a directory with anything counted on this shard: statements that read, rows written, rows processed, executor time (ms), and since when';
