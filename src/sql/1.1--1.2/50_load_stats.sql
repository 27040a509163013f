
-- Load statistics on a shard (docs/load.md): counted in shared memory by
-- the guard and the statement check where chash is preloaded.

CREATE FUNCTION @extschema@.chash_slot_stats(directory text)
    RETURNS TABLE (slot int, reads bigint, writes bigint, rows bigint, exec_time float8,
                   since timestamptz)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_slot_stats';
COMMENT ON FUNCTION @extschema@.chash_slot_stats(text) IS
    'per slot of a directory with anything counted on this shard: statements that read, rows written, rows processed, executor time (ms), and since when';

CREATE FUNCTION @extschema@.chash_tenant_stats(directory text, top int DEFAULT 20)
    RETURNS TABLE (tenant text, slot int, reads bigint, writes bigint, rows bigint,
                   exec_time float8, score float8)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_tenant_stats';
COMMENT ON FUNCTION @extschema@.chash_tenant_stats(text, int) IS
    'the top tenants of a directory on this shard by a decayed score (reads plus rows written, half-life 10 minutes), with their figures since they entered the top-K';

CREATE FUNCTION @extschema@.chash_stats_reset(directory text DEFAULT NULL) RETURNS void
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_stats_reset';
COMMENT ON FUNCTION @extschema@.chash_stats_reset(text) IS
    'zeroes the load statistics of a directory on this shard, or with NULL of every directory';

CREATE FUNCTION @extschema@.chash_stats_tracking() RETURNS bool
    LANGUAGE c STABLE
    AS 'MODULE_PATHNAME', 'chash_stats_tracking';
COMMENT ON FUNCTION @extschema@.chash_stats_tracking() IS
    'whether this session counts load statistics: chash preloaded and chash.track_stats on';

-- chash_shard_status says whether the statistics are counted: its column
-- stats_tracked, in the view's last definition (70_failover_state.sql).
