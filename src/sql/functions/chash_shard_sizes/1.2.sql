-- On a shard: the rows and bytes of each tenant of the directory's
-- registered tables held here (bytes as chash_measure_tenants counts
-- them).  With the caller's rights (docs/load.md, "Privileges"): it reads
-- the tenant tables, whose rows, casts and row-level security are their
-- owners' to decide, so it needs SELECT on each, and a policy that hides
-- rows from the caller hides them from the sizes too.
CREATE FUNCTION @extschema@.chash_shard_sizes(directory text)
    RETURNS TABLE (tenant text, slot int, rows bigint, bytes bigint)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    kt text;
    sc int;
    sm text;
    parts text[] := '{}';
    t record;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT d.key_type, d.slot_count, d.slot_method INTO kt, sc, sm
      FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    FOR t IN SELECT x.table_name, x.tenant_column FROM @extschema@.chash_table x
              WHERE x.directory = $1 AND to_regclass(x.table_name) IS NOT NULL
              ORDER BY x.table_name
    LOOP
        -- before the table is opened (and locked) by the query below
        IF NOT has_table_privilege(to_regclass(t.table_name), 'SELECT') THEN
            RAISE EXCEPTION 'permission denied to read the sizes of table %',
                    @extschema@.chash_message_text(t.table_name)
                USING ERRCODE = '42501',
                      DETAIL = pg_catalog.format('Directory "%s" registers it; chash_shard_sizes reads its rows with the privileges of role "%s".',
                                                 @extschema@.chash_message_text($1), current_user),
                      HINT = 'Grant SELECT on the registered tables to the role that reads the sizes (the role of the shard''s server connection string for chash_collect).';
        END IF;
        parts := parts || format(
            'SELECT @extschema@.chash_tenant_canonical(%L, (r.%I)::text) AS tenant,
                    pg_catalog.count(*) AS n, pg_catalog.sum(pg_catalog.pg_column_size(r.*)) AS b
               FROM %s r WHERE r.%I IS NOT NULL GROUP BY 1',
            kt, t.tenant_column, t.table_name, t.tenant_column);
    END LOOP;
    IF cardinality(parts) = 0 THEN
        RETURN;
    END IF;
    -- the slot from the directory's layout (chash_slot would route, and
    -- need the caller's grants on every routing table)
    RETURN QUERY EXECUTE format(
        'SELECT u.tenant,
                CASE $1 WHEN ''bigint'' THEN @extschema@.chash_tenant_slot(u.tenant::bigint, $2, $3)
                        WHEN ''uuid'' THEN @extschema@.chash_tenant_slot(u.tenant::uuid, $2, $3)
                        ELSE @extschema@.chash_tenant_slot(u.tenant, $2, $3) END,
                pg_catalog.sum(u.n)::bigint, pg_catalog.sum(u.b)::bigint
           FROM (%s) u GROUP BY u.tenant ORDER BY u.tenant',
        array_to_string(parts, ' UNION ALL ')) USING kt, sc, sm;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_sizes(text) IS
    'on a shard: rows and bytes of each tenant of a directory''s registered tables held here, with its slot';
