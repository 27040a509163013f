CREATE FUNCTION @extschema@.chash_decoding_filter_create(slot_name text, directory text,
                                                         slots int[] DEFAULT NULL, tenants text[] DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_variable
DECLARE
    d record;
    bad int;
    canonical text[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['slot_name', 'directory'], ARRAY[$1 IS NULL, $2 IS NULL]);
    IF $3 IS NULL AND $4 IS NULL THEN
        RAISE EXCEPTION 'a decoding filter needs slots or tenants'
            USING ERRCODE = '22023', HINT = 'Give the slots of the batch, its tenants, or both.';
    END IF;
    IF array_position($3, NULL) IS NOT NULL OR array_position($4, NULL) IS NOT NULL THEN
        RAISE EXCEPTION '% must not contain nulls', CASE WHEN array_position($3, NULL) IS NOT NULL
                                                         THEN 'slots' ELSE 'tenants' END
            USING ERRCODE = '22004';
    END IF;
    SELECT x.slot_count, x.slot_method, x.key_type INTO d
      FROM @extschema@.chash_directory x WHERE x.name = $2;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $2 USING ERRCODE = '42704';
    END IF;
    SELECT s INTO bad FROM pg_catalog.unnest($3) s WHERE s < 0 OR s >= d.slot_count LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'slot % is out of range for directory "%"', bad, $2
            USING ERRCODE = '22023', DETAIL = pg_catalog.format('Its slots are 0 .. %s.', d.slot_count - 1);
    END IF;
    -- tenants as the plugin compares them: canonical (22P02 when not of the key type)
    SELECT array_agg(@extschema@.chash_tenant_canonical(d.key_type, t)) INTO canonical
      FROM pg_catalog.unnest($4) t;
    -- registered again: replaced (ON CONFLICT is not allowed on a catalog table)
    DELETE FROM @extschema@.chash_decoding_filter f WHERE f.slot_name = $1;
    INSERT INTO @extschema@.chash_decoding_filter AS f
           (slot_name, directory, slot_count, slot_method, key_type, slots, tenants, except_tenants,
            tables, tenant_columns)
    SELECT $1, $2, d.slot_count, d.slot_method, d.key_type, $3, canonical,
           -- a slot's pinned tenants do not move with it
           (SELECT array_agg(o.tenant ORDER BY o.tenant) FROM @extschema@.chash_override o
             WHERE o.directory = $2 AND @extschema@.chash_slot($2, o.tenant) = ANY ($3)
               AND NOT (o.tenant = ANY (COALESCE(canonical, '{}')))),
           COALESCE(array_agg(pg_catalog.to_regclass(t.table_name)::oid ORDER BY t.table_name)
                        FILTER (WHERE pg_catalog.to_regclass(t.table_name) IS NOT NULL), '{}'),
           COALESCE(array_agg(t.tenant_column ORDER BY t.table_name)
                        FILTER (WHERE pg_catalog.to_regclass(t.table_name) IS NOT NULL), '{}')
      FROM (SELECT 1) one
      LEFT JOIN @extschema@.chash_table t ON t.directory = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_decoding_filter_create(text, text, int[], text[]) IS
    'registers what logical slot slot_name (plugin chash) passes: rows of the directory''s registered tables here whose tenant is one of tenants or routes by one of slots (pinned tenants excepted); before the slot is created';
