-- This database's own session_preload_libraries (not a role's), or NULL.
CREATE FUNCTION @extschema@.chash_database_preload() RETURNS text
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT substr(c, length('session_preload_libraries=') + 1)
      FROM pg_db_role_setting s, unnest(s.setconfig) c
     WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND s.setrole = 0 AND c LIKE 'session\_preload\_libraries=%'
$$;
COMMENT ON FUNCTION @extschema@.chash_database_preload() IS
    'internal: the session_preload_libraries setting of this database (ALTER DATABASE ... SET), or NULL';
