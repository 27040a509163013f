
-- Collecting the load statistics into the directory database (docs/load.md,
-- "Collecting"): chash_collect asks every shard through its server.

-- On a shard: the rows and bytes of each tenant of the directory's
-- registered tables held here (bytes as chash_measure_tenants counts
-- them).  SECURITY DEFINER: the collector's role on the shard reads no
-- tenant table, it gets sizes only.
CREATE FUNCTION @extschema@.chash_shard_sizes(directory text)
    RETURNS TABLE (tenant text, slot int, rows bigint, bytes bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    kt text;
    parts text[] := '{}';
    t record;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT d.key_type INTO kt FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    FOR t IN SELECT x.table_name, x.tenant_column FROM @extschema@.chash_table x
              WHERE x.directory = $1 AND to_regclass(x.table_name) IS NOT NULL
              ORDER BY x.table_name
    LOOP
        parts := parts || format(
            'SELECT @extschema@.chash_tenant_canonical(%L, (r.%I)::text) AS tenant,
                    pg_catalog.count(*) AS n, pg_catalog.sum(pg_catalog.pg_column_size(r.*)) AS b
               FROM %s r WHERE r.%I IS NOT NULL GROUP BY 1',
            kt, t.tenant_column, t.table_name, t.tenant_column);
    END LOOP;
    IF cardinality(parts) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT u.tenant, @extschema@.chash_slot($1, u.tenant), pg_catalog.sum(u.n)::bigint, pg_catalog.sum(u.b)::bigint
           FROM (%s) u GROUP BY u.tenant ORDER BY u.tenant',
        array_to_string(parts, ' UNION ALL ')) USING $1;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_sizes(text) IS
    'on a shard: rows and bytes of each tenant of a directory''s registered tables held here, with its slot';

CREATE FUNCTION @extschema@.chash_shard_fetch(server text, directory text)
    RETURNS TABLE (kind text, slot int, tenant text, reads bigint, writes bigint, rows bigint,
                   exec_time float8, score float8, since timestamptz, bytes bigint)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'chash_shard_fetch';
COMMENT ON FUNCTION @extschema@.chash_shard_fetch(text, text) IS
    'reads a shard''s slot and tenant statistics and tenant sizes of a directory through libpq, within chash.collect_timeout (for chash_collect)';

CREATE TABLE @extschema@.chash_load_slot (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    shard text NOT NULL,
    slot int NOT NULL,
    reads bigint NOT NULL DEFAULT 0,
    writes bigint NOT NULL DEFAULT 0,
    rows bigint NOT NULL DEFAULT 0,
    exec_time float8 NOT NULL DEFAULT 0,
    since timestamptz,
    collected_at timestamptz NOT NULL,
    PRIMARY KEY (directory, shard, slot)
);
COMMENT ON TABLE @extschema@.chash_load_slot IS
    'load statistics of each slot as chash_collect last read them from each shard';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_load_slot', '');

CREATE TABLE @extschema@.chash_load_tenant (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    shard text NOT NULL,
    tenant text NOT NULL,
    slot int NOT NULL,
    reads bigint,
    writes bigint,
    rows bigint,
    exec_time float8,
    score float8,
    stored_rows bigint,
    bytes bigint,
    collected_at timestamptz NOT NULL,
    PRIMARY KEY (directory, shard, tenant)
);
COMMENT ON TABLE @extschema@.chash_load_tenant IS
    'each tenant as chash_collect last read it from each shard: its statistics if it is among the shard''s top tenants, its stored rows and bytes';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_load_tenant', '');

-- Per directory, shard and slot: the load counted and the bytes stored.
CREATE VIEW @extschema@.chash_load WITH (security_invoker = true) AS
WITH sized AS (
    SELECT t.directory, t.shard, t.slot, count(*) AS tenants,
           sum(t.stored_rows)::bigint AS stored_rows, sum(t.bytes)::bigint AS bytes,
           max(t.collected_at) AS collected_at
    FROM @extschema@.chash_load_tenant t WHERE t.bytes IS NOT NULL
    GROUP BY 1, 2, 3
)
SELECT coalesce(s.directory, z.directory) AS directory,
       coalesce(s.shard, z.shard) AS shard,
       coalesce(s.slot, z.slot) AS slot,
       coalesce(s.reads, 0) AS reads,
       coalesce(s.writes, 0) AS writes,
       coalesce(s.rows, 0) AS rows,
       coalesce(s.exec_time, 0) AS exec_time,
       coalesce(z.tenants, 0) AS tenants,
       coalesce(z.stored_rows, 0) AS stored_rows,
       coalesce(z.bytes, 0) AS bytes,
       s.since,
       coalesce(s.collected_at, z.collected_at) AS collected_at
FROM @extschema@.chash_load_slot s
FULL JOIN sized z ON z.directory = s.directory AND z.shard = s.shard AND z.slot = s.slot;
COMMENT ON VIEW @extschema@.chash_load IS
    'per directory, shard and slot: statements that read, rows written, rows, executor time (ms) counted there, and the tenants, rows and bytes stored, as chash_collect last read them';

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
