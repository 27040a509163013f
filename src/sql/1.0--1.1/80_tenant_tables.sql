-- ---------------------------------------------------------------------------
-- Tenant tables (docs/shards.md): the tables that hold a directory's
-- tenants' rows on every shard, and the slot of a tenant for indexes.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_tenant_slot(tenant text, slot_count int, slot_method text DEFAULT 'xxh64')
        RETURNS int
    AS 'MODULE_PATHNAME', 'chash_tenant_slot_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_tenant_slot(text, int, text) IS
    'the slot of a text tenant in a directory with this slot count and method: chash_slot without a directory, for expression indexes on shards';
CREATE FUNCTION @extschema@.chash_tenant_slot(tenant bigint, slot_count int, slot_method text DEFAULT 'xxh64')
        RETURNS int
    AS 'MODULE_PATHNAME', 'chash_tenant_slot_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_tenant_slot(bigint, int, text) IS
    'the slot of a bigint tenant in a directory with this slot count and method: chash_slot without a directory, for expression indexes on shards';
CREATE FUNCTION @extschema@.chash_tenant_slot(tenant uuid, slot_count int, slot_method text DEFAULT 'xxh64')
        RETURNS int
    AS 'MODULE_PATHNAME', 'chash_tenant_slot_uuid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_tenant_slot(uuid, int, text) IS
    'the slot of a uuid tenant in a directory with this slot count and method: chash_slot without a directory, for expression indexes on shards';

CREATE TABLE @extschema@.chash_table (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    table_name text NOT NULL,
    tenant_column text NOT NULL,
    PRIMARY KEY (directory, table_name)
);
COMMENT ON TABLE @extschema@.chash_table IS
    'the tables (schema-qualified, as on every shard) that hold the rows of a directory''s tenants, and their tenant column';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_table', '');

-- Names are stored in one spelling, so that a table is registered once:
-- table_name as quote_ident(schema) || '.' || quote_ident(table), the
-- column as its name in the catalog (no quotes).
CREATE FUNCTION @extschema@.chash_table_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parts text[];
BEGIN
    BEGIN
        parts := parse_ident(NEW.table_name);
    EXCEPTION WHEN invalid_parameter_value THEN
        parts := NULL;
    END;
    IF cardinality(parts) IS DISTINCT FROM 2 THEN
        RAISE EXCEPTION 'invalid table name "%"', @extschema@.chash_message_text(NEW.table_name)
            USING ERRCODE = '22023',
                  DETAIL = 'A registered table is named as schema.table, the same on every shard.',
                  HINT = 'Write it schema-qualified, e.g. public.accounts.';
    END IF;
    NEW.table_name := quote_ident(parts[1]) || '.' || quote_ident(parts[2]);
    IF NEW.tenant_column = '' OR octet_length(NEW.tenant_column) > 63 THEN
        RAISE EXCEPTION 'invalid tenant column "%"', @extschema@.chash_message_text(NEW.tenant_column)
            USING ERRCODE = '22023',
                  DETAIL = 'A column name is 1 to 63 bytes long.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_table_guard() IS
    'trigger: stores a registered table''s name schema-qualified in one spelling and checks its tenant column name';
CREATE TRIGGER chash_table_guard BEFORE INSERT OR UPDATE ON @extschema@.chash_table
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_table_guard();

-- Registered tables are part of the directory: a change bumps its version
-- (so shards and clients see it) like any other directory change.
CREATE TRIGGER chash_table_bump_insert AFTER INSERT ON @extschema@.chash_table
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
CREATE TRIGGER chash_table_bump_update AFTER UPDATE ON @extschema@.chash_table
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
CREATE TRIGGER chash_table_bump_delete AFTER DELETE ON @extschema@.chash_table
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
CREATE TRIGGER chash_table_bump_truncate AFTER TRUNCATE ON @extschema@.chash_table
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
CREATE TRIGGER chash_table_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON @extschema@.chash_table
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_invalidate();

CREATE FUNCTION @extschema@.chash_add_table(directory text, table_name text, tenant_column text)
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
    PERFORM @extschema@.chash_directory_row(directory);
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

CREATE FUNCTION @extschema@.chash_drop_table(directory text, table_name text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parts text[];
    canonical text;
BEGIN
    IF table_name IS NULL THEN
        RAISE EXCEPTION 'table_name must not be null' USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@.chash_directory_row(directory);
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
