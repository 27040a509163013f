-- Replaces the rows of a directory table that match scope (a condition on
-- alias t) with rows (a jsonb array of them), changing only rows that
-- differ: rows compare by their text, which is exact for every column type
-- of these tables.  The caller decides which triggers fire.
CREATE FUNCTION @extschema@.chash_replica_replace(tab regclass, rows jsonb, scope text DEFAULT 'true')
        RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    changed bigint;
    n bigint;
BEGIN
    IF tab IS NULL OR rows IS NULL OR scope IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN tab IS NULL THEN 'tab' WHEN rows IS NULL THEN 'rows' ELSE 'scope' END
            USING ERRCODE = '22004';
    END IF;
    EXECUTE format('CREATE TEMP TABLE chash_incoming ON COMMIT DROP AS '
                   'SELECT * FROM pg_catalog.jsonb_populate_recordset(NULL::%s, $1)', tab)
        USING rows;
    EXECUTE format('DELETE FROM %s t WHERE (%s) AND NOT (t::text IN (SELECT i::text FROM chash_incoming i))',
                   tab, scope);
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXECUTE format('INSERT INTO %s SELECT i.* FROM chash_incoming i '
                   'WHERE NOT (i::text IN (SELECT t::text FROM %s t))', tab, tab);
    GET DIAGNOSTICS n = ROW_COUNT;
    DROP TABLE chash_incoming;
    RETURN changed + n;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_replace(regclass, jsonb, text) IS
    'internal: makes the rows of a directory table within scope equal to the given ones, touching only those that differ';
