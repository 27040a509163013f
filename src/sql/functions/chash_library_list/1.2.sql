-- The entries of a library list as a setting holds it (comma-separated,
-- an entry double-quoted where it needs to be), unquoted.
CREATE FUNCTION @extschema@.chash_library_list(list text) RETURNS text[]
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(array_agg(e ORDER BY n) FILTER (WHERE e <> ''), '{}')
      FROM unnest(string_to_array(coalesce(list, ''), ',')) WITH ORDINALITY AS x(raw, n),
           LATERAL (SELECT replace(btrim(btrim(raw, ' '), '"'), '""', '"') AS e) y
$$;
COMMENT ON FUNCTION @extschema@.chash_library_list(text) IS
    'internal: the entries of a comma-separated library list, unquoted';
