-- Whether a library list loads chash.
CREATE FUNCTION @extschema@.chash_library_listed(list text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT FROM unnest(@extschema@.chash_library_list(list)) e
                    WHERE e IN ('chash', '$libdir/chash', 'chash.so', '$libdir/chash.so'))
$$;
COMMENT ON FUNCTION @extschema@.chash_library_listed(text) IS
    'internal: whether a library list (shared_preload_libraries, session_preload_libraries) loads chash';
