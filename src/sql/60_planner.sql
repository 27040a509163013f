-- ---------------------------------------------------------------------------
-- The rebalance planner, whales, tenant measurement (SPEC 3.1)
--
-- chash_plan_rebalance is a dry run: it reads the committed directory and
-- returns the moves; chash_migration_start (70_migration) saves them.
-- docs/planner.md explains the plans and proves that every prefix of one
-- is an improvement.  Functions run with the caller's rights; each pins
-- search_path only so that no object of the caller's can stand in for a
-- built-in operator or function.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_plan_rebalance(directory text, strategy text DEFAULT 'slots',
                                                 max_moves int DEFAULT NULL)
    RETURNS TABLE (step int, slot int, from_shard text, to_shard text, tenants bigint, bytes bigint)
    AS 'MODULE_PATHNAME', 'chash_plan_rebalance'
    LANGUAGE C STABLE
    SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.chash_plan_rebalance(text, text, int) IS
    'dry run of a rebalance: the minimal slot moves (''slots'') or improving moves by measured bytes (''bytes''), in order';

-- A whale is a tenant larger than factor times a shard's fair share of all
-- measured bytes, the fair share being all bytes / active shards.
CREATE FUNCTION @extschema@.chash_whales(directory text, factor float8 DEFAULT 0.5)
    RETURNS TABLE (tenant text, bytes bigint, shard text, share float8)
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    total numeric;
    active bigint;
BEGIN
    IF NOT (factor > 0 AND factor < 'Infinity') THEN
        RAISE EXCEPTION 'factor must be positive and finite'
            USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given was %s.', factor);
    END IF;
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    SELECT pg_catalog.sum(t.bytes) INTO total
      FROM @extschema@.chash_tenant_size t WHERE t.directory = $1;
    SELECT pg_catalog.count(*) INTO active
      FROM @extschema@.chash_shard s WHERE s.directory = $1 AND s.state = 'active';
    IF total IS NULL OR total = 0 OR active = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT t.tenant, t.bytes, @extschema@.chash_route($1, t.tenant),
               (t.bytes / total)::float8
          FROM @extschema@.chash_tenant_size t
         WHERE t.directory = $1 AND t.bytes > $2::numeric * total / active
         ORDER BY t.bytes DESC, t.tenant COLLATE "C";
END
$$;
COMMENT ON FUNCTION @extschema@.chash_whales(text, float8) IS
    'tenants larger than factor times a shard''s fair share of all measured bytes: candidates to pin';

-- Bytes are pg_column_size of each row (its stored, possibly compressed,
-- size without the tuple header), summed per tenant: a measure of what
-- moving the tenant copies.  Tenants are canonicalised through the
-- directory's key type, so a bigint directory measured from a text column
-- stores '7' for '007'.  Tenants that no longer have rows keep their old
-- size; delete them from chash_tenant_size when they are gone.
CREATE FUNCTION @extschema@.chash_measure_tenants(directory text, rel regclass, tenant_column name)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    kt text;
    canonical text;
    measured bigint;
BEGIN
    SELECT d.key_type INTO kt FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    PERFORM FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = $2 AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', $3, $2::text
            USING ERRCODE = '42703';
    END IF;
    canonical := pg_catalog.format('@extschema@.chash_tenant_canonical(%L, (r.%I)::text)', kt, $3);
    EXECUTE pg_catalog.format(
        'INSERT INTO @extschema@.chash_tenant_size AS ts (directory, tenant, bytes, rows, measured_at)
         SELECT $1, %s, pg_catalog.sum(pg_catalog.pg_column_size(r.*))::bigint,
                pg_catalog.count(*), pg_catalog.now()
           FROM %s r WHERE r.%I IS NOT NULL GROUP BY 2
         ON CONFLICT (directory, tenant) DO UPDATE
            SET bytes = excluded.bytes, rows = excluded.rows, measured_at = excluded.measured_at',
        canonical, $2, $3)
        USING $1;
    GET DIAGNOSTICS measured = ROW_COUNT;
    RETURN measured;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_measure_tenants(text, regclass, name) IS
    'fills chash_tenant_size with rows and bytes per tenant of a table; returns the number of tenants measured';
