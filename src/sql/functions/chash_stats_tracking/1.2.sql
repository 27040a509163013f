CREATE FUNCTION @extschema@.chash_stats_tracking() RETURNS bool
    LANGUAGE c STABLE
    AS 'MODULE_PATHNAME', 'chash_stats_tracking';
COMMENT ON FUNCTION @extschema@.chash_stats_tracking() IS
    'whether this session counts load statistics: chash preloaded and chash.track_stats on';
