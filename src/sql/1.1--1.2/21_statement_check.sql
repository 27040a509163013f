-- ---------------------------------------------------------------------------
-- The guard's statement check in every session of a joined shard
-- (docs/shards.md, "Statements that name a tenant"): it runs only in
-- sessions that loaded chash.  While this database is a shard of a
-- directory, its database setting session_preload_libraries names chash
-- (appended to what it held); when it leaves the last one, chash's entry
-- goes and the rest stays.  chash_shard_status.statement_check shows
-- whether new sessions load it.
-- ---------------------------------------------------------------------------

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

-- Whether a library list loads chash.
CREATE FUNCTION @extschema@.chash_library_listed(list text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT FROM unnest(@extschema@.chash_library_list(list)) e
                    WHERE e IN ('chash', '$libdir/chash', 'chash.so', '$libdir/chash.so'))
$$;
COMMENT ON FUNCTION @extschema@.chash_library_listed(text) IS
    'internal: whether a library list (shared_preload_libraries, session_preload_libraries) loads chash';

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

-- After a join or a leave: chash in this database's session_preload_libraries
-- while it is a shard of any directory; the leave of the last directory
-- removes the entry "chash" (one the DBA spelled otherwise stays).  A superuser joins and leaves;
-- anybody else (a restore of chash_shard_member) gets a warning.
CREATE FUNCTION @extschema@.chash_statement_check_follow() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    joined boolean := EXISTS (SELECT FROM @extschema@.chash_shard_member);
    current text := @extschema@.chash_database_preload();
    entries text[] := @extschema@.chash_library_list(current);
    wanted text[];
BEGIN
    IF joined AND NOT @extschema@.chash_library_listed(current) THEN
        wanted := entries || 'chash'::text;
    ELSIF NOT joined AND TG_OP = 'DELETE' AND 'chash' = ANY (entries) THEN
        wanted := array_remove(entries, 'chash');
    ELSE
        RETURN NULL;
    END IF;
    BEGIN
        IF cardinality(wanted) = 0 THEN
            EXECUTE format('ALTER DATABASE %I RESET session_preload_libraries', current_database());
        ELSE
            -- one literal per entry: a single one would be one library
            EXECUTE format('ALTER DATABASE %I SET session_preload_libraries = %s', current_database(),
                           (SELECT string_agg(quote_literal(e), ', ' ORDER BY n) FROM unnest(wanted) WITH ORDINALITY x(e, n)));
        END IF;
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE WARNING 'could not set session_preload_libraries of database "%": %', current_database(), SQLERRM
            USING HINT = 'A superuser sets it with ALTER DATABASE ... SET session_preload_libraries; without it, only sessions that load chash check statements that name a tenant.';
    END;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_statement_check_follow() IS
    'trigger: names chash in this database''s session_preload_libraries while it is a shard, and removes that entry when it leaves the last directory';
CREATE TRIGGER chash_statement_check_follow AFTER INSERT OR DELETE ON @extschema@.chash_shard_member
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_statement_check_follow();

-- chash_shard_status gains statement_check: its column in the view's last
-- definition (70_failover_state.sql).

-- A shard joined before 1.2 (an INSERT of nothing fires the trigger).
INSERT INTO @extschema@.chash_shard_member SELECT * FROM @extschema@.chash_shard_member WHERE false;
