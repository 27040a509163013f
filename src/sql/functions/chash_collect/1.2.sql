CREATE FUNCTION @extschema@.chash_collect(directory text)
    RETURNS TABLE (shard text, ok bool, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
    at timestamptz;
    n_slots bigint;
    n_tenants bigint;
    why text;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    FOR s IN SELECT x.shard, x.server FROM @extschema@.chash_shard x
              WHERE x.directory = $1 AND x.state <> 'retired'
              ORDER BY x.shard COLLATE "C"
    LOOP
        shard := s.shard;
        IF s.server IS NULL THEN
            ok := false;
            detail := 'The shard has no server (chash_set_shard(..., server => ...)).';
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- one shard's failure is its row of the result; a cancel is not
        -- caught (query_canceled is not among "others")
        BEGIN
            at := clock_timestamp();
            DELETE FROM @extschema@.chash_load_slot l WHERE l.directory = $1 AND l.shard = s.shard;
            DELETE FROM @extschema@.chash_load_tenant l WHERE l.directory = $1 AND l.shard = s.shard;
            WITH f AS MATERIALIZED (
                SELECT * FROM @extschema@.chash_shard_fetch(s.server, $1)
            ), slots AS (
                INSERT INTO @extschema@.chash_load_slot
                SELECT $1, s.shard, f.slot, f.reads, f.writes, f.rows, f.exec_time, f.since, at
                  FROM f WHERE f.kind = 'slot'
                RETURNING 1
            ), tenants AS (
                INSERT INTO @extschema@.chash_load_tenant
                SELECT $1, s.shard, coalesce(t.tenant, z.tenant), coalesce(z.slot, t.slot),
                       t.reads, t.writes, t.rows, t.exec_time, t.score, z.rows, z.bytes, at
                  FROM (SELECT * FROM f WHERE f.kind = 'tenant') t
                  FULL JOIN (SELECT * FROM f WHERE f.kind = 'size') z ON z.tenant = t.tenant
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM slots), (SELECT count(*) FROM tenants) INTO n_slots, n_tenants;
            ok := true;
            detail := format('%s slots and %s tenants', n_slots, n_tenants);
        EXCEPTION WHEN others THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL;
            ok := false;
            detail := SQLERRM || coalesce(': ' || nullif(why, ''), '');
        END;
        RETURN NEXT;
    END LOOP;
    -- chash_tenant_size holds what the shards hold: each tenant as its
    -- owner (by the committed directory) last reported it
    INSERT INTO @extschema@.chash_tenant_size AS ts (directory, tenant, bytes, rows, measured_at)
    SELECT l.directory, l.tenant, l.bytes, l.stored_rows, l.collected_at
      FROM @extschema@.chash_load_tenant l
     WHERE l.directory = $1 AND l.bytes IS NOT NULL
       AND l.shard = @extschema@.chash_route($1, l.tenant)
    ON CONFLICT ON CONSTRAINT chash_tenant_size_pkey DO UPDATE
       SET bytes = excluded.bytes, rows = excluded.rows, measured_at = excluded.measured_at;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_collect(text) IS
    'reads every shard''s load statistics and tenant sizes through its server into chash_load_slot and chash_load_tenant (view chash_load) and fills chash_tenant_size; a shard that fails is reported, not fatal';
