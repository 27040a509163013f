-- ---------------------------------------------------------------------------
-- Tenant measurement, 1.1 (docs/planner.md)
--
-- chash_measure_tenants changes chash_tenant_size, so a NULL argument is
-- 22004 (05_arguments.sql); 1.0 was STRICT and returned NULL.  The
-- planner's dry run and chash_whales are reads and keep NULL in, no rows
-- out.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION @extschema@.chash_measure_tenants(directory text, rel regclass, tenant_column name)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    kt text;
    canonical text;
    measured bigint;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'rel', 'tenant_column'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
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
