CREATE FUNCTION @extschema@.chash_tenant_stats(directory text, top int DEFAULT 20)
    RETURNS TABLE (tenant text, slot int, reads bigint, writes bigint, rows bigint,
                   exec_time float8, score float8)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_tenant_stats';
COMMENT ON FUNCTION @extschema@.chash_tenant_stats(text, int) IS
    'the top tenants of a directory on this shard by a decayed score (reads plus rows written, half-life 10 minutes), with their figures since they entered the top-K';
