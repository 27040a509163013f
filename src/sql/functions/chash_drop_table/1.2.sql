CREATE OR REPLACE FUNCTION @extschema@.chash_drop_table(directory text, table_name text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parts text[];
    canonical text;
BEGIN
    IF table_name IS NULL THEN
        RAISE EXCEPTION 'table_name must not be null' USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@.chash_table_registration_check(directory);
    BEGIN
        parts := parse_ident(table_name);
        canonical := quote_ident(parts[1]) || '.' || quote_ident(parts[2]);
    EXCEPTION WHEN invalid_parameter_value THEN
        canonical := table_name;
    END;
    DELETE FROM @extschema@.chash_table t
    WHERE t.directory = chash_drop_table.directory AND t.table_name = canonical;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table "%" is not registered in directory "%"', @extschema@.chash_message_text(table_name), @extschema@.chash_message_text(directory)
            USING ERRCODE = '42704';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_drop_table(text, text) IS
    'unregisters a table of the directory (its rows stay where they are)';
