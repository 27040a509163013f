CREATE OR REPLACE FUNCTION @extschema@.chash_add_table(directory text, table_name text, tenant_column text)
        RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rel regclass;
    parts text[];
BEGIN
    IF table_name IS NULL OR tenant_column IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN table_name IS NULL THEN 'table_name' ELSE 'tenant_column' END
            USING ERRCODE = '22004';
    END IF;
    -- not while a batch is in flight: the tables under its copy stay the same
    PERFORM @extschema@.chash_table_registration_check(directory);
    -- Where this database has the table too (it is also a shard), check it.
    BEGIN
        parts := parse_ident(table_name);
    EXCEPTION WHEN invalid_parameter_value THEN
        parts := NULL;
    END;
    IF cardinality(parts) = 2 THEN
        rel := to_regclass(quote_ident(parts[1]) || '.' || quote_ident(parts[2]));
    END IF;
    IF rel IS NOT NULL THEN
        IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = tenant_column
                       AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'column "%" of table % does not exist', @extschema@.chash_message_text(tenant_column), rel
                USING ERRCODE = '42703';
        END IF;
        IF NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = rel AND i.indisprimary) THEN
            RAISE EXCEPTION 'table % has no primary key', rel
                USING ERRCODE = '55000',
                      DETAIL = 'The mover identifies rows by their primary key.';
        END IF;
    END IF;
    INSERT INTO @extschema@.chash_table AS t (directory, table_name, tenant_column)
    VALUES (directory, table_name, tenant_column);
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'table "%" is already registered in directory "%"', @extschema@.chash_message_text(table_name), @extschema@.chash_message_text(directory)
        USING ERRCODE = '42710';
END
$$;
COMMENT ON FUNCTION @extschema@.chash_add_table(text, text, text) IS
    'registers a schema-qualified table whose rows belong to the directory''s tenants, by its tenant column';
