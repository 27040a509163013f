
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

-- chash_shard_status says whether the statistics are counted (a column
-- appended: CREATE OR REPLACE VIEW adds columns only at the end).
CREATE OR REPLACE VIEW @extschema@.chash_shard_status WITH (security_invoker = true) AS
SELECT m.directory,
       m.shard,
       m.subscription,
       d.version AS replicated_version,
       CASE WHEN m.subscription IS NULL THEN true
            ELSE s.oid IS NOT NULL AND NOT EXISTS (
                SELECT FROM pg_subscription_rel r WHERE r.srsubid = s.oid AND r.srsubstate <> 'r')
       END AS synced,
       st.received_lsn,
       st.last_msg_send_time AS last_sent,
       CASE WHEN m.subscription IS NULL THEN interval '0'
            ELSE pg_catalog.now() - st.last_msg_send_time
       END AS lag,
       t.present_tables,
       t.missing_tables,
       t.guarded_tables,
       @extschema@.chash_stats_tracking() AS stats_tracked
FROM @extschema@.chash_shard_member m
LEFT JOIN @extschema@.chash_directory d ON d.name = m.directory
LEFT JOIN pg_subscription s ON s.subname = m.subscription
      AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NOT NULL), '{}') AS present_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NULL), '{}') AS missing_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = to_regclass(x.table_name)
                                          AND g.tgname = ('chash_guard_' || left(md5(m.directory), 12))::name)),
                    '{}') AS guarded_tables
    FROM @extschema@.chash_table x WHERE x.directory = m.directory
) t;
COMMENT ON VIEW @extschema@.chash_shard_status IS
    'per joined directory: shard, subscription, replicated version, initial copy done, lag (time since the directory database last sent), registered tables present and missing here, those guarded, and whether load statistics are counted';
