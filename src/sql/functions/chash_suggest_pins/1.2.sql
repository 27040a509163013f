-- chash_suggest_pins (docs/load.md, "Suggesting pins"): tenants whose
-- collected load alone is more than half of a fair shard's, each with the
-- active shard that would carry it with the least load (weights count),
-- chosen greedily in order of load.
CREATE FUNCTION @extschema@.chash_suggest_pins(directory text, n int DEFAULT 10)
    RETURNS TABLE (tenant text, shard text, load_share float8, suggested_shard text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    total float8;
    fair float8;
    shard_load jsonb := '{}';
    c record;
    best text;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    IF n IS NULL THEN
        RAISE EXCEPTION 'n must not be null' USING ERRCODE = '22004';
    END IF;
    IF n < 1 THEN
        RAISE EXCEPTION 'n must be at least 1' USING ERRCODE = '22023',
            DETAIL = format('The value given was %s.', n);
    END IF;
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    -- the load of each shard: reads plus rows written, as last collected
    SELECT coalesce(jsonb_object_agg(s.shard, coalesce(l.load, 0)), '{}'),
           sum(coalesce(l.load, 0)) FILTER (WHERE s.state = 'active'),
           sum(s.weight) FILTER (WHERE s.state = 'active')
      INTO shard_load, total, fair
      FROM @extschema@.chash_shard s
      LEFT JOIN (SELECT x.shard, sum(x.reads + x.writes)::float8 AS load
                   FROM @extschema@.chash_load_slot x WHERE x.directory = $1 GROUP BY 1) l
        ON l.shard = s.shard
     WHERE s.directory = $1;
    IF coalesce(total, 0) = 0 OR coalesce(fair, 0) = 0 THEN
        RETURN;
    END IF;
    FOR c IN
        SELECT t.tenant, t.shard, (t.reads + t.writes)::float8 AS load
          FROM @extschema@.chash_load_tenant t
          JOIN @extschema@.chash_shard s ON s.directory = t.directory AND s.shard = t.shard
         WHERE t.directory = $1 AND t.reads IS NOT NULL
           AND (t.reads + t.writes) * fair > 0.5 * total * s.weight
           AND NOT EXISTS (SELECT FROM @extschema@.chash_override o
                            WHERE o.directory = t.directory AND o.tenant = t.tenant)
         ORDER BY t.reads + t.writes DESC, t.tenant COLLATE "C"
         LIMIT n
    LOOP
        tenant := c.tenant;
        shard := c.shard;
        load_share := c.load / nullif((shard_load ->> c.shard)::float8, 0);
        -- the active shard, other than its own, least loaded per weight
        -- once the tenant is there (ties: the lower name)
        SELECT s.shard INTO best
          FROM @extschema@.chash_shard s
         WHERE s.directory = $1 AND s.state = 'active' AND s.weight > 0 AND s.shard <> c.shard
         ORDER BY (coalesce((shard_load ->> s.shard)::float8, 0) + c.load) / s.weight,
                  s.shard COLLATE "C"
         LIMIT 1;
        suggested_shard := best;
        IF best IS NOT NULL THEN
            shard_load := shard_load
                || jsonb_build_object(best, coalesce((shard_load ->> best)::float8, 0) + c.load)
                || jsonb_build_object(c.shard, (shard_load ->> c.shard)::float8 - c.load);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_suggest_pins(text, int) IS
    'tenants whose collected load (reads plus rows written) alone exceeds half a fair shard''s, with their share of their shard''s load and the shard to pin them to';
