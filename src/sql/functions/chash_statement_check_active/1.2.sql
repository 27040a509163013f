-- Whether new sessions of this database run the statement check.
-- SECURITY DEFINER: chash_shard_status calls it as whoever reads the view,
-- and the helpers it calls are internal.
CREATE FUNCTION @extschema@.chash_statement_check_active() RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT @extschema@.chash_library_listed(current_setting('shared_preload_libraries'))
        OR @extschema@.chash_library_listed(@extschema@.chash_database_preload())
$$;
COMMENT ON FUNCTION @extschema@.chash_statement_check_active() IS
    'whether new sessions of this database load chash (shared_preload_libraries, or this database''s session_preload_libraries), so that the guard checks statements that name a tenant';
