CREATE FUNCTION @extschema@.chash_routing_cache_stats(OUT loads bigint, OUT catch_ups bigint, OUT directories int)
    AS 'MODULE_PATHNAME', 'chash_routing_cache_stats'
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.chash_routing_cache_stats() IS
    'this backend''s routing cache: directories loaded in full, versions caught up from the change history, directories held';
